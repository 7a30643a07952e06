#include "server/dp/bernoulli_exp.h"

#include <cmath>
#include <utility>

#include "gtest/gtest.h"
#include "server/dp/testing/seeded_random.h"

namespace dpq::dp {
namespace {

TEST(BernoulliExpNegTest, ZeroExponentIsAlwaysTrue) {
  SeededRandom rng(1);
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(BernoulliExpNeg(0, 7, rng));
}

TEST(BernoulliExpNegTest, HugeExponentIsFalse) {
  SeededRandom rng(2);
  // exp(-2^100): a true would be a bug, not bad luck.
  for (int i = 0; i < 1000; ++i) {
    EXPECT_FALSE(BernoulliExpNeg(static_cast<uint128>(1) << 100, 1, rng));
  }
}

// Frequencies within 6 standard errors sqrt(p(1-p)/n) (false-failure rate ~ 2e-9 per case).
TEST(BernoulliExpNegTest, FrequencyMatchesExpNeg) {
  SeededRandom rng(3);
  const int n = 40000;
  const std::pair<int, int> cases[] = {{1, 2}, {1, 1}, {37, 10}, {1, 1000}};
  for (const auto& [num, den] : cases) {
    int hits = 0;
    for (int i = 0; i < n; ++i) hits += BernoulliExpNeg(num, den, rng);
    const double p = std::exp(-static_cast<double>(num) / den);
    EXPECT_NEAR(static_cast<double>(hits) / n, p, 6 * std::sqrt(p * (1 - p) / n))
        << num << "/" << den;
  }
}

TEST(UniformBelowTest, StaysInRange) {
  SeededRandom rng(4);
  for (uint64_t n : {1ULL, 2ULL, 3ULL, 1000ULL, (1ULL << 63) + 5}) {
    for (int i = 0; i < 1000; ++i) EXPECT_LT(UniformBelow(n, rng), n);
  }
  const uint128 big = (static_cast<uint128>(3) << 70) + 11;
  for (int i = 0; i < 1000; ++i) EXPECT_LT(UniformBelow128(big, rng), big);
}

}  // namespace
}  // namespace dpq::dp
