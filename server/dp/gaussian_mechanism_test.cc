#include <cmath>
#include <limits>

#include "gtest/gtest.h"
#include "server/dp/additive_mechanism.h"
#include "server/dp/analytic_gaussian.h"
#include "server/dp/testing/seeded_random.h"

namespace dpq::dp {
namespace {

TEST(GaussianMechanismTest, RejectsBadParametersNamingThem) {
  EXPECT_NE(CreateGaussianMechanism(0, 1e-5, 1).status().message().find("epsilon"),
            absl::string_view::npos);
  EXPECT_NE(CreateGaussianMechanism(1, 0, 1).status().message().find("delta"),
            absl::string_view::npos);
  EXPECT_NE(CreateGaussianMechanism(1, 1, 1).status().message().find("delta"),
            absl::string_view::npos);
  EXPECT_NE(CreateGaussianMechanism(1, 1e-5, -1).status().message().find("sensitivity"),
            absl::string_view::npos);
  EXPECT_EQ(CreateGaussianMechanism(1, std::nan(""), 1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(GaussianMechanismTest, SigmaIsAnalyticForRoundedSensitivity) {
  auto m = CreateGaussianMechanism(1, 1e-5, 2);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)->name(), "gaussian");
  EXPECT_EQ((*m)->delta(), 1e-5);
  const double gamma = (*m)->granularity();
  auto exact = AnalyticGaussianSigma(1, 1e-5, 2 + gamma);
  ASSERT_TRUE(exact.ok());
  EXPECT_GE((*m)->noise_scale(), *exact);
  // 3.7306316348159374 * 2 from the reference, inflated by at most ~2^-19 in total.
  EXPECT_NEAR((*m)->noise_scale(), 2 * 3.7306316348159374, 2 * 3.74 * 0x1p-18);
}

TEST(GaussianMechanismTest, OutputsLieOnTheGrid) {
  auto m = CreateGaussianMechanism(0.5, 1e-6, 1);
  ASSERT_TRUE(m.ok());
  SeededRandom rng(13);
  for (int i = 0; i < 100; ++i) {
    auto out = (*m)->AddNoise(-7.25, rng);
    ASSERT_TRUE(out.ok());
    const double steps = *out / (*m)->granularity();
    EXPECT_EQ(steps, std::round(steps));
  }
  EXPECT_EQ((*m)->AddNoise(std::nan(""), rng).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(GaussianMechanismTest, ConfidenceHalfWidthMatchesNormalQuantile) {
  auto m = CreateGaussianMechanism(1, 1e-5, 1);
  ASSERT_TRUE(m.ok());
  auto h = (*m)->ConfidenceHalfWidth(0.95);
  ASSERT_TRUE(h.ok());
  EXPECT_NEAR(*h, 1.959963984540054 * (*m)->noise_scale(), 1e-4);
}

}  // namespace
}  // namespace dpq::dp
