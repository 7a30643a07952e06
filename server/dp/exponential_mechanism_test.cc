#include "server/dp/exponential_mechanism.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "server/dp/testing/seeded_random.h"

namespace dpq::dp {
namespace {

TEST(ExponentialMechanismTest, RejectsBadParametersNamingThem) {
  EXPECT_NE(ExponentialMechanism::Create(-1, 1).status().message().find("epsilon"),
            absl::string_view::npos);
  EXPECT_NE(ExponentialMechanism::Create(1, 0).status().message().find("sensitivity"),
            absl::string_view::npos);
  auto em = ExponentialMechanism::Create(1, 1);
  ASSERT_TRUE(em.ok());
  SeededRandom rng(1);
  EXPECT_NE(em->Select({}, rng).status().message().find("utilities"), absl::string_view::npos);
  const std::vector<double> bad = {1, std::nan("")};
  EXPECT_EQ(em->Select(bad, rng).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ExponentialMechanismTest, HugeUtilitiesAndEpsilonDoNotOverflow) {
  auto em = ExponentialMechanism::Create(100, 1);
  ASSERT_TRUE(em.ok());
  SeededRandom rng(2);
  const std::vector<double> u = {-1e12, 1e12, 0, 1e12 - 1};
  // exp(50 * (u - max)): candidate 1 has probability 1 - e^-50 - ...; others are invisible.
  for (int i = 0; i < 200; ++i) EXPECT_EQ(*em->Select(u, rng), 1u);
}

TEST(ExponentialMechanismTest, SingleCandidateIsSelected) {
  auto em = ExponentialMechanism::Create(1, 1);
  ASSERT_TRUE(em.ok());
  SeededRandom rng(3);
  const std::vector<double> u = {42};
  EXPECT_EQ(*em->Select(u, rng), 0u);
}

}  // namespace
}  // namespace dpq::dp
