#include "server/dp/discrete_laplace.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"
#include "server/dp/geometric.h"
#include "server/dp/testing/seeded_random.h"

namespace dpq::dp {
namespace {

TEST(DiscreteLaplaceTest, RejectsNanScale) {
  auto s = DiscreteLaplaceSampler::Create(std::nan(""));
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("scale"), absl::string_view::npos);
}

TEST(DiscreteLaplaceTest, RejectsNonPositiveAndInfiniteScale) {
  for (double bad : {0.0, -2.0, std::numeric_limits<double>::infinity()}) {
    EXPECT_EQ(DiscreteLaplaceSampler::Create(bad).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
}

TEST(DiscreteLaplaceTest, TinyScaleIsAlmostAlwaysZero) {
  auto s = DiscreteLaplaceSampler::Create(0.01);
  ASSERT_TRUE(s.ok());
  SeededRandom rng(5);
  int zeros = 0;
  for (int i = 0; i < 2000; ++i) zeros += s->Sample(rng) == 0;
  // P(Z != 0) = 2e^-100/(1+e^-100): any nonzero draw is a bug.
  EXPECT_EQ(zeros, 2000);
}

// Mean 0 and variance 2e^(-1/b)/(1-e^(-1/b))^2; tolerance 6 standard errors of the sample mean.
TEST(DiscreteLaplaceTest, MeanAndVarianceMatch) {
  const double b = 3.5;
  auto s = DiscreteLaplaceSampler::Create(b);
  ASSERT_TRUE(s.ok());
  SeededRandom rng(6);
  const int n = 50000;
  double sum = 0, sum_sq = 0;
  for (int i = 0; i < n; ++i) {
    const double z = static_cast<double>(s->Sample(rng));
    sum += z;
    sum_sq += z * z;
  }
  const double r = std::exp(-1 / b);
  const double variance = 2 * r / ((1 - r) * (1 - r));
  EXPECT_NEAR(sum / n, 0, 6 * std::sqrt(variance / n));
  // Var of z^2 for Laplace-like law is about 5 variance^2; 6 standard errors.
  EXPECT_NEAR(sum_sq / n, variance, 6 * std::sqrt(5 * variance * variance / n));
}

TEST(GeometricTest, NonNegativeWithRightMean) {
  auto g = GeometricSampler::Create(2.0);
  ASSERT_TRUE(g.ok());
  SeededRandom rng(7);
  const int n = 50000;
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    const int64_t x = g->Sample(rng);
    ASSERT_GE(x, 0);
    sum += static_cast<double>(x);
  }
  const double r = std::exp(-0.5);
  const double mean = r / (1 - r);
  const double variance = r / ((1 - r) * (1 - r));
  EXPECT_NEAR(sum / n, mean, 6 * std::sqrt(variance / n));
}

}  // namespace
}  // namespace dpq::dp
