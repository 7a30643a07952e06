#include "server/query/sensitivity.h"

#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dpq::query {
namespace {

using ::testing::HasSubstr;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kMax = std::numeric_limits<double>::max();

// Checks an error is INVALID_ARGUMENT and its message names `field`.
void ExpectInvalidNaming(const absl::StatusOr<double>& result, const std::string& field) {
  ASSERT_FALSE(result.ok()) << "expected an error naming " << field << ", got " << *result;
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument) << result.status();
  EXPECT_THAT(std::string(result.status().message()), HasSubstr(field));
}

// --- count ---

TEST(CountSensitivityTest, EqualsMaxContributions) {
  for (int k : {1, 2, 7, 1000000}) {
    absl::StatusOr<double> s = CountSensitivity(k);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(*s, static_cast<double>(k));
  }
}

TEST(CountSensitivityTest, RejectsZeroContributions) {
  ExpectInvalidNaming(CountSensitivity(0), "max_contributions");
}

TEST(CountSensitivityTest, RejectsNegativeContributions) {
  ExpectInvalidNaming(CountSensitivity(-1), "max_contributions");
  ExpectInvalidNaming(CountSensitivity(std::numeric_limits<int>::min()), "max_contributions");
}

// --- sum ---

TEST(SumSensitivityTest, IsKTimesUpperForNonNegativeRange) {
  absl::StatusOr<double> s = SumSensitivity(3, 0, 10);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_DOUBLE_EQ(*s, 30);
}

TEST(SumSensitivityTest, UsesLargestMagnitudeForNegativeRange) {
  // [-10, -2]: the largest |x| is 10, at the lower bound.
  absl::StatusOr<double> s = SumSensitivity(2, -10, -2);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_DOUBLE_EQ(*s, 20);
}

TEST(SumSensitivityTest, UsesLargestMagnitudeForRangeStraddlingZero) {
  absl::StatusOr<double> lower_dominates = SumSensitivity(4, -7, 3);
  ASSERT_TRUE(lower_dominates.ok()) << lower_dominates.status();
  EXPECT_DOUBLE_EQ(*lower_dominates, 28);

  absl::StatusOr<double> upper_dominates = SumSensitivity(4, -3, 7);
  ASSERT_TRUE(upper_dominates.ok()) << upper_dominates.status();
  EXPECT_DOUBLE_EQ(*upper_dominates, 28);
}

TEST(SumSensitivityTest, PositiveRangeAwayFromZeroUsesUpper) {
  absl::StatusOr<double> s = SumSensitivity(1, 5, 6);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_DOUBLE_EQ(*s, 6);
}

TEST(SumSensitivityTest, RejectsZeroContributions) {
  ExpectInvalidNaming(SumSensitivity(0, 0, 1), "max_contributions");
}

TEST(SumSensitivityTest, RejectsNegativeContributions) {
  ExpectInvalidNaming(SumSensitivity(-5, 0, 1), "max_contributions");
}

TEST(SumSensitivityTest, RejectsNanLower) {
  ExpectInvalidNaming(SumSensitivity(1, kNaN, 1), "lower");
}

TEST(SumSensitivityTest, RejectsNanUpper) {
  ExpectInvalidNaming(SumSensitivity(1, 0, kNaN), "upper");
}

TEST(SumSensitivityTest, RejectsInfiniteLower) {
  ExpectInvalidNaming(SumSensitivity(1, -kInf, 1), "lower");
}

TEST(SumSensitivityTest, RejectsInfiniteUpper) {
  ExpectInvalidNaming(SumSensitivity(1, 0, kInf), "upper");
}

TEST(SumSensitivityTest, RejectsLowerEqualToUpper) {
  absl::StatusOr<double> s = SumSensitivity(1, 2, 2);
  ExpectInvalidNaming(s, "lower");
  ExpectInvalidNaming(s, "upper");
}

TEST(SumSensitivityTest, RejectsLowerAboveUpper) {
  absl::StatusOr<double> s = SumSensitivity(1, 3, -3);
  ExpectInvalidNaming(s, "lower");
  ExpectInvalidNaming(s, "upper");
}

TEST(SumSensitivityTest, RejectsOverflowInsteadOfReturningInfinity) {
  // 1e303 * 1e6 = 1e309 > DBL_MAX.
  absl::StatusOr<double> s = SumSensitivity(1000000, -1e303, 1e303);
  ASSERT_FALSE(s.ok()) << "got sensitivity " << *s;
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("bounds"));
}

TEST(SumSensitivityTest, RejectsOverflowAtDoubleMaxWithTwoContributions) {
  absl::StatusOr<double> s = SumSensitivity(2, 0, kMax);
  ASSERT_FALSE(s.ok()) << "got sensitivity " << *s;
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SumSensitivityTest, AcceptsDoubleMaxWithOneContribution) {
  absl::StatusOr<double> s = SumSensitivity(1, -kMax, kMax);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(*s, kMax);
  EXPECT_TRUE(std::isfinite(*s));
}

