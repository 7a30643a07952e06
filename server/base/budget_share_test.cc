#include "server/base/budget_share.h"

#include <cmath>
#include <random>

#include "gtest/gtest.h"

namespace dpq {
namespace {

// Exact check of share * parts <= total with long double (64-bit mantissa: the product of a
// 53-bit share and parts < 2^11 is exact).
bool AtMost(double share, int parts, double total) {
  return static_cast<long double>(share) * parts <= static_cast<long double>(total);
}

TEST(BudgetShareTest, ThirdsNeverAddUpToMoreThanTheTotal) {
  // 5 / 3 rounds up to nearest: three of them exceed 5 (so do 0.1 / 7 and seven of them).
  EXPECT_FALSE(AtMost(5.0 / 3, 3, 5.0));
  EXPECT_TRUE(AtMost(ShareOf(5.0, 3), 3, 5.0));
  EXPECT_EQ(ShareOf(5.0, 3), std::nextafter(5.0 / 3, 0.0));
  EXPECT_FALSE(AtMost(0.1 / 7, 7, 0.1));
  EXPECT_TRUE(AtMost(ShareOf(0.1, 7), 7, 0.1));
}

TEST(BudgetShareTest, SharesAreTheLargestDoubleNotAboveTheExactShare) {
  std::mt19937_64 gen(7);
  std::uniform_real_distribution<double> log10(-12, 6);
  int rounded_down = 0;
  for (int i = 0; i < 20000; ++i) {
    const double total = std::pow(10.0, log10(gen));
    for (int parts : {2, 3, 5, 7, 10, 1000}) {
      const double s = ShareOf(total, parts);
      ASSERT_TRUE(AtMost(s, parts, total)) << total << " / " << parts;
      ASSERT_FALSE(AtMost(std::nextafter(s, 1e300), parts, total)) << total << " / " << parts;
      rounded_down += s != total / parts;
    }
  }
  EXPECT_GT(rounded_down, 0);  // the nearest quotient is sometimes too large: the test can fail
}

TEST(BudgetShareTest, HalvesAreExact) {
  EXPECT_EQ(ShareOf(1.0, 2), 0.5);
  EXPECT_EQ(ShareOf(0.3, 2), 0.15);
  EXPECT_EQ(ShareOf(0.0, 3), 0.0);
}

}  // namespace
}  // namespace dpq
