#include "server/dp/accuracy.h"

#include <cmath>

#include "gtest/gtest.h"

namespace dpq::dp {
namespace {

TEST(AccuracyTest, LaplaceInverseRoundTrips) {
  auto h = LaplaceHalfWidth(0.5, 1, 0.95);
  ASSERT_TRUE(h.ok());
  auto eps = LaplaceEpsilonForHalfWidth(*h, 1, 0.95);
  ASSERT_TRUE(eps.ok()) << eps.status();
  EXPECT_NEAR(*eps, 0.5, 1e-4);
  // The returned epsilon achieves the target.
  EXPECT_LE(*LaplaceHalfWidth(*eps, 1, 0.95), *h);
}

TEST(AccuracyTest, GaussianInverseRoundTrips) {
  auto h = GaussianHalfWidth(1, 1e-6, 2, 0.9);
  ASSERT_TRUE(h.ok());
  auto eps = GaussianEpsilonForHalfWidth(*h, 1e-6, 2, 0.9);
  ASSERT_TRUE(eps.ok()) << eps.status();
  EXPECT_NEAR(*eps, 1, 1e-4);
  EXPECT_LE(*GaussianHalfWidth(*eps, 1e-6, 2, 0.9), *h);
}

TEST(AccuracyTest, RejectsBadTargetsNamingThem) {
  EXPECT_NE(LaplaceEpsilonForHalfWidth(0, 1, 0.95).status().message().find("half_width"),
            absl::string_view::npos);
  EXPECT_NE(LaplaceEpsilonForHalfWidth(1, 1, 1.5).status().message().find("confidence"),
            absl::string_view::npos);
  EXPECT_NE(GaussianEpsilonForHalfWidth(1, 0, 1, 0.9).status().message().find("delta"),
            absl::string_view::npos);
  // Unreachable precision: OUT_OF_RANGE.
  EXPECT_EQ(LaplaceEpsilonForHalfWidth(1e-9, 1, 0.95).status().code(),
            absl::StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace dpq::dp
