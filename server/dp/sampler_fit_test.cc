// Stochastic: goodness of fit of the exact samplers against their exact CDFs (chi-square).
// Fixed seeds. Each test bins draws at ~30 quantiles of the exact law (expected count per bin >=
// 3000) and rejects if the Pearson statistic exceeds the Wilson-Hilferty 1e-6 quantile.
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/dp/discrete_gaussian.h"
#include "server/dp/discrete_laplace.h"
#include "server/dp/geometric.h"
#include "server/dp/noise_quantiles.h"
#include "server/dp/testing/seeded_random.h"
#include "server/dp/testing/statistics.h"

namespace dpq::dp {
namespace {

using Cdf = std::function<double(int64_t)>;  // P(Z <= z)

// P(Z <= z) for discrete Laplace: r^-z/(1+r) for z < 0, 1 - r^(z+1)/(1+r) for z >= 0.
double LaplaceCdf(int64_t z, double scale) {
  const double log_r = -1 / scale;
  const double one_plus_r = 1 + std::exp(log_r);
  if (z < 0) return std::exp(static_cast<double>(-z) * log_r) / one_plus_r;
  return 1 - std::exp(static_cast<double>(z + 1) * log_r) / one_plus_r;
}

double GaussianCdf(int64_t z, double sigma) {
  if (z < 0) return DiscreteGaussianTail(-z - 1, sigma) / 2;  // P(Z <= z) = P(Z >= -z) = tail/2
  return 1 - DiscreteGaussianTail(z, sigma) / 2;
}

// Smallest integer z with cdf(z) >= p (bisection over int64).
int64_t Quantile(const Cdf& cdf, double p, int64_t lo, int64_t hi) {
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (cdf(mid) >= p) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

void ExpectFits(const std::function<int64_t()>& draw, const Cdf& cdf, int64_t support_lo,
                int64_t support_hi, int samples, const std::string& label) {
  // Upper cut points of the bins; the last bin is open.
  std::vector<int64_t> cuts;
  for (int i = 1; i < 30; ++i) {
    const int64_t c = Quantile(cdf, i / 30.0, support_lo, support_hi);
    if (cuts.empty() || c > cuts.back()) cuts.push_back(c);
  }
  std::vector<double> probs;
  double prev = 0;
  for (int64_t c : cuts) {
    probs.push_back(cdf(c) - prev);
    prev = cdf(c);
  }
  probs.push_back(1 - prev);
  std::vector<int64_t> counts(probs.size(), 0);
  for (int i = 0; i < samples; ++i) {
    const int64_t z = draw();
    const size_t bin = std::lower_bound(cuts.begin(), cuts.end(), z) - cuts.begin();
    ++counts[bin];
  }
  const double chi = testing::ChiSquare(counts, probs);
  const int df = static_cast<int>(probs.size()) - 1;
  ASSERT_GE(df, 1) << label;
  EXPECT_LT(chi, testing::ChiSquareCritical(df)) << label << " df=" << df;
}

TEST(SamplerFitTest, DiscreteLaplaceMatchesExactCdf) {
  int seed = 100;
  for (double scale : {0.3, 1.0, 7.5, 1e3, 2.5e6}) {
    auto s = DiscreteLaplaceSampler::Create(scale);
    ASSERT_TRUE(s.ok());
    SeededRandom rng(seed++);
    const int64_t bound = static_cast<int64_t>(60 * scale) + 10;
    ExpectFits([&] { return s->Sample(rng); }, [&](int64_t z) { return LaplaceCdf(z, scale); },
               -bound, bound, 100000, "laplace scale " + std::to_string(scale));
  }
}

TEST(SamplerFitTest, DiscreteGaussianMatchesExactCdf) {
  int seed = 200;
  for (double sigma : {0.4, 1.0, 3.3, 1e3, 3e6}) {
    auto s = DiscreteGaussianSampler::Create(sigma);
    ASSERT_TRUE(s.ok());
    SeededRandom rng(seed++);
    const int64_t bound = static_cast<int64_t>(40 * sigma) + 10;
    ExpectFits([&] { return s->Sample(rng); }, [&](int64_t z) { return GaussianCdf(z, sigma); },
               -bound, bound, 100000, "gaussian sigma " + std::to_string(sigma));
  }
}

TEST(SamplerFitTest, GeometricMatchesExactCdf) {
  int seed = 300;
  for (double scale : {0.5, 40.0, 2e6}) {
    auto s = GeometricSampler::Create(scale);
    ASSERT_TRUE(s.ok());
    SeededRandom rng(seed++);
    // P(G <= g) = 1 - e^(-(g+1)/scale).
    ExpectFits([&] { return s->Sample(rng); },
               [&](int64_t g) { return g < 0 ? 0.0 : -std::expm1(-(g + 1) / scale); }, 0,
               static_cast<int64_t>(60 * scale) + 10, 100000, "geometric " + std::to_string(scale));
  }
}

}  // namespace
}  // namespace dpq::dp