TEST(SumSensitivityTest, NeverReturnsNonFiniteNearTheLimit) {
  for (int k : {1, 2, 10, 1000, 1000000}) {
    for (double b : {1e300, 1e303, 1e305, 1e307, 1e308, kMax}) {
      absl::StatusOr<double> s = SumSensitivity(k, -b, b);
      if (s.ok()) {
        EXPECT_TRUE(std::isfinite(*s)) << "k=" << k << " b=" << b;
      } else {
        EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
      }
    }
  }
}

// --- centred sum ---

TEST(CenteredSumSensitivityTest, IsKTimesHalfWidth) {
  absl::StatusOr<double> s = CenteredSumSensitivity(3, 0, 10);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_DOUBLE_EQ(*s, 15);
}

TEST(CenteredSumSensitivityTest, IndependentOfWhereTheRangeSits) {
  for (double shift : {-1e6, -12.5, 0.0, 3.0, 1e6}) {
    absl::StatusOr<double> s = CenteredSumSensitivity(2, shift - 4, shift + 4);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_DOUBLE_EQ(*s, 8) << "shift=" << shift;
  }
}

TEST(CenteredSumSensitivityTest, IsHalfThePlainSumForRangeStartingAtZero) {
  absl::StatusOr<double> centred = CenteredSumSensitivity(5, 0, 6);
  absl::StatusOr<double> plain = SumSensitivity(5, 0, 6);
  ASSERT_TRUE(centred.ok() && plain.ok());
  EXPECT_DOUBLE_EQ(*centred, 15);
  EXPECT_DOUBLE_EQ(*centred * 2, *plain);
}

// For [-a, a] both are k * a: centring gains nothing when the range is already centred on zero
// (the header comment in sensitivity.h claims the opposite).
TEST(CenteredSumSensitivityTest, EqualsThePlainSumForSymmetricRange) {
  absl::StatusOr<double> centred = CenteredSumSensitivity(5, -6, 6);
  absl::StatusOr<double> plain = SumSensitivity(5, -6, 6);
  ASSERT_TRUE(centred.ok() && plain.ok());
  EXPECT_DOUBLE_EQ(*centred, 30);
  EXPECT_DOUBLE_EQ(*centred, *plain);
}

TEST(CenteredSumSensitivityTest, NeverExceedsThePlainSum) {
  for (auto [lower, upper] :
       {std::pair<double, double>{-10, -2}, {-7, 3}, {-3, 7}, {0, 1}, {5, 6}}) {
    absl::StatusOr<double> centred = CenteredSumSensitivity(3, lower, upper);
    absl::StatusOr<double> plain = SumSensitivity(3, lower, upper);
    ASSERT_TRUE(centred.ok() && plain.ok());
    EXPECT_LE(*centred, *plain) << "[" << lower << ", " << upper << "]";
  }
}

TEST(CenteredSumSensitivityTest, NegativeRange) {
  absl::StatusOr<double> s = CenteredSumSensitivity(1, -10, -2);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_DOUBLE_EQ(*s, 4);
}

TEST(CenteredSumSensitivityTest, RejectsZeroContributions) {
  ExpectInvalidNaming(CenteredSumSensitivity(0, 0, 1), "max_contributions");
}

TEST(CenteredSumSensitivityTest, RejectsNanOrInfiniteBounds) {
  ExpectInvalidNaming(CenteredSumSensitivity(1, kNaN, 1), "lower");
  ExpectInvalidNaming(CenteredSumSensitivity(1, 0, kNaN), "upper");
  ExpectInvalidNaming(CenteredSumSensitivity(1, -kInf, 1), "lower");
  ExpectInvalidNaming(CenteredSumSensitivity(1, 0, kInf), "upper");
}

TEST(CenteredSumSensitivityTest, RejectsLowerNotBelowUpper) {
  ExpectInvalidNaming(CenteredSumSensitivity(1, 1, 1), "lower");
  ExpectInvalidNaming(CenteredSumSensitivity(1, 2, 1), "upper");
}

TEST(CenteredSumSensitivityTest, FullDoubleRangeDoesNotOverflowWithOneContribution) {
  // upper - lower would overflow to inf; halving first keeps it at DBL_MAX.
  absl::StatusOr<double> s = CenteredSumSensitivity(1, -kMax, kMax);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(*s, kMax);
}

TEST(CenteredSumSensitivityTest, RejectsOverflowInsteadOfReturningInfinity) {
  absl::StatusOr<double> s = CenteredSumSensitivity(2, -kMax, kMax);
  ASSERT_FALSE(s.ok()) << "got sensitivity " << *s;
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);

  absl::StatusOr<double> large_k = CenteredSumSensitivity(1000000, -1e303, 1e303);
  ASSERT_FALSE(large_k.ok()) << "got sensitivity " << *large_k;
  EXPECT_EQ(large_k.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dpq::query
