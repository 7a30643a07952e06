#include <cmath>

#include "gtest/gtest.h"
#include "server/dp/randomized_response.h"
#include "server/dp/testing/seeded_random.h"

namespace dpq::dp {
namespace {

TEST(RandomizedResponseTest, RejectsBadParametersNamingThem) {
  EXPECT_NE(KaryRandomizedResponse::Create(0, 3).status().message().find("epsilon"),
            absl::string_view::npos);
  EXPECT_NE(KaryRandomizedResponse::Create(1, 1).status().message().find("domain_size"),
            absl::string_view::npos);
  EXPECT_NE(OptimizedUnaryEncoding::Create(std::nan(""), 3).status().message().find("epsilon"),
            absl::string_view::npos);
  auto rr = KaryRandomizedResponse::Create(1, 3);
  ASSERT_TRUE(rr.ok());
  SeededRandom rng(1);
  EXPECT_NE(rr->Randomize(3, rng).status().message().find("value"), absl::string_view::npos);
  EXPECT_EQ(rr->Randomize(-1, rng).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(RandomizedResponseTest, ProbabilitiesFollowWangEtAl) {
  const double e = std::exp(2.0);
  auto krr = KaryRandomizedResponse::Create(2.0, 4);
  ASSERT_TRUE(krr.ok());
  EXPECT_NEAR(krr->protocol().p, e / (e + 3), 1e-15);
  EXPECT_NEAR(krr->protocol().q, 1 / (e + 3), 1e-15);
  auto oue = OptimizedUnaryEncoding::Create(2.0, 4);
  ASSERT_TRUE(oue.ok());
  EXPECT_EQ(oue->protocol().p, 0.5);
  EXPECT_NEAR(oue->protocol().q, 1 / (e + 1), 1e-15);
  // Binary RR: p / (1 - p) = e^eps.
  auto brr = BinaryRandomizedResponse::Create(2.0);
  ASSERT_TRUE(brr.ok());
  EXPECT_NEAR(brr->protocol().p / brr->protocol().q, e, 1e-12);
}

TEST(RandomizedResponseTest, EstimatorInvertsExpectedSupport) {
  const PureProtocol pp{0.7, 0.1};
  // E[I_v] = c p + (n - c) q for n = 1000, c = 250.
  const double support = 250 * 0.7 + 750 * 0.1;
  EXPECT_NEAR(pp.EstimateCount(support, 1000), 250, 1e-9);
  EXPECT_NEAR(pp.EstimatorVariance(1000, 250), (250 * 0.7 * 0.3 + 750 * 0.1 * 0.9) / (0.6 * 0.6),
              1e-9);
}

TEST(RandomizedResponseTest, HugeEpsilonAlmostAlwaysTellsTheTruth) {
  auto krr = KaryRandomizedResponse::Create(60, 10);
  ASSERT_TRUE(krr.ok());
  SeededRandom rng(2);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(*krr->Randomize(7, rng), 7);
  auto oue = OptimizedUnaryEncoding::Create(60, 10);
  ASSERT_TRUE(oue.ok());
  const auto bits = *oue->Randomize(3, rng);
  for (int j = 0; j < 10; ++j) {
    if (j != 3) {
      EXPECT_FALSE(bits[j]);
    }
  }
}

}  // namespace
}  // namespace dpq::dp
