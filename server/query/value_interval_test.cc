#include "server/query/value_interval.h"

#include <cmath>
#include <functional>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace dpq::query {
namespace {

using ::dpq::testing::IsOk;
using ::dpq::testing::StatusIs;
using ::testing::HasSubstr;

ValueInterval I(double lower, double upper) { return {lower, upper}; }

void ExpectInterval(const ValueInterval& got, double lower, double upper) {
  EXPECT_EQ(got.lower, lower) << got.ToString();
  EXPECT_EQ(got.upper, upper) << got.ToString();
}

TEST(ValueIntervalTest, ExactOperationsKeepExactEnds) {
  ExpectInterval(Add(I(0, 120), PointInterval(1)), 1, 121);
  ExpectInterval(Subtract(I(0, 120), I(-5, 5)), -5, 125);
  ExpectInterval(Multiply(I(-2, 3), I(4, 5)), -10, 15);
  ExpectInterval(Multiply(I(-2, 3), I(-7, 5)), -21, 15);
  ExpectInterval(Negate(I(-2, 3)), -3, 2);
  ExpectInterval(Abs(I(-7, 3)), 0, 7);
  ExpectInterval(Abs(I(-7, -3)), 3, 7);
  ExpectInterval(Least(I(0, 10), I(5, 6)), 0, 6);
  ExpectInterval(Greatest(I(0, 10), I(5, 6)), 5, 10);
  ExpectInterval(Hull(I(0, 1), I(5, 6)), 0, 6);
  ASSERT_OK_AND_ASSIGN(ValueInterval q, Divide(I(0, 1000), I(2, 4)));
  ExpectInterval(q, 0, 500);
}

TEST(ValueIntervalTest, InexactEndsMoveOutward) {
  // 0.1 + 0.2 rounds up to 0.30000000000000004: the lower end may not be that rounded value.
  const ValueInterval sum = Add(PointInterval(0.1), PointInterval(0.2));
  EXPECT_LT(sum.lower, sum.upper);
  EXPECT_EQ(sum.upper, 0.1 + 0.2);  // rounded up already
  ASSERT_OK_AND_ASSIGN(ValueInterval third, Divide(PointInterval(1), PointInterval(3)));
  EXPECT_LT(third.lower, third.upper);
  EXPECT_TRUE(third.Contains(1.0 / 3));
}

TEST(ValueIntervalTest, DivisionByAnIntervalHoldingZeroIsRefused) {
  EXPECT_THAT(Divide(I(1, 2), I(-1, 1)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("include 0")));
  EXPECT_THAT(Divide(I(1, 2), I(0, 1)).status(), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Divide(I(1, 2), I(-3, 0)).status(), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Divide(I(1, 2), I(-3, -1)), IsOk());
}

TEST(ValueIntervalTest, DerivedBoundsBeyondTheBoundLimitAreRefused) {
  EXPECT_THAT(CheckDerivedBounds(I(-1e15, 1e15), "SUM(a * b)"), IsOk());
  EXPECT_THAT(CheckDerivedBounds(Multiply(I(0, 1e10), I(0, 1e10)), "SUM(a * b)"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("SUM(a * b)")));
  ASSERT_OK_AND_ASSIGN(ValueInterval tiny_divisor, Divide(I(1, 2), I(1e-300, 1)));
  EXPECT_THAT(CheckDerivedBounds(tiny_divisor, "AVG(a / b)"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("every intermediate value")));
}

// The property the bounds are for: for values drawn inside the inputs' intervals, the exact
// result of each operation lies inside the derived interval. The double result of the same
// operation is checked, and, where it was rounded, the exact result is checked through long
// double (64-bit mantissa: exact for sums, and a tighter value than double for the rest).
class ValueIntervalPropertyTest : public ::testing::Test {
 protected:
  double Inside(const ValueInterval& v) {
    switch (std::uniform_int_distribution<int>(0, 3)(gen_)) {
      case 0: return v.lower;
      case 1: return v.upper;
      default: return std::uniform_real_distribution<double>(v.lower, v.upper)(gen_);
    }
  }
  ValueInterval RandomInterval() {
    const double scales[] = {1, 1e-3, 120, 1e6, 1e12, 0.1};
    const double scale = scales[std::uniform_int_distribution<int>(0, 5)(gen_)];
    double a = std::uniform_real_distribution<double>(-1, 1)(gen_) * scale;
    double b = std::uniform_real_distribution<double>(-1, 1)(gen_) * scale;
    if (std::uniform_int_distribution<int>(0, 3)(gen_) == 0) a = std::round(a);
    if (std::uniform_int_distribution<int>(0, 3)(gen_) == 0) b = std::round(b);
    return I(std::min(a, b), std::max(a, b));
  }
  // `divisor`: `b` never holds 0 (a division by such an interval is refused, tested above).
  void Check(const std::function<ValueInterval(ValueInterval, ValueInterval)>& interval_op,
             const std::function<long double(long double, long double)>& exact_op,
             bool divisor = false) {
    for (int trial = 0; trial < 20000; ++trial) {
      const ValueInterval a = RandomInterval();
      ValueInterval b = RandomInterval();
      while (divisor && b.ContainsZero()) b = RandomInterval();
      const ValueInterval out = interval_op(a, b);
      for (int k = 0; k < 8; ++k) {
        const double x = Inside(a);
        const double y = Inside(b);
        const long double exact = exact_op(x, y);
        ASSERT_LE(static_cast<long double>(out.lower), exact)
            << a.ToString() << " " << b.ToString() << " x=" << x << " y=" << y;
        ASSERT_GE(static_cast<long double>(out.upper), exact)
            << a.ToString() << " " << b.ToString() << " x=" << x << " y=" << y;
      }
    }
  }
  std::mt19937_64 gen_{20261205};
};

TEST_F(ValueIntervalPropertyTest, SumsLieInside) {
  Check(Add, [](long double x, long double y) { return x + y; });
  Check(Subtract, [](long double x, long double y) { return x - y; });
}

TEST_F(ValueIntervalPropertyTest, ProductsLieInside) {
  Check(Multiply, [](long double x, long double y) { return x * y; });
}

TEST_F(ValueIntervalPropertyTest, QuotientsLieInside) {
  Check([](ValueInterval a, ValueInterval b) { return *Divide(a, b); },
        [](long double x, long double y) { return x / y; }, /*divisor=*/true);
}

TEST_F(ValueIntervalPropertyTest, LeastGreatestAbsAndHullLieInside) {
  Check(Least, [](long double x, long double y) { return std::min(x, y); });
  Check(Greatest, [](long double x, long double y) { return std::max(x, y); });
  Check(Hull, [this](long double x, long double y) {
    return std::uniform_int_distribution<int>(0, 1)(gen_) ? x : y;
  });
  Check([](ValueInterval a, ValueInterval) { return Abs(a); },
        [](long double x, long double) { return std::fabs(x); });
}

}  // namespace
}  // namespace dpq::query
