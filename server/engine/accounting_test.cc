#include "server/engine/accounting.h"

#include <cmath>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dpq::engine {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

const StillWanted kWanted = [] { return absl::OkStatus(); };

template <typename T>
std::string Why(const absl::StatusOr<T>& result) {
  return std::string(result.status().message());
}

TEST(AccountingTest, PricesDeclaredEvents) {
  absl::StatusOr<dp::accounting::Price> price =
      Accounting().Price("basic", 1e-6, {"laplace:scale=10,count=10"}, kWanted);
  ASSERT_TRUE(price.ok()) << price.status();
  EXPECT_NEAR(price->epsilon, 1.0, 1e-9);  // 10 Laplace releases of sensitivity 1 at scale 10
}

TEST(AccountingTest, EachRefusalNamesItsRequestField) {
  const Accounting accounting;
  EXPECT_THAT(Why(accounting.Price("", 1e-6, {"laplace:scale=1"}, kWanted)),
              StartsWith("accountant is required"));
  EXPECT_THAT(Why(accounting.Price("rdp", 2, {"laplace:scale=1"}, kWanted)), HasSubstr("delta"));
  EXPECT_THAT(Why(accounting.Price("rdp", 1e-6, {}, kWanted)), StartsWith("events must list"));
  EXPECT_THAT(Why(accounting.Price("rdp", 1e-6, {"laplace:scale=1", "nonsense"}, kWanted)),
              StartsWith("events[1] "));
  EXPECT_THAT(Why(accounting.Calibrate("basic", 1, 1e-6, 0.01, 100, kWanted)),
              HasSubstr("for calibration"));
  EXPECT_THAT(Why(accounting.Calibrate("rdp", 1, 1e-6, 0, 100, kWanted)),
              StartsWith("q must be in (0, 1]"));
  EXPECT_THAT(Why(accounting.Calibrate("rdp", 1, 1e-6, 0.01, 0, kWanted)),
              StartsWith("steps must be in [1, "));
}

TEST(AccountingTest, PldRefusesTooManyDistinctEvents) {
  std::vector<std::string> specs;
  for (int i = 1; i <= 101; ++i) specs.push_back("laplace:scale=" + std::to_string(i));
  EXPECT_EQ(Accounting().Price("pld", 1e-6, specs, kWanted).status().code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(AccountingTest, ACallerThatGaveUpGetsItsReasonNotAnAnswer) {
  const StillWanted gone = [] { return absl::DeadlineExceededError("deadline passed"); };
  EXPECT_EQ(Accounting().Price("rdp", 1e-6, {"laplace:scale=1"}, gone).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(Accounting().Calibrate("rdp", 1, 1e-6, 0.01, 100, gone).status().code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST(AccountingTest, TheCalibratedMultiplierAchievesAtMostTheTarget) {
  absl::StatusOr<Calibration> c = Accounting().Calibrate("rdp", 1.0, 1e-5, 0.01, 1000, kWanted);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_GT(c->noise_multiplier, 0);
  EXPECT_LE(c->epsilon, 1.0);
  EXPECT_TRUE(std::isfinite(c->epsilon));
}

}  // namespace
}  // namespace dpq::engine
