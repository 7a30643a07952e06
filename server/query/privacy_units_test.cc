#include "server/query/privacy_units.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace dpq::query {
namespace {

int64_t Eps(double e) { return *EpsilonToUnits(e, "epsilon"); }

TEST(PrivacyUnitsTest, DecimalChargesAddUpExactly) {
  EXPECT_EQ(Eps(0.1) + Eps(0.1) + Eps(0.1), Eps(0.3));
  EXPECT_EQ(Eps(0.1), 100000000000);
  EXPECT_EQ(*DeltaToUnits(1e-6, "delta"), 1000000000000);
  EXPECT_EQ(*DeltaToUnits(1e-7, "delta") * 10, *DeltaToUnits(1e-6, "delta"));
}

TEST(PrivacyUnitsTest, MechanismEpsilonNeverExceedsTheDecimalCharge) {
  // The double nearest 0.1 is 0.1000000000000000055..., above the decimal 0.1: step down one.
  EXPECT_EQ(MechanismEpsilon(Eps(0.1)), std::nextafter(0.1, 0.0));
  // The double nearest 0.3 is 0.2999999999999999888..., below 0.3: it is the answer itself.
  EXPECT_EQ(MechanismEpsilon(Eps(0.3)), 0.3);
  EXPECT_EQ(MechanismEpsilon(Eps(0.5)), 0.5);  // exact
  EXPECT_EQ(MechanismEpsilon(Eps(1e6)), 1e6);
  // 1e-6 as a double is 9.99999999999999954748e-07 < 1e-6.
  EXPECT_EQ(MechanismDelta(*DeltaToUnits(1e-6, "delta")), 1e-6);
  EXPECT_EQ(MechanismDelta(0), 0.0);
}

TEST(PrivacyUnitsTest, LargestDoubleAtMostIsExactForIntegersAndTenths) {
  for (int64_t u = 0; u < 2000; ++u) {
    EXPECT_EQ(internal::LargestDoubleAtMost(u, 0), static_cast<double>(u));
  }
  // u/10 for u not a multiple of 5 is not a double; the result must be just below the nearest one
  // when that one is above u/10, checked with exact integer arithmetic on (10 d - u).
  for (int64_t u = 1; u < 2000; ++u) {
    const double d = internal::LargestDoubleAtMost(u, 1);
    EXPECT_TRUE(internal::TimesPow10AtMost(d, 1, u)) << u;
    EXPECT_FALSE(internal::TimesPow10AtMost(std::nextafter(d, 1e300), 1, u)) << u;
    EXPECT_NEAR(d * 10, static_cast<double>(u), 1e-12 * u);
  }
}

TEST(PrivacyUnitsTest, TimesPow10AtMostHandlesExtremes) {
  EXPECT_TRUE(internal::TimesPow10AtMost(0.0, 18, 0));
  EXPECT_FALSE(internal::TimesPow10AtMost(1e-300, 18, 0));
  EXPECT_TRUE(internal::TimesPow10AtMost(1e-300, 18, 1));
  EXPECT_FALSE(internal::TimesPow10AtMost(1e300, 0, std::numeric_limits<int64_t>::max()));
  EXPECT_TRUE(internal::TimesPow10AtMost(0.5, 0, 1));
  EXPECT_FALSE(internal::TimesPow10AtMost(1.0, 0, 0));
}

TEST(PrivacyUnitsTest, RejectsOutOfRangeEpsilonNamingTheField) {
  for (double bad : {0.0, -1.0, 1e-13, 2e6, std::numeric_limits<double>::quiet_NaN(),
                     std::numeric_limits<double>::infinity()}) {
    auto r = EpsilonToUnits(bad, "epsilon");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(r.status().message()).find("epsilon"), std::string::npos);
  }
}

TEST(PrivacyUnitsTest, RejectsOutOfRangeDelta) {
  for (double bad : {1.0, -0.1, 1e-19, std::numeric_limits<double>::quiet_NaN()}) {
    EXPECT_EQ(DeltaToUnits(bad, "delta").status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
  }
  EXPECT_EQ(*DeltaToUnits(0.0, "delta"), 0);
}

TEST(PrivacyUnitsTest, DisplayValuesRoundTripTheDecimal) {
  EXPECT_EQ(EpsilonFromUnits(Eps(0.3)), 0.3);
  EXPECT_EQ(DeltaFromUnits(*DeltaToUnits(1e-6, "delta")), 1e-6);
}

}  // namespace
}  // namespace dpq::query
