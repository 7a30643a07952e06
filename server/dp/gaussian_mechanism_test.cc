#include <cmath>
#include <cstdint>
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

// Regression pin: noise_scale, granularity and privacy_sensitivity recorded (exactly, as hex
// floats) from the implementation before `changed_coordinates` existed. The default and an
// explicit changed_coordinates = 1 must both reproduce them bit for bit.
TEST(GaussianMechanismTest, OneChangedCoordinateKeepsTheScalarCalibration) {
  struct Pin {
    double epsilon, delta, sensitivity, noise_scale, granularity, privacy_sensitivity;
  };
  constexpr Pin kPins[] = {
      {1e-3, 1e-12, 1.0, 0x1.5244eaf332609p+12, 0x1p-20, 0x1.00001p+0},
      {0.1, 1e-6, 3.7e-5, 0x1.60219c2b14df3p-10, 0x1p-35, 0x1.3660fp-15},
      {1.0, 1e-6, 1.0, 0x1.0e61347b0c363p+2, 0x1p-20, 0x1.00001p+0},
      {1.0, 1e-3, 100.0, 0x1.0177428d872cbp+8, 0x1p-14, 0x1.90001p+6},
      {3.0, 1e-12, 2.0, 0x1.243b26d11e684p+2, 0x1p-19, 0x1.00001p+1},
      {10.0, 1e-6, 100.0, 0x1.b0dea6a195744p+5, 0x1p-14, 0x1.90001p+6},
  };
  for (const Pin& p : kPins) {
    for (const int64_t m_or_default : {int64_t{0}, int64_t{1}}) {
      auto m = m_or_default == 0 ? CreateGaussianMechanism(p.epsilon, p.delta, p.sensitivity)
                                 : CreateGaussianMechanism(p.epsilon, p.delta, p.sensitivity, 1);
      ASSERT_TRUE(m.ok()) << m.status();
      EXPECT_EQ((*m)->noise_scale(), p.noise_scale) << p.epsilon << " " << p.delta;
      EXPECT_EQ((*m)->granularity(), p.granularity) << p.epsilon << " " << p.delta;
      EXPECT_EQ((*m)->privacy_sensitivity(), p.privacy_sensitivity) << p.epsilon << " " << p.delta;
    }
  }
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
