// Stochastic: the quantile intervals read off a Laplace-noised histogram hold all their quantiles
// at once in >= 95 % of releases, and are informative. Fixed seeds; real mechanism and band.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "server/dp/additive_mechanism.h"
#include "server/dp/dp_quantile.h"
#include "server/dp/quantile_interval.h"
#include "server/dp/testing/seeded_random.h"
#include "server/dp/testing/statistics.h"

namespace dpq::dp {
namespace {

// 2000 values in 200 unit buckets of [0, 200), shaped like a skewed hump; each value sits in the
// middle of its bucket. The exact quantile is x_(max(1, ceil(q n))) (percentile_disc).
std::vector<int64_t> Data() {
  std::vector<int64_t> counts(200, 0);
  for (int k = 0; k < 2000; ++k) {
    const double u = (k + 0.5) / 2000.0;
    const int bucket = static_cast<int>(200 * u * u * (3 - 2 * u) * 0.6 + 20);  // in [20, 140)
    ++counts[bucket];
  }
  return counts;
}

double Exact(const std::vector<int64_t>& counts, double q) {
  int64_t n = 0;
  for (int64_t c : counts) n += c;
  const double rank = std::max(1.0, std::ceil(q * static_cast<double>(n)));
  int64_t seen = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    seen += counts[i];
    if (static_cast<double>(seen) >= rank) return static_cast<double>(i) + 0.5;
  }
  return 199.5;
}

// The band's guarantee is P(some interval misses) <= 0.05, so misses in 1000 independent
// releases are stochastically below Binomial(1000, 0.05): the test fails if the one-sided
// Clopper-Pearson lower bound (alpha 1e-6) on the miss rate exceeds 0.05. The band is
// conservative (union and Chernoff bounds), so far fewer misses are expected; that is not
// asserted. Informative: at epsilon 1 (K = 1) the median's interval is narrower than a fifth of
// the range in every release: its rank half-width is about 45 of 2000 rows (Chernoff at
// a = 0.05 / (5 * 199): 1.14 x 4.06 sd of the noisy CDF, sd = 9.6), a few buckets on each side
// here (measured: at most 11 buckets wide over the 1000 releases; no miss).
TEST(QuantileBandStochasticTest, IntervalsHoldAllQuantilesInAtLeast95PercentOfReleases) {
  const std::vector<int64_t> counts = Data();
  std::vector<double> edges(201);
  for (int i = 0; i <= 200; ++i) edges[i] = i;
  const std::vector<double> levels = {0.05, 0.25, 0.5, 0.75, 0.95};
  auto mech = CreateLaplaceMechanism(1.0, 1.0, 1);
  ASSERT_TRUE(mech.ok());
  const AdditiveMechanism& m = **mech;
  auto band =
      QuantileBand::Create(200, levels, m.granularity(), m.noise_scale() / m.granularity(), 0.95);
  ASSERT_TRUE(band.ok()) << band.status();
  SeededRandom rng(20261130);
  const int kTrials = 1000;
  int misses = 0;
  double widest_median = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    std::vector<double> noisy(200);
    for (int i = 0; i < 200; ++i) {
      auto v = m.AddNoise(static_cast<double>(counts[i]), rng);
      ASSERT_TRUE(v.ok());
      noisy[i] = *v;
    }
    auto iv = band->Intervals(noisy, edges);
    ASSERT_TRUE(iv.ok());
    bool miss = false;
    for (size_t l = 0; l < levels.size(); ++l) {
      const double exact = Exact(counts, levels[l]);
      miss |= exact < (*iv)[l].lower || exact > (*iv)[l].upper;
    }
    misses += miss;
    widest_median = std::max(widest_median, (*iv)[2].upper - (*iv)[2].lower);
  }
  EXPECT_LE(testing::ClopperPearsonLower(misses, kTrials, 1e-6), 0.05) << misses << " misses";
  EXPECT_LT(widest_median, 40) << "median interval too wide to be useful";
}

}  // namespace
}  // namespace dpq::dp

