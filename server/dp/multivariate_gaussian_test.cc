// The vector (changed_coordinates > 1) Gaussian mechanism: zCDP calibration (CKS 2020, Thm 14 and
// Cor. 13) on the grid L2 sensitivity Delta/gamma + sqrt(m).
#include <cmath>
#include <cstdint>
#include <limits>

#include "gtest/gtest.h"
#include "server/dp/additive_mechanism.h"
#include "server/dp/discrete_gaussian_privacy.h"
#include "server/dp/testing/seeded_random.h"
#include "server/dp/zcdp_conversion.h"

namespace dpq::dp {
namespace {

constexpr double kTruncationAllowance = 1 - 0x1p-40;  // as in gaussian_mechanism.cc

// rho as the ledger charges it: event gaussian:sigma=noise_scale(),sensitivity=privacy_sensitivity()
// gives noise multiplier z = sigma / sensitivity and rho = 1 / (2 z^2) (accounting/zcdp.cc).
double LedgerRho(const AdditiveMechanism& m) {
  const double z = m.noise_scale() / m.privacy_sensitivity();
  return 1 / (2 * z * z);
}

TEST(MultivariateGaussianTest, LedgerRhoConvertsToEpsilonAndSigmaIsTight) {
  for (double epsilon : {0.01, 0.1, 1.0, 5.0, 50.0}) {
    for (double delta : {1e-12, 1e-6, 1e-3}) {
      for (double sensitivity : {1.0, std::sqrt(10.0), 250.0}) {
        for (int64_t m : {2, 10, 1000}) {
          auto mech = CreateGaussianMechanism(epsilon, delta, sensitivity, m);
          ASSERT_TRUE(mech.ok()) << mech.status();
          EXPECT_LE(ZcdpEpsilonCks(LedgerRho(**mech), delta), epsilon)
              << epsilon << " " << delta << " " << sensitivity << " " << m;
          // A sigma 0.1% smaller would not be certified.
          const double smaller_rho = LedgerRho(**mech) / (0.999 * 0.999);
          EXPECT_GT(ZcdpEpsilonCks(smaller_rho, delta), epsilon)
              << epsilon << " " << delta << " " << sensitivity << " " << m;
        }
      }
    }
  }
}

TEST(MultivariateGaussianTest, PrivacySensitivityIsDeltaPlusSqrtMGridSteps) {
  for (double sensitivity : {1.0, std::sqrt(10.0), 3.7e-5, 250.0}) {
    auto scalar = CreateGaussianMechanism(1, 1e-6, sensitivity);
    ASSERT_TRUE(scalar.ok());
    const double gamma = (*scalar)->granularity();
    for (int64_t m : {int64_t{2}, int64_t{4}, int64_t{10}, int64_t{1000}, int64_t{1} << 40}) {
      auto mech = CreateGaussianMechanism(1, 1e-6, sensitivity, m);
      ASSERT_TRUE(mech.ok()) << mech.status();
      EXPECT_EQ((*mech)->granularity(), gamma) << "same grid as the scalar release";
      EXPECT_EQ((*mech)->sensitivity(), sensitivity);
      // Steps and Delta/gamma are within a factor 2 of each other: the difference is exact.
      const double rounding = (*mech)->privacy_sensitivity() / gamma - sensitivity / gamma;
      const double md = static_cast<double>(m);
      EXPECT_GE(std::fma(rounding, rounding, -md), 0) << "rounding term below sqrt(m), m = " << m;
      EXPECT_LE(rounding, std::sqrt(md) + 0x1p-30) << m;
    }
  }
  auto four = CreateGaussianMechanism(1, 1e-6, 1.0, 4);
  ASSERT_TRUE(four.ok());
  EXPECT_EQ((*four)->privacy_sensitivity(), 1 + 2 * (*four)->granularity());
}

TEST(MultivariateGaussianTest, SigmaIsTheZcdpSigmaForTheGridSensitivity) {
  for (double epsilon : {0.1, 1.0, 10.0}) {
    for (int64_t m : {2, 7, 1000}) {
      auto mech = CreateGaussianMechanism(epsilon, 1e-6, 2.0, m);
      ASSERT_TRUE(mech.ok());
      const double gamma = (*mech)->granularity();
      auto steps = ZcdpGaussianSigma(epsilon, 1e-6 * kTruncationAllowance,
                                     (*mech)->privacy_sensitivity() / gamma);
      ASSERT_TRUE(steps.ok());
      EXPECT_EQ((*mech)->noise_scale(), *steps * gamma);
    }
  }
}

TEST(MultivariateGaussianTest, SigmaGrowsWithMOnlyThroughTheRoundingTerm) {
  auto base = CreateGaussianMechanism(1, 1e-6, 1.0, 2);
  ASSERT_TRUE(base.ok());
  const double gamma = (*base)->granularity();
  const double per_unit = (*base)->noise_scale() / (*base)->privacy_sensitivity();
  double previous = (*base)->noise_scale();
  for (int64_t m : {10, 100, 10000, 1000000}) {
    auto mech = CreateGaussianMechanism(1, 1e-6, 1.0, m);
    ASSERT_TRUE(mech.ok());
    // sigma is linear in the grid sensitivity (to the 2^-40 search tolerance) ...
    EXPECT_NEAR((*mech)->noise_scale() / (*mech)->privacy_sensitivity(), per_unit,
                per_unit * 0x1p-38)
        << m;
    // ... which grows with m only by the rounding term sqrt(m) gamma: for Delta = 2^20 gamma,
    // even m = 10^6 adds less than 0.1%.
    EXPECT_GE((*mech)->noise_scale(), previous) << m;
    EXPECT_LE((*mech)->noise_scale() / (*base)->noise_scale(),
              1 + std::sqrt(static_cast<double>(m)) * gamma)
        << m;
    previous = (*mech)->noise_scale();
  }
  EXPECT_LT(previous / (*base)->noise_scale(), 1 + 1e-3);
}

// The zCDP conversion is looser than the exact 1-D certificate (CKS 2020 Thm 7), so for the same
// integer grid sensitivity it never gives a smaller sigma; it costs 3-18% here.
TEST(MultivariateGaussianTest, ZcdpSigmaIsNeverBelowTheExactScalarSigma) {
  for (double epsilon : {0.1, 1.0, 3.0, 10.0}) {
    for (double delta : {1e-12, 1e-6, 1e-3}) {
      for (int64_t d : {int64_t{1}, int64_t{3}, (int64_t{1} << 20) + 1}) {
        auto zcdp = ZcdpGaussianSigma(epsilon, delta, static_cast<double>(d));
        auto exact = DiscreteGaussianSigma(epsilon, delta, d);
        ASSERT_TRUE(zcdp.ok() && exact.ok());
        EXPECT_GE(*zcdp, *exact) << epsilon << " " << delta << " " << d;
        EXPECT_LE(*zcdp, 1.25 * *exact) << epsilon << " " << delta << " " << d;
      }
    }
  }
  // Through the mechanism: a 2-coordinate release needs more noise than a scalar one.
  for (double epsilon : {0.1, 1.0, 10.0}) {
    auto scalar = CreateGaussianMechanism(epsilon, 1e-6, 1.0);
    auto vector = CreateGaussianMechanism(epsilon, 1e-6, 1.0, 2);
    ASSERT_TRUE(scalar.ok() && vector.ok());
    EXPECT_GT((*vector)->noise_scale(), (*scalar)->noise_scale());
    EXPECT_GT((*vector)->privacy_sensitivity(), (*scalar)->privacy_sensitivity());
  }
}

TEST(MultivariateGaussianTest, TenCoordinateHistogramCostsAboutSevenPercentSigma) {
  // m = 10 coordinates with L2 sensitivity sqrt(10), against the exact 1-D calibration for the
  // same Delta, at eps = 1, delta = 1e-6: 14.3279 / 13.3596 (zCDP conversion loss, ~1.0725).
  auto scalar = CreateGaussianMechanism(1, 1e-6, std::sqrt(10.0));
  auto vector = CreateGaussianMechanism(1, 1e-6, std::sqrt(10.0), 10);
  ASSERT_TRUE(scalar.ok() && vector.ok());
  const double ratio = (*vector)->noise_scale() / (*scalar)->noise_scale();
  EXPECT_GT(ratio, 1.07);
  EXPECT_LT(ratio, 1.075);
}

TEST(MultivariateGaussianTest, RejectsBadParametersNamingThem) {
  for (int64_t m : {int64_t{0}, int64_t{-1}, (int64_t{1} << 40) + 1, int64_t{1} << 41,
                    std::numeric_limits<int64_t>::min()}) {
    auto mech = CreateGaussianMechanism(1, 1e-6, 1, m);
    EXPECT_EQ(mech.status().code(), absl::StatusCode::kInvalidArgument) << m;
    EXPECT_NE(mech.status().message().find("changed_coordinates"), absl::string_view::npos) << m;
  }
  EXPECT_TRUE(CreateGaussianMechanism(1, 1e-6, 1, int64_t{1} << 40).ok());
  const double nan = std::nan("");
  const double inf = std::numeric_limits<double>::infinity();
  auto message = [](const absl::StatusOr<std::unique_ptr<AdditiveMechanism>>& m) {
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(m.status().message());
  };
  EXPECT_NE(message(CreateGaussianMechanism(nan, 1e-6, 1, 10)).find("epsilon"), std::string::npos);
  EXPECT_NE(message(CreateGaussianMechanism(1, 0, 1, 10)).find("delta"), std::string::npos);
  EXPECT_NE(message(CreateGaussianMechanism(1, 1, 1, 10)).find("delta"), std::string::npos);
  EXPECT_NE(message(CreateGaussianMechanism(1, 1e-6, inf, 10)).find("l2_sensitivity"),
            std::string::npos);
}

TEST(MultivariateGaussianTest, OutputsLieOnTheGridAndHalfWidthIsPerCoordinate) {
  auto mech = CreateGaussianMechanism(0.5, 1e-6, 3.0, 9);
  ASSERT_TRUE(mech.ok());
  SeededRandom rng(29);
  for (int i = 0; i < 100; ++i) {
    auto out = (*mech)->AddNoise(-7.25 + i, rng);
    ASSERT_TRUE(out.ok());
    const double steps = *out / (*mech)->granularity();
    EXPECT_EQ(steps, std::round(steps));
  }
  // The noise on each coordinate is N_Z(0, s^2) with s = noise_scale() / gamma ~ 1.4e7 steps, so
  // the half-width is the normal quantile times sigma up to a few steps (2e-7 relative each).
  auto h = (*mech)->ConfidenceHalfWidth(0.95);
  ASSERT_TRUE(h.ok());
  EXPECT_NEAR(*h, 1.959963984540054 * (*mech)->noise_scale(), 1e-6 * (*mech)->noise_scale());
}

}  // namespace
}  // namespace dpq::dp
