// Coverage and bias of the LDP frequency estimates over repeated simulated collections, for each
// mechanism: every domain value's interval must contain its true count at about the stated rate,
// and the estimates must average to the true count.
#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "server/dp/ldp/frequency_estimate.h"
#include "server/dp/ldp/frequency_oracle.h"
#include "server/dp/testing/seeded_random.h"

namespace dpq::dp::ldp {
namespace {

constexpr int kCollections = 400;    // R simulated collections per mechanism
constexpr double kConfidence = 0.9;  // stated coverage

struct Population {
  std::vector<int64_t> counts;  // true count of each domain value
  int64_t total() const {
    int64_t n = 0;
    for (int64_t c : counts) n += c;
    return n;
  }
};

void ExpectCoverage(LdpMechanism mechanism, double epsilon, const Population& pop, uint64_t seed) {
  const int64_t k = static_cast<int64_t>(pop.counts.size());
  const int64_t n = pop.total();
  auto oracle = FrequencyOracle::Create(mechanism, epsilon, k);
  ASSERT_TRUE(oracle.ok()) << oracle.status();
  SeededRandom rng(seed);
  std::vector<int> covered(k, 0);
  std::vector<double> sum_estimates(k, 0);
  for (int r = 0; r < kCollections; ++r) {
    std::vector<int64_t> support(k, 0);
    for (int64_t v = 0; v < k; ++v) {
      for (int64_t i = 0; i < pop.counts[v]; ++i) {
        auto report = oracle->Randomize(v, rng);
        ASSERT_TRUE(report.ok());
        ASSERT_TRUE(oracle->Validate(*report).ok());
        oracle->AddSupport(*report, support);
      }
    }
    auto est = EstimateFrequencies(oracle->protocol(), support, n, kConfidence);
    ASSERT_TRUE(est.ok());
    for (int64_t v = 0; v < k; ++v) {
      const double c = static_cast<double>(pop.counts[v]);
      covered[v] += ((*est)[v].lower <= c && c <= (*est)[v].upper) ? 1 : 0;
      sum_estimates[v] += (*est)[v].count;
    }
  }
  for (int64_t v = 0; v < k; ++v) {
    // Hits of value v over R independent collections ~ Binomial(R, coverage). With coverage at
    // the stated 0.9, sd = sqrt(0.9 * 0.1 / R) = 0.015 for R = 400; 4 sd (two-sided false-alarm
    // rate 6e-5 per check) plus 0.01 for the normal approximation of I_v (n >= 1000 reports,
    // Berry-Esseen) gives +-0.07. A wrong variance by a factor 2 moves the coverage to 0.68 or
    // 0.98, far outside.
    const double rate = static_cast<double>(covered[v]) / kCollections;
    const double tolerance = 4 * std::sqrt(kConfidence * (1 - kConfidence) / kCollections) + 0.01;
    EXPECT_NEAR(rate, kConfidence, tolerance)
        << LdpMechanismName(mechanism) << " value " << v << " true count " << pop.counts[v];
    // Unbiasedness (Wang et al. 2017 Thm 2): the mean of R estimates has sd sqrt(Var / R), Var at
    // the true count; 4 sd.
    const double mean = sum_estimates[v] / kCollections;
    const PureProtocol pp = oracle->protocol();
    const double sd =
        std::sqrt(pp.EstimatorVariance(n, static_cast<double>(pop.counts[v])) / kCollections);
    EXPECT_NEAR(mean, static_cast<double>(pop.counts[v]), 4 * sd)
        << LdpMechanismName(mechanism) << " value " << v;
  }
}

TEST(FrequencyEstimateStochasticTest, BinaryRandomizedResponseCovers) {
  ExpectCoverage(LdpMechanism::kRr, 1.0, {{1300, 700}}, 101);
}

TEST(FrequencyEstimateStochasticTest, KaryRandomizedResponseCovers) {
  ExpectCoverage(LdpMechanism::kKrr, 1.0, {{1000, 600, 300, 100}}, 102);
}

TEST(FrequencyEstimateStochasticTest, OptimizedUnaryEncodingCovers) {
  ExpectCoverage(LdpMechanism::kOue, 1.0, {{1000, 600, 300, 100}}, 103);
}

TEST(FrequencyEstimateStochasticTest, OptimizedLocalHashingCovers) {
  ExpectCoverage(LdpMechanism::kOlh, 1.0, {{1000, 600, 300, 100}}, 104);
}

}  // namespace
}  // namespace dpq::dp::ldp
