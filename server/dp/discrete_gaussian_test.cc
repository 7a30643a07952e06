#include "server/dp/discrete_gaussian.h"

#include <cmath>

#include "gtest/gtest.h"
#include "server/dp/testing/seeded_random.h"

namespace dpq::dp {
namespace {

TEST(DiscreteGaussianTest, RejectsNegativeSigma) {
  auto s = DiscreteGaussianSampler::Create(-1);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("sigma"), absl::string_view::npos);
}

// For sigma >= 2 the discrete Gaussian's variance equals sigma^2 to within 1e-30 relative (Poisson
// summation, CKS 2020 Fact 19); tolerance 6 standard errors (Var(z^2) = 2 sigma^4).
TEST(DiscreteGaussianTest, MeanAndVarianceMatch) {
  for (double sigma : {2.5, 1000.0}) {
    auto s = DiscreteGaussianSampler::Create(sigma);
    ASSERT_TRUE(s.ok());
    SeededRandom rng(8);
    const int n = 50000;
    double sum = 0, sum_sq = 0;
    for (int i = 0; i < n; ++i) {
      const double z = static_cast<double>(s->Sample(rng));
      sum += z;
      sum_sq += z * z;
    }
    const double var = sigma * sigma;
    EXPECT_NEAR(sum / n, 0, 6 * std::sqrt(var / n)) << sigma;
    EXPECT_NEAR(sum_sq / n, var, 6 * std::sqrt(2 * var * var / n)) << sigma;
  }
}

TEST(DiscreteGaussianTest, SmallSigmaConcentratesOnZero) {
  auto s = DiscreteGaussianSampler::Create(0.05);
  ASSERT_TRUE(s.ok());
  SeededRandom rng(9);
  // P(Z != 0) ≈ 2 exp(-200): any nonzero draw is a bug.
  for (int i = 0; i < 2000; ++i) EXPECT_EQ(s->Sample(rng), 0);
}

}  // namespace
}  // namespace dpq::dp