namespace dpq::dp {
namespace {

// Rank error (rows) of a released value for level q: distance from q n to the rank interval of
// the bucket holding the value, [F(i), F(i+1)] (0 when q n lies inside).
double RankError(const std::vector<int64_t>& counts, double value, double q) {
  int64_t n = 0;
  for (int64_t c : counts) n += c;
  const int i = std::min(static_cast<int>(value), static_cast<int>(counts.size()) - 1);
  int64_t below = 0;
  for (int k = 0; k < i; ++k) below += counts[k];
  const double t = q * static_cast<double>(n);
  return std::max(
      {0.0, static_cast<double>(below) - t, t - static_cast<double>(below + counts[i])});
}

// The design choice in the planner (kMaxSelectedQuantiles = 5), measured: at the same total
// epsilon = 1, with many levels (9 deciles) the values read off a histogram bought with all of
// epsilon have a smaller mean rank error than the exponential mechanism's at epsilon / 2 split
// over 9 levels; with one level (the median) the exponential mechanism is better. 300 releases
// each on 1000 unit buckets, 20000 rows. Measured (this seed): deciles 7.2 (CDF) vs 15.8 (EM)
// rows, median 9.0 vs 0.0; the standard error of each mean is below 10 % of it, so the asserted
// factor 1.5 is not a matter of sampling noise. (Sweeping m = 1..9 and n = 2e3..2e5 rows, the
// two meet at m = 5: decisions.md.)
TEST(QuantileBandStochasticTest, CdfEstimatesBeatTheExponentialMechanismOnlyForManyLevels) {
  std::vector<int64_t> counts(1000, 0);
  for (int k = 0; k < 20000; ++k) {
    const double u = (k + 0.5) / 20000.0;
    ++counts[static_cast<int>(1000 * u * u * (3 - 2 * u) * 0.6 + 100)];
  }
  std::vector<double> edges(1001);
  for (int i = 0; i <= 1000; ++i) edges[i] = i;
  const auto mean_errors = [&](const std::vector<double>& levels) {
    auto full = CreateLaplaceMechanism(1.0, 1.0, 1);
    auto half = CreateLaplaceMechanism(0.5, 1.0, 1);
    EXPECT_TRUE(full.ok() && half.ok());
    auto band = QuantileBand::Create(1000, levels, (*full)->granularity(),
                                     (*full)->noise_scale() / (*full)->granularity(), 0.95);
    EXPECT_TRUE(band.ok());
    SeededRandom rng(7 + levels.size());
    double cdf = 0, em = 0;
    const int kRuns = 300;
    for (int run = 0; run < kRuns; ++run) {
      std::vector<double> noisy(1000);
      for (int i = 0; i < 1000; ++i)
        noisy[i] = *(*full)->AddNoise(static_cast<double>(counts[i]), rng);
      auto estimates = band->Estimates(noisy, edges);
      auto chosen = ReleaseQuantiles(counts, 0, 1000, levels, 0.5, 1, rng);
      EXPECT_TRUE(estimates.ok() && chosen.ok());
      for (size_t l = 0; l < levels.size(); ++l) {
        cdf += RankError(counts, (*estimates)[l], levels[l]) / (kRuns * levels.size());
        em += RankError(counts, (*chosen)[l], levels[l]) / (kRuns * levels.size());
      }
    }
    return std::make_pair(cdf, em);
  };
  const auto [cdf9, em9] = mean_errors({0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9});
  EXPECT_LT(1.5 * cdf9, em9) << "deciles: CDF " << cdf9 << " rows, EM " << em9 << " rows";
  const auto [cdf1, em1] = mean_errors({0.5});
  EXPECT_LT(1.5 * em1, cdf1) << "median: CDF " << cdf1 << " rows, EM " << em1 << " rows";
  std::printf("mean rank error (rows): deciles CDF %.1f EM %.1f; median CDF %.1f EM %.1f\n", cdf9,
              em9, cdf1, em1);
}

}  // namespace
}  // namespace dpq::dp
