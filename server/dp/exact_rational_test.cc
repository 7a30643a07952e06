#include "server/dp/exact_rational.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace dpq::dp {
namespace {

TEST(ExactRationalTest, RepresentsDyadicValuesExactly) {
  auto r = RationalAtLeast(0.75, "scale");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->num, 3u);
  EXPECT_EQ(r->den, 4u);
  r = RationalAtLeast(1e6, "scale");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->num, 1000000u);
  EXPECT_EQ(r->den, 1u);
}

TEST(ExactRationalTest, NonDyadicValueIsTheDoubleExactly) {
  auto r = RationalAtLeast(0.1, "scale");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(static_cast<double>(r->num) / static_cast<double>(r->den), 0.1);
}

TEST(ExactRationalTest, TinyValueRoundsUpOrDown) {
  auto up = RationalAtLeast(1e-30, "scale");
  ASSERT_TRUE(up.ok());
  EXPECT_EQ(up->num, 1u);
  EXPECT_EQ(up->den, kMaxRationalPart);
  EXPECT_EQ(RationalAtMost(1e-30, "x").status().code(), absl::StatusCode::kOutOfRange);
}

TEST(ExactRationalTest, RejectsBadValuesNamingTheParameter) {
  for (double bad : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    auto r = RationalAtLeast(bad, "scale");
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("scale"), absl::string_view::npos);
  }
  EXPECT_EQ(RationalAtLeast(1e30, "scale").status().code(), absl::StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace dpq::dp
