// Stochastic: the bucket chosen by ReleaseQuantiles follows the exponential mechanism's law, and
// the rank-error bound holds at its confidence. Fixed seeds.
#include <cmath>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "server/dp/dp_quantile.h"
#include "server/dp/testing/seeded_random.h"
#include "server/dp/testing/statistics.h"

namespace dpq::dp {
namespace {

// counts {3, 1, 4, 1, 5} on [0, 5) (bucket i has midpoint i + 0.5), n = 14, rank intervals
// [0,3], [3,4], [4,8], [8,9], [9,14].
const std::vector<int64_t> kCounts = {3, 1, 4, 1, 5};

// Expected law: P(i) proportional to exp(eps u(i) / (2 Delta_u)), u(i) = -dist(q n, interval i),
// Delta_u = max(q, 1 - q) K (McSherry & Talwar 2007). Pearson chi-square against the critical
// value of testing::ChiSquareCritical (false-alarm ~1e-6, Wilson-Hilferty) with df = B - 1.
std::vector<double> ExpectedLaw(double q, double eps, int k) {
  const double n = 14, t = q * n;
  const double lo[] = {0, 3, 4, 8, 9}, hi[] = {3, 4, 8, 9, 14};
  const double delta_u = std::max(q, 1 - q) * k;
  std::vector<double> p;
  double z = 0;
  for (int i = 0; i < 5; ++i) {
    const double d = std::max({0.0, lo[i] - t, t - hi[i]});
    p.push_back(std::exp(-eps * d / (2 * delta_u)));
    z += p.back();
  }
  for (double& x : p) x /= z;
  return p;
}

TEST(DpQuantileStochasticTest, BucketFrequenciesMatchTheExponentialMechanism) {
  struct Case {
    double q, eps;
    int k;
  };
  // Median: target 7 inside bucket 2, distances {4, 3, 0, 1, 2}. q = 0.9: target 12.6 inside
  // bucket 4. q = 0.25, K = 2: target 3.5 inside bucket 1.
  const std::vector<Case> cases = {{0.5, 1.0, 1}, {0.9, 0.7, 1}, {0.25, 2.0, 2}};
  SeededRandom rng(31337);
  const int draws = 200000;
  for (const Case& c : cases) {
    std::vector<int64_t> observed(5, 0);
    for (int i = 0; i < draws; ++i) {
      auto out = ReleaseQuantiles(kCounts, 0, 5, std::vector<double>{c.q}, c.eps, c.k, rng);
      ASSERT_TRUE(out.ok());
      const int bucket = static_cast<int>(std::floor((*out)[0]));
      ASSERT_EQ((*out)[0], bucket + 0.5);
      ++observed[bucket];
    }
    const std::vector<double> expected = ExpectedLaw(c.q, c.eps, c.k);
    const double chi2 = testing::ChiSquare(observed, expected);
    EXPECT_LT(chi2, testing::ChiSquareCritical(4)) << "q=" << c.q << " eps=" << c.eps;
  }
}

// Two quantiles split epsilon: each selection must follow the law at eps / 2. The final sort mixes
// the two draws, so release {0.5, 0.5} at eps = 2 and compare the smaller output with the law of
// the minimum of two independent draws at eps = 1.
TEST(DpQuantileStochasticTest, EpsilonIsSplitEvenlyAcrossQuantiles) {
  SeededRandom rng(4242);
  const int draws = 200000;
  const std::vector<double> p = ExpectedLaw(0.5, 1.0, 1);  // law of ONE draw at eps = 2 / 2
  // P(min = i) = P(both >= i) - P(both >= i + 1).
  std::vector<double> tail(6, 0);
  for (int i = 4; i >= 0; --i) tail[i] = tail[i + 1] + p[i];
  std::vector<double> expected_min(5);
  for (int i = 0; i < 5; ++i) expected_min[i] = tail[i] * tail[i] - tail[i + 1] * tail[i + 1];
  std::vector<int64_t> observed(5, 0);
  for (int i = 0; i < draws; ++i) {
    auto out = ReleaseQuantiles(kCounts, 0, 5, std::vector<double>{0.5, 0.5}, 2.0, 1, rng);
    ASSERT_TRUE(out.ok());
    ASSERT_LE((*out)[0], (*out)[1]);
    ++observed[static_cast<int>(std::floor((*out)[0]))];
  }
  EXPECT_LT(testing::ChiSquare(observed, expected_min), testing::ChiSquareCritical(4));
}

// Coverage of RankErrorBound: the fraction of releases whose bucket is farther than the bound
// from the target rank must be <= 1 - confidence. One-sided Clopper-Pearson lower bound at level
// 1e-6 on the failure rate must stay below 1 - confidence.
TEST(DpQuantileStochasticTest, RankErrorBoundHoldsAtItsConfidence) {
  std::vector<int64_t> counts(40);
  for (size_t i = 0; i < counts.size(); ++i) counts[i] = static_cast<int64_t>(1 + (i * 7) % 5);
  std::vector<int64_t> below(counts.size() + 1, 0);
  for (size_t i = 0; i < counts.size(); ++i) below[i + 1] = below[i] + counts[i];
  const double n = static_cast<double>(below.back());
  const double q = 0.3, eps = 0.5, confidence = 0.8;
  const int k = 1;
  auto bound = RankErrorBound(static_cast<int64_t>(counts.size()), q, 1, eps, k, confidence);
  ASSERT_TRUE(bound.ok());
  SeededRandom rng(99);
  const int draws = 50000;
  int64_t failures = 0;
  for (int i = 0; i < draws; ++i) {
    auto out = ReleaseQuantiles(counts, 0, 40, std::vector<double>{q}, eps, k, rng);
    ASSERT_TRUE(out.ok());
    const int b = static_cast<int>(std::floor((*out)[0]));
    const double t = q * n;
    const double d = std::max({0.0, below[b] - t, t - below[b + 1]});
    failures += d > *bound;
  }
  EXPECT_LT(testing::ClopperPearsonLower(failures, draws, 1e-6), 1 - confidence);
}

}  // namespace
}  // namespace dpq::dp
