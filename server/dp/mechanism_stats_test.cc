// Stochastic: moments and CI coverage of the mechanisms, exponential-mechanism frequencies and
// LDP estimators. Fixed seeds; every tolerance is stated next to its check (k standard errors).
#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "server/dp/additive_mechanism.h"
#include "server/dp/exponential_mechanism.h"
#include "server/dp/randomized_response.h"
#include "server/dp/testing/seeded_random.h"
#include "server/dp/testing/statistics.h"

namespace dpq::dp {
namespace {

// Mean within 6 standard errors; second moment within 6 standard errors using Var(Z^2) =
// E Z^4 - (E Z^2)^2 (Laplace: 20 b^4; Gaussian: 2 sigma^4).
TEST(MechanismStatsTest, LaplaceAndGaussianMoments) {
  struct Case {
    std::unique_ptr<AdditiveMechanism> m;
    double var, var_of_sq;
  };
  std::vector<Case> cases;
  auto lap = CreateLaplaceMechanism(0.7, 2);
  ASSERT_TRUE(lap.ok());
  const double b = (*lap)->noise_scale();
  cases.push_back({std::move(*lap), 2 * b * b, 20 * b * b * b * b});
  auto gau = CreateGaussianMechanism(0.5, 1e-6, 3);
  ASSERT_TRUE(gau.ok());
  const double s = (*gau)->noise_scale();
  cases.push_back({std::move(*gau), s * s, 2 * s * s * s * s});
  SeededRandom rng(400);
  const int n = 60000;
  const double truth = 1234.5;
  for (const auto& c : cases) {
    double sum = 0, sum_sq = 0;
    for (int i = 0; i < n; ++i) {
      const double noise = *c.m->AddNoise(truth, rng) - truth;
      sum += noise;
      sum_sq += noise * noise;
    }
    EXPECT_NEAR(sum / n, 0, 6 * std::sqrt(c.var / n)) << c.m->name();
    EXPECT_NEAR(sum_sq / n, c.var, 6 * std::sqrt(c.var_of_sq / n)) << c.m->name();
  }
}

// Coverage of the 95% interval: binomial, within 5 standard errors sqrt(0.95*0.05/n) (the discrete
// interval covers slightly more than 95%, by < 1e-5 on these grids).
TEST(MechanismStatsTest, NinetyFivePercentIntervalsCover) {
  auto lap = CreateLaplaceMechanism(1, 1);
  auto gau = CreateGaussianMechanism(1, 1e-5, 1);
  ASSERT_TRUE(lap.ok() && gau.ok());
  SeededRandom rng(401);
  const int n = 40000;
  for (const AdditiveMechanism* m : {lap->get(), gau->get()}) {
    const double h = *m->ConfidenceHalfWidth(0.95);
    int covered = 0;
    for (int i = 0; i < n; ++i) covered += std::fabs(*m->AddNoise(10, rng) - 10) <= h;
    EXPECT_NEAR(static_cast<double>(covered) / n, 0.95, 5 * std::sqrt(0.95 * 0.05 / n))
        << m->name();
  }
}

// Selection frequencies vs exp(eps u / (2 Delta)) normalised, including utilities near 1e12 and
// epsilon = 100; chi-square at the 1e-6 level.
TEST(MechanismStatsTest, ExponentialMechanismFrequencies) {
  struct Case {
    double epsilon;
    std::vector<double> utilities;
  };
  const std::vector<Case> cases = {
      {2, {1e12, 1e12 - 1, 1e12 - 3, 1e12 - 2}},
      {100, {-1e12, 1e12 - 0.0625, 1e12, 1e12 - 0.03125}},
      {1, {3, 1, 0, 2, 5}},
  };
  SeededRandom rng(402);
  for (const auto& c : cases) {
    auto em = ExponentialMechanism::Create(c.epsilon, 1);
    ASSERT_TRUE(em.ok());
    double best = c.utilities[0];
    for (double u : c.utilities) best = std::fmax(best, u);
    std::vector<double> probs;
    double total = 0;
    for (double u : c.utilities) {
      probs.push_back(std::exp(c.epsilon * (u - best) / 2));
      total += probs.back();
    }
    // Merge candidates with negligible probability into no bin: they must simply never appear.
    std::vector<int64_t> counts(probs.size(), 0);
    const int n = 50000;
    for (int i = 0; i < n; ++i) ++counts[*em->Select(c.utilities, rng)];
    std::vector<int64_t> obs;
    std::vector<double> p;
    for (size_t i = 0; i < probs.size(); ++i) {
      if (probs[i] / total < 1e-12) {
        EXPECT_EQ(counts[i], 0);
        continue;
      }
      obs.push_back(counts[i]);
      p.push_back(probs[i] / total);
    }
    EXPECT_LT(testing::ChiSquare(obs, p),
              testing::ChiSquareCritical(static_cast<int>(p.size()) - 1))
        << "epsilon " << c.epsilon;
  }
}

// LDP: estimates unbiased (within 6 predicted standard deviations on one large population) and
// the empirical variance over R repetitions within 40% of the formula (the sample variance of
// R = 400 normal estimates has relative standard error sqrt(2/399) = 7%; 40% is > 5 of those).
TEST(MechanismStatsTest, LocalDpEstimatorsAreUnbiasedWithPredictedVariance) {
  const std::vector<int64_t> truth = {400, 300, 150, 100, 50};  // n = 1000, k = 5
  int64_t n = 0;
  std::vector<int64_t> values;
  for (size_t v = 0; v < truth.size(); ++v) {
    n += truth[v];
    for (int64_t i = 0; i < truth[v]; ++i) values.push_back(static_cast<int64_t>(v));
  }
  auto krr = KaryRandomizedResponse::Create(1.5, 5);
  auto oue = OptimizedUnaryEncoding::Create(1.5, 5);
  ASSERT_TRUE(krr.ok() && oue.ok());
  SeededRandom rng(403);
  const int reps = 400;
  for (int protocol = 0; protocol < 2; ++protocol) {
    const PureProtocol pp = protocol == 0 ? krr->protocol() : oue->protocol();
    std::vector<double> sum(5, 0), sum_sq(5, 0);
    for (int r = 0; r < reps; ++r) {
      std::vector<int64_t> support(5, 0);
      for (int64_t v : values) {
        if (protocol == 0) {
          ++support[*krr->Randomize(v, rng)];
        } else {
          const std::vector<bool> bits = *oue->Randomize(v, rng);
          for (int j = 0; j < 5; ++j) support[j] += bits[j];
        }
      }
      for (int j = 0; j < 5; ++j) {
        const double est = pp.EstimateCount(static_cast<double>(support[j]), n);
        sum[j] += est;
        sum_sq[j] += est * est;
      }
    }
    for (int j = 0; j < 5; ++j) {
      const double predicted_var = pp.EstimatorVariance(n, static_cast<double>(truth[j]));
      const double mean = sum[j] / reps;
      const double var = sum_sq[j] / reps - mean * mean;
      EXPECT_NEAR(mean, static_cast<double>(truth[j]), 6 * std::sqrt(predicted_var / reps))
          << "protocol " << protocol << " value " << j;
      EXPECT_NEAR(var / predicted_var, 1.0, 0.4) << "protocol " << protocol << " value " << j;
    }
  }
}

}  // namespace
}  // namespace dpq::dp
