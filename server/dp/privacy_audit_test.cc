// Stochastic: empirical privacy audit. For each mechanism, run it n times on two neighbouring
// inputs, and for every threshold event S compute the Clopper-Pearson lower bound
//   eps_lb = ln((P1_lower - delta) / P0_upper)
// (one-sided level alpha/#events each, Bonferroni, alpha = 1e-3). DP implies P1 <= e^eps P0 + delta
// for every S, so eps_lb > eps would be a proven violation (up to the 1e-3 false-alarm rate).
// We also check the audit has power: the best bound reaches a stated fraction of eps.
#include <cmath>
#include <functional>
#include <vector>

#include "gtest/gtest.h"
#include "server/dp/additive_mechanism.h"
#include "server/dp/exponential_mechanism.h"
#include "server/dp/randomized_response.h"
#include "server/dp/testing/seeded_random.h"
#include "server/dp/testing/statistics.h"

namespace dpq::dp {
namespace {

constexpr double kAlpha = 1e-3;

// Best eps lower bound over events {y >= t} and {y < t} in both directions.
double AuditEpsilon(const std::vector<double>& out0, const std::vector<double>& out1,
                    const std::vector<double>& thresholds, double delta) {
  const int64_t n = static_cast<int64_t>(out0.size());
  const double alpha = kAlpha / (4.0 * thresholds.size());
  double best = -INFINITY;
  for (double t : thresholds) {
    int64_t above0 = 0, above1 = 0;
    for (double y : out0) above0 += y >= t;
    for (double y : out1) above1 += y >= t;
    const int64_t pairs[4][2] = {
        {above1, above0}, {above0, above1}, {n - above1, n - above0}, {n - above0, n - above1}};
    for (const auto& pr : pairs) {
      const double num = testing::ClopperPearsonLower(pr[0], n, alpha) - delta;
      const double den = testing::ClopperPearsonUpper(pr[1], n, alpha);
      if (num > 0 && den > 0) best = std::fmax(best, std::log(num / den));
    }
  }
  return best;
}

std::vector<double> Collect(const std::function<double()>& f, int n) {
  std::vector<double> out(n);
  for (double& y : out) y = f();
  return out;
}

TEST(PrivacyAuditTest, LaplaceMechanismRespectsEpsilon) {
  const double eps = 1.0;
  auto m = CreateLaplaceMechanism(eps, 1);
  ASSERT_TRUE(m.ok());
  SeededRandom rng(500);
  const int n = 200000;
  auto out0 = Collect([&] { return *(*m)->AddNoise(0, rng); }, n);
  auto out1 = Collect([&] { return *(*m)->AddNoise(1, rng); }, n);
  const double lb = AuditEpsilon(out0, out1, {-2, -1, 0, 0.5, 1, 2, 3}, 0);
  EXPECT_LE(lb, eps);
  EXPECT_GE(lb, 0.9 * eps);  // power: tail events have likelihood ratio exactly ~e^eps
}

TEST(PrivacyAuditTest, GaussianMechanismRespectsEpsilonDelta) {
  const double eps = 1.0, delta = 1e-5;
  auto m = CreateGaussianMechanism(eps, delta, 1);
  ASSERT_TRUE(m.ok());
  SeededRandom rng(501);
  const int n = 200000;
  auto out0 = Collect([&] { return *(*m)->AddNoise(0, rng); }, n);
  auto out1 = Collect([&] { return *(*m)->AddNoise(1, rng); }, n);
  const double lb = AuditEpsilon(out0, out1, {-4, -2, 0, 2, 4, 6, 8}, delta);
  EXPECT_LE(lb, eps);
  EXPECT_GE(lb, 0.3 * eps);
}

TEST(PrivacyAuditTest, ExponentialMechanismRespectsEpsilon) {
  const double eps = 2.0;
  auto em = ExponentialMechanism::Create(eps, 1);
  ASSERT_TRUE(em.ok());
  // Neighbouring utility vectors: each utility moves by at most Delta_u = 1.
  const std::vector<double> u0 = {1, 0, 0}, u1 = {0, 1, 1};
  SeededRandom rng(502);
  const int n = 200000;
  auto out0 = Collect([&] { return static_cast<double>(*em->Select(u0, rng)); }, n);
  auto out1 = Collect([&] { return static_cast<double>(*em->Select(u1, rng)); }, n);
  const double lb = AuditEpsilon(out0, out1, {0.5, 1.5}, 0);
  EXPECT_LE(lb, eps);
  EXPECT_GE(lb, 0.5 * eps);
}

TEST(PrivacyAuditTest, RandomizedResponseRespectsEpsilon) {
  const double eps = 1.0;
  auto rr = BinaryRandomizedResponse::Create(eps);
  ASSERT_TRUE(rr.ok());
  SeededRandom rng(503);
  const int n = 200000;
  auto out0 = Collect([&] { return rr->Randomize(false, rng) ? 1.0 : 0.0; }, n);
  auto out1 = Collect([&] { return rr->Randomize(true, rng) ? 1.0 : 0.0; }, n);
  const double lb = AuditEpsilon(out0, out1, {0.5}, 0);
  EXPECT_LE(lb, eps);
  EXPECT_GE(lb, 0.9 * eps);
}

}  // namespace
}  // namespace dpq::dp
