#include "server/dp/zcdp_conversion.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"
#include "server/dp/analytic_gaussian.h"

namespace dpq::dp {
namespace {

struct Reference {
  double rho;
  double delta;
  double epsilon;  // inf_{a > 1} of the CKS 2020 Prop. 12 objective
};

// mpmath, 60 digits: log-spaced scan of a - 1 over [1e-12, 1e15], then 250 golden-section steps;
// the optimal order a* is between 1.008 and 4.2e4 for these rows, all inside the scanned range.
constexpr Reference kReferences[] = {
    {1e-08, 1e-12, 0.0008004760735807093},   // a* = 41236.8
    {1e-08, 1e-06, 0.00034558817880101257},  // a* = 19804.6
    {0.0001, 1e-12, 0.090659571145794557},   // a* = 464.572
    {0.0001, 1e-06, 0.05372712063485987},    // a* = 286.611
    {0.0001, 0.001, 0.020975355701652212},   // a* = 140.971
    {0.5, 1e-12, 7.515142752890129},         // a* = 8.14612
    {0.5, 1e-06, 5.2215344445301691},        // a* = 5.90701
    {0.5, 0.001, 3.5365618461689592},        // a* = 4.30117
    {0.5, 0.5, 0.18905663024753052},         // a* = 1.63491
    {50.0, 1e-12, 122.73460485978097},       // a* = 1.73593
    {50.0, 1e-06, 100.68990516105824},       // a* = 1.51766
    {50.0, 0.5, 58.540051819530248},         // a* = 1.10863
    {10000.0, 1e-12, 11047.332367726471},    // a* = 1.05252
    {10000.0, 1e-06, 10739.073156563854},    // a* = 1.03712
    {10000.0, 0.5, 10160.715366256814},      // a* = 1.00828
};

TEST(ZcdpConversionTest, CksEpsilonIsNeverBelowTheInfimumAndWithin1e12OfIt) {
  for (const Reference& r : kReferences) {
    const double eps = ZcdpEpsilonCks(r.rho, r.delta);
    EXPECT_GE(eps, r.epsilon) << r.rho << " " << r.delta;
    EXPECT_LE(eps, r.epsilon * (1 + 1e-12)) << r.rho << " " << r.delta;
  }
}

TEST(ZcdpConversionTest, NegativeInfimumIsClampedToZero) {
  // mpmath: the infimum is -0.00099054942270608868 at rho = 1e-8, delta = 1e-3.
  EXPECT_EQ(ZcdpEpsilonCks(1e-8, 1e-3), 0.0);
  EXPECT_EQ(ZcdpEpsilonCks(0, 1e-6), 0.0);
  EXPECT_TRUE(std::isinf(ZcdpEpsilonCks(std::numeric_limits<double>::infinity(), 1e-6)));
}

TEST(ZcdpConversionTest, CksIsTighterThanSimpleAndSimpleIsRoundedUp) {
  for (const Reference& r : kReferences) {
    const double simple = ZcdpEpsilonSimple(r.rho, r.delta);
    const long double rho = r.rho;
    const long double exact =
        rho + 2 * std::sqrt(rho * -std::log(static_cast<long double>(r.delta)));
    EXPECT_GE(static_cast<long double>(simple), exact) << r.rho << " " << r.delta;
    EXPECT_LE(simple, static_cast<double>(exact) * (1 + 0x1p-48));
    EXPECT_LT(ZcdpEpsilonCks(r.rho, r.delta), simple);
  }
}

// The conversion is valid for every rho-zCDP mechanism, so in particular for the continuous
// Gaussian with sigma = 1 and sensitivity sqrt(2 rho), whose exact delta(eps) is Balle & Wang
// 2018, Thm 8: at the converted eps its delta must not exceed the target (and, the conversion
// being lossy, is usually well below it).
TEST(ZcdpConversionTest, ConvertedEpsilonIsValidForTheGaussian) {
  for (const Reference& r : kReferences) {
    const double sensitivity = std::sqrt(2 * r.rho);
    const double eps = ZcdpEpsilonCks(r.rho, r.delta);
    EXPECT_LE(AnalyticGaussianDelta(eps, 1.0, sensitivity), r.delta) << r.rho << " " << r.delta;
    EXPECT_GE(ZcdpDelta(r.rho, eps), AnalyticGaussianDelta(eps, 1.0, sensitivity));
  }
}

TEST(ZcdpConversionTest, DeltaInvertsEpsilon) {
  for (const Reference& r : kReferences) {
    const double delta = ZcdpDelta(r.rho, r.epsilon);
    EXPECT_GE(delta, r.delta) << r.rho << " " << r.delta;  // upper bound at the exact infimum
    EXPECT_LE(delta, r.delta * (1 + 1e-9)) << r.rho << " " << r.delta;
  }
  EXPECT_EQ(ZcdpDelta(0, 1), 0.0);
  EXPECT_EQ(ZcdpDelta(1e6, 1), 1.0);
}

TEST(ZcdpConversionTest, GaussianRhoIsRoundedUp) {
  for (double sensitivity : {1.0, 3.0, 0.1, 1e-5, 12345.678}) {
    for (double sigma : {0.3, 1.0, 7.0, 1e4, 3.3e9}) {
      const double rho = GaussianRhoRoundedUp(sensitivity, sigma);
      const __float128 q = static_cast<__float128>(sensitivity) / sigma;
      const __float128 exact = q * q / 2;  // 113-bit arithmetic: relative error < 2^-110
      EXPECT_GE(static_cast<__float128>(rho), exact * (1 - 0x1p-108))
          << sensitivity << " " << sigma;
      EXPECT_LE(static_cast<__float128>(rho), exact * (1 + 0x1p-50)) << sensitivity << " " << sigma;
    }
  }
}

TEST(ZcdpConversionTest, GaussianSigmaIsTheSmallestPassingSigma) {
  for (double epsilon : {1e-3, 0.1, 1.0, 10.0, 1000.0}) {
    for (double delta : {1e-12, 1e-6, 0.1}) {
      auto sigma = ZcdpGaussianSigma(epsilon, delta, 2.5);
      ASSERT_TRUE(sigma.ok()) << sigma.status();
      EXPECT_LE(ZcdpEpsilonCks(GaussianRhoRoundedUp(2.5, *sigma), delta), epsilon);
      EXPECT_GT(ZcdpEpsilonCks(GaussianRhoRoundedUp(2.5, *sigma * (1 - 0x1p-38)), delta), epsilon);
      // The conversion is lossy: never below the exact continuous calibration (itself 1e-9 high).
      auto analytic = AnalyticGaussianSigma(epsilon, delta, 2.5);
      ASSERT_TRUE(analytic.ok());
      EXPECT_GE(*sigma, *analytic / (1 + 1e-9)) << epsilon << " " << delta;
      // Linear in the sensitivity, up to the 2^-40 search tolerance.
      auto unit = ZcdpGaussianSigma(epsilon, delta, 1.0);
      ASSERT_TRUE(unit.ok());
      EXPECT_NEAR(*sigma / *unit, 2.5, 2.5 * 0x1p-38);
    }
  }
}

TEST(ZcdpConversionTest, GaussianSigmaRejectsBadParametersNamingThem) {
  const double nan = std::nan("");
  EXPECT_NE(ZcdpGaussianSigma(nan, 1e-6, 1).status().message().find("epsilon"),
            absl::string_view::npos);
  EXPECT_NE(ZcdpGaussianSigma(0, 1e-6, 1).status().message().find("epsilon"),
            absl::string_view::npos);
  EXPECT_NE(ZcdpGaussianSigma(1, 0, 1).status().message().find("delta"), absl::string_view::npos);
  EXPECT_NE(ZcdpGaussianSigma(1, 1, 1).status().message().find("delta"), absl::string_view::npos);
  EXPECT_NE(ZcdpGaussianSigma(1, 1e-6, -1).status().message().find("l2_sensitivity"),
            absl::string_view::npos);
  EXPECT_EQ(ZcdpGaussianSigma(1, 1e-6, 1e308).status().code(), absl::StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace dpq::dp
