// Stochastic: empirical keep rates of PartitionSelector::Keep and of the exact long-double
// Bernoulli. Fixed seeds.
//
// Tolerance (binomial): k keeps in N independent draws with probability p has mean N p and
// variance N p (1 - p). We accept |k - N p| <= 5 sqrt(N p (1 - p)) + 1: by the normal
// approximation a 5-sigma two-sided excursion has probability 5.7e-7 per check, and the "+1"
// absorbs the lattice effect when N p (1 - p) is tiny (then k is 0 or N with overwhelming
// probability: P(k >= 2) <= (N p)^2 / 2 for N p << 1). With < 60 checks per run the false-alarm
// rate is < 4e-5, and a systematic error in p of more than ~5 sigma relative is caught.
#include <cmath>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "server/dp/partition_selection.h"
#include "server/dp/testing/seeded_random.h"

namespace dpq::dp {
namespace {

double Tolerance(int64_t draws, double p) { return 5 * std::sqrt(draws * p * (1 - p)) + 1; }

TEST(PartitionSelectionStochasticTest, KeepRatesMatchKeepProbability) {
  struct Case {
    double epsilon, delta;
    int max_partitions;
  };
  const std::vector<Case> cases = {{1.0, 0.01, 1}, {2.0, 1e-3, 2}, {0.5, 0.05, 1}};
  SeededRandom rng(20240611);
  const int64_t draws = 100000;
  for (const Case& c : cases) {
    auto s = PartitionSelector::Create(c.epsilon, c.delta, c.max_partitions);
    ASSERT_TRUE(s.ok());
    for (int64_t n = 0; n <= s->AlwaysKeptThreshold(); ++n) {
      const double p = s->KeepProbability(n);
      int64_t kept = 0;
      for (int64_t i = 0; i < draws; ++i) kept += s->Keep(n, rng);
      EXPECT_NEAR(static_cast<double>(kept), draws * p, Tolerance(draws, p))
          << "eps=" << c.epsilon << " delta=" << c.delta << " M=" << c.max_partitions << " n=" << n
          << " p=" << p;
    }
  }
}

TEST(PartitionSelectionStochasticTest, ExactBernoulliRates) {
  SeededRandom rng(77);
  const int64_t draws = 400000;
  for (long double p : {0.3L, 0.5L, 1e-3L, 1 - 1e-3L, 0.123456789L, std::ldexp(1.0L, -70)}) {
    int64_t hits = 0;
    for (int64_t i = 0; i < draws; ++i) hits += internal::BernoulliLongDouble(p, rng);
    const double pd = static_cast<double>(p);
    EXPECT_NEAR(static_cast<double>(hits), draws * pd, Tolerance(draws, pd)) << pd;
  }
}

}  // namespace
}  // namespace dpq::dp
