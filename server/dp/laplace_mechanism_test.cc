#include <cmath>
#include <limits>

#include "gtest/gtest.h"
#include "server/dp/additive_mechanism.h"
#include "server/dp/testing/seeded_random.h"

namespace dpq::dp {
namespace {

TEST(LaplaceMechanismTest, RejectsBadParametersNamingThem) {
  const double nan = std::nan("");
  const double inf = std::numeric_limits<double>::infinity();
  for (double eps : {0.0, -1.0, nan, inf}) {
    auto m = CreateLaplaceMechanism(eps, 1);
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(m.status().message().find("epsilon"), absl::string_view::npos);
  }
  for (double sens : {0.0, -1.0, nan, inf}) {
    auto m = CreateLaplaceMechanism(1, sens);
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(m.status().message().find("sensitivity"), absl::string_view::npos);
  }
}

TEST(LaplaceMechanismTest, ReportsParametersAndPowerOfTwoGrid) {
  auto m = CreateLaplaceMechanism(0.5, 3);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)->name(), "laplace");
  EXPECT_EQ((*m)->epsilon(), 0.5);
  EXPECT_EQ((*m)->delta(), 0);
  EXPECT_EQ((*m)->sensitivity(), 3);
  const double gamma = (*m)->granularity();
  int exponent = 0;
  EXPECT_EQ(std::frexp(gamma, &exponent), 0.5);  // power of two
  EXPECT_LE(gamma, 3 * 0x1p-20);
  // b = (Delta + gamma)/epsilon, never below Delta/epsilon, inflated by at most ~2^-20.
  EXPECT_GE((*m)->noise_scale(), (3 + gamma) / 0.5);
  EXPECT_LE((*m)->noise_scale(), 6 * (1 + 0x1p-19));
}

TEST(LaplaceMechanismTest, OutputsLieOnTheGrid) {
  auto m = CreateLaplaceMechanism(1, 1);
  ASSERT_TRUE(m.ok());
  SeededRandom rng(10);
  const double gamma = (*m)->granularity();
  for (int i = 0; i < 100; ++i) {
    auto out = (*m)->AddNoise(12.3456789, rng);
    ASSERT_TRUE(out.ok());
    const double steps = *out / gamma;
    EXPECT_EQ(steps, std::round(steps));
  }
}

TEST(LaplaceMechanismTest, RejectsNonFiniteAndHugeValues) {
  auto m = CreateLaplaceMechanism(1, 1);
  ASSERT_TRUE(m.ok());
  SeededRandom rng(11);
  EXPECT_EQ((*m)->AddNoise(std::nan(""), rng).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*m)->AddNoise(std::numeric_limits<double>::infinity(), rng).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*m)->AddNoise(1e300, rng).status().code(), absl::StatusCode::kOutOfRange);
}

TEST(LaplaceMechanismTest, ConfidenceHalfWidthMatchesContinuousLaplace) {
  auto m = CreateLaplaceMechanism(1, 1);
  ASSERT_TRUE(m.ok());
  // Continuous Laplace: h = b ln(1/(1-c)); the discrete version on a 2^-20 grid agrees to ~1e-5.
  auto h = (*m)->ConfidenceHalfWidth(0.95);
  ASSERT_TRUE(h.ok());
  EXPECT_NEAR(*h, (*m)->noise_scale() * std::log(20.0), 1e-4);
  EXPECT_EQ((*m)->ConfidenceHalfWidth(1.0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE((*m)->ConfidenceHalfWidth(0).status().message().find("confidence"),
            absl::string_view::npos);
}

TEST(LaplaceMechanismTest, ExtremeEpsilonsStillWork) {
  for (double eps : {1e-6, 100.0}) {
    auto m = CreateLaplaceMechanism(eps, 1);
    ASSERT_TRUE(m.ok()) << eps << " " << m.status();
    SeededRandom rng(12);
    EXPECT_TRUE((*m)->AddNoise(5, rng).ok());
    EXPECT_GE((*m)->noise_scale(), 1 / eps);
  }
}

}  // namespace
}  // namespace dpq::dp
