#include "server/dp/analytic_gaussian.h"

#include <cmath>

#include "gtest/gtest.h"

namespace dpq::dp {
namespace {

// Records `analytic_gaussian_sigma` / `analytic_gaussian_epsilon` of shared/reference/accounting.json
// (dp_accounting 0.6.0 get_sigma_gaussian / get_epsilon_gaussian, cross-checked with 50-digit
// mpmath), tolerance_rel 1e-6, direction "eq"; L2 sensitivity 1.
struct SigmaCase {
  double epsilon, delta, sigma;
};
constexpr SigmaCase kSigmaCases[] = {
    {0.1, 1e-5, 30.74956613197727}, {1, 1e-5, 3.7306316348159374}, {5, 1e-5, 0.8918682649514421},
    {0.1, 1e-7, 41.32945161279961}, {1, 1e-7, 4.678663060910845},  {5, 1e-7, 1.0620620652960533},
};

struct EpsilonCase {
  double sigma, delta, epsilon;
};
constexpr EpsilonCase kEpsilonCases[] = {
    {0.5, 1e-5, 9.997256146434315},
    {2.0, 1e-5, 1.9930914044151176},
    {10.0, 1e-5, 0.34066936468432574},
};

TEST(AnalyticGaussianTest, SigmaMatchesReferenceAndIsNeverBelowIt) {
  for (const auto& c : kSigmaCases) {
    auto sigma = AnalyticGaussianSigma(c.epsilon, c.delta, 1.0);
    ASSERT_TRUE(sigma.ok()) << sigma.status();
    EXPECT_NEAR(*sigma, c.sigma, 1e-6 * c.sigma) << c.epsilon << " " << c.delta;
    // The mpmath cross-check agrees with the reference to < 1e-13; we must be on the safe side.
    EXPECT_GE(*sigma, c.sigma * (1 - 1e-13)) << c.epsilon << " " << c.delta;
    EXPECT_LE(AnalyticGaussianDelta(c.epsilon, *sigma, 1.0), c.delta);
  }
}

TEST(AnalyticGaussianTest, SigmaScalesLinearlyWithSensitivity) {
  auto one = AnalyticGaussianSigma(1, 1e-5, 1);
  auto seven = AnalyticGaussianSigma(1, 1e-5, 7);
  ASSERT_TRUE(one.ok() && seven.ok());
  EXPECT_NEAR(*seven, 7 * *one, 1e-12 * *seven);
}

TEST(AnalyticGaussianTest, EpsilonMatchesReference) {
  for (const auto& c : kEpsilonCases) {
    auto eps = AnalyticGaussianEpsilon(c.sigma, c.delta, 1.0);
    ASSERT_TRUE(eps.ok()) << eps.status();
    EXPECT_NEAR(*eps, c.epsilon, 1e-6 * c.epsilon) << c.sigma;
    EXPECT_GE(*eps, c.epsilon * (1 - 1e-13)) << c.sigma;
  }
}

TEST(AnalyticGaussianTest, LargeEpsilonDoesNotOverflow) {
  auto sigma = AnalyticGaussianSigma(100, 1e-10, 1);
  ASSERT_TRUE(sigma.ok());
  EXPECT_TRUE(std::isfinite(*sigma));
  EXPECT_GT(*sigma, 0);
}

TEST(AnalyticGaussianTest, RejectsBadParametersNamingThem) {
  EXPECT_NE(AnalyticGaussianSigma(0, 1e-5, 1).status().message().find("epsilon"),
            absl::string_view::npos);
  EXPECT_NE(AnalyticGaussianSigma(1, 0, 1).status().message().find("delta"),
            absl::string_view::npos);
  EXPECT_NE(AnalyticGaussianSigma(1, 1, 1).status().message().find("delta"),
            absl::string_view::npos);
  EXPECT_NE(AnalyticGaussianSigma(1, 1e-5, std::nan("")).status().message().find("sensitivity"),
            absl::string_view::npos);
  EXPECT_NE(AnalyticGaussianEpsilon(-1, 1e-5, 1).status().message().find("sigma"),
            absl::string_view::npos);
}

}  // namespace
}  // namespace dpq::dp
