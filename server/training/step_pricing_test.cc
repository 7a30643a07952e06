#include "server/training/step_pricing.h"

#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/dp/accounting/accountant.h"
#include "server/dp/accounting/privacy_event.h"
#include "server/query/privacy_units.h"

namespace dpq::training {
namespace {

namespace acc = dp::accounting;
using ::testing::HasSubstr;

constexpr acc::AccountantKind kRdp = acc::AccountantKind::kRdp;
constexpr acc::AccountantKind kZcdp = acc::AccountantKind::kZcdp;
constexpr acc::AccountantKind kPld = acc::AccountantKind::kPld;

const RunSpec kRun{256.0 / 60000, 1.1, 1e-5};

double Rdp(const RunSpec& run, int64_t steps) {
  const auto e =
      acc::PrivacyEvent::PoissonSubsampledGaussian(run.sampling_rate, run.noise_multiplier, steps);
  return acc::PriceEvents("rdp", query::MechanismDelta(10'000'000'000'000), {e})->epsilon;
}

TEST(StepPricingTest, RdpLedgerComposesTheStepsThemselves) {
  auto charge = PriceStepReport(kRdp, kRun, 500);
  ASSERT_TRUE(charge.ok()) << charge.status();
  EXPECT_EQ(charge->method, "rdp");
  auto event = acc::ParsePrivacyEvent(charge->events);
  ASSERT_TRUE(event.ok());
  EXPECT_EQ(event->kind, acc::EventKind::kPoissonSubsampledGaussian);
  EXPECT_EQ(event->count, 500);
  EXPECT_EQ(event->sampling_rate, kRun.sampling_rate);
  EXPECT_EQ(event->noise_multiplier, kRun.noise_multiplier);
  // Nominal charge: the RDP epsilon of the 500 steps, rounded up to 1e-12 units (never below).
  const double rdp = Rdp(kRun, 500);
  EXPECT_GE(query::EpsilonFromUnits(charge->epsilon_units), rdp);
  EXPECT_LE(query::EpsilonFromUnits(charge->epsilon_units), rdp + 2e-12);
  EXPECT_EQ(charge->delta_units, 10'000'000'000'000);
}

TEST(StepPricingTest, PldAndBasicLedgersChargeOneApproxEventNoAboveRdp) {
  for (const char* name : {"pld", "basic", "advanced"}) {
    SCOPED_TRACE(name);
    const acc::AccountantKind ledger = *acc::ParseAccountantKind(name);
    auto charge = PriceStepReport(ledger, kRun, 2000);
    ASSERT_TRUE(charge.ok()) << charge.status();
    auto event = acc::ParsePrivacyEvent(charge->events);
    ASSERT_TRUE(event.ok());
    EXPECT_EQ(event->kind, acc::EventKind::kApproxDp);
    EXPECT_EQ(event->count, 1);
    EXPECT_GE(event->epsilon, query::EpsilonFromUnits(charge->epsilon_units) - 1e-15);
    EXPECT_LE(event->delta, 1e-5);
    // PLD is tighter than RDP for 2000 steps of DP-SGD (dp_accounting shows the same ordering).
    EXPECT_EQ(charge->method, "pld");
    EXPECT_LT(query::EpsilonFromUnits(charge->epsilon_units), Rdp(kRun, 2000));
  }
}

TEST(StepPricingTest, ZcdpLedgerChargesTheUnsubsampledGaussian) {
  auto charge = PriceStepReport(kZcdp, kRun, 10);
  ASSERT_TRUE(charge.ok());
  // rho = steps / (2 z^2) (Bun & Steinke 2016, Prop. 1.6; no amplification by sampling in zCDP).
  const double rho = 10 / (2 * 1.1 * 1.1);
  EXPECT_GE(query::EpsilonFromUnits(charge->epsilon_units), rho);
  EXPECT_EQ(charge->method, "zcdp");
}

TEST(StepPricingTest, ChargeGrowsWithSteps) {
  int64_t previous = 0;
  for (int64_t k : {1, 10, 100, 1000}) {
    auto charge = PriceStepReport(kRdp, kRun, k);
    ASSERT_TRUE(charge.ok());
    EXPECT_GT(charge->epsilon_units, previous) << k;
    previous = charge->epsilon_units;
  }
}

TEST(StepPricingTest, RunEpsilonOfRdpLedgerIsTheRdpPriceOfAllSteps) {
  auto eps = RunEpsilon(kRdp, kRun, 1234);
  ASSERT_TRUE(eps.ok());
  EXPECT_DOUBLE_EQ(*eps, Rdp(kRun, 1234));
  EXPECT_EQ(*RunEpsilon(kPld, kRun, 0), 0.0);
}

TEST(StepPricingTest, RefusesBadParametersNamingThem) {
  EXPECT_THAT(PriceStepReport(kRdp, {0, 1, 1e-5}, 1).status().message(),
              HasSubstr("sampling_rate"));
  EXPECT_THAT(PriceStepReport(kRdp, {1.5, 1, 1e-5}, 1).status().message(),
              HasSubstr("sampling_rate"));
  EXPECT_THAT(PriceStepReport(kRdp, {0.1, std::nan(""), 1e-5}, 1).status().message(),
              HasSubstr("noise_multiplier"));
  EXPECT_THAT(PriceStepReport(kRdp, {0.1, 1, 0}, 1).status().message(), HasSubstr("delta"));
  EXPECT_THAT(PriceStepReport(kRdp, {0.1, 1, 1}, 1).status().message(), HasSubstr("delta"));
  EXPECT_THAT(PriceStepReport(kRdp, kRun, 0).status().message(), HasSubstr("steps"));
  EXPECT_THAT(PriceStepReport(kRdp, kRun, kMaxStepsPerReport + 1).status().message(),
              HasSubstr("steps"));
  // An unknown ledger accountant is refused where its name is parsed (the ledger row, the admin's
  // request); pricing takes a kind.
  EXPECT_THAT(acc::ParseAccountantKind("nope").status().message(), HasSubstr("accountant"));
  EXPECT_EQ(PriceStepReport(kRdp, kRun, 0).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(StepPricingTest, RunNames) {
  EXPECT_TRUE(ValidateRunName("mnist-v2.1_a").ok());
  EXPECT_FALSE(ValidateRunName("").ok());
  EXPECT_FALSE(ValidateRunName("-x").ok());
  EXPECT_FALSE(ValidateRunName("a b").ok());
  EXPECT_FALSE(ValidateRunName(std::string(65, 'a')).ok());
}

TEST(StepPricingTest, LargestFittingStepsFindsTheBoundary) {
  for (int64_t start : {0, 1, 5}) {
    for (int64_t limit : {5, 7, 999, 1000}) {
      int calls = 0;
      auto k =
          internal::LargestFittingSteps(start, 1000, 0.0, [&](int64_t s) -> absl::StatusOr<bool> {
            ++calls;
            return s <= limit;
          });
      ASSERT_TRUE(k.ok());
      EXPECT_EQ(*k, limit) << start;
      EXPECT_LE(calls, 25);  // doubling then bisection: O(log 1000)
    }
  }
  // To 1 %: fits, and within 1 % of the boundary.
  auto k = internal::LargestFittingSteps(
      0, 1000000, 0.01, [](int64_t s) -> absl::StatusOr<bool> { return s <= 123456; });
  ASSERT_TRUE(k.ok());
  EXPECT_LE(*k, 123456);
  EXPECT_GE(*k, 123456 * 0.99);
  auto err = internal::LargestFittingSteps(
      0, 10, 0.0, [](int64_t) -> absl::StatusOr<bool> { return absl::InternalError("x"); });
  EXPECT_FALSE(err.ok());
}

// An epsilon budget of 2 at delta 1e-5: steps left is the largest report whose charge is <= 2.
TEST(StepPricingTest, StepsLeftMatchesTheChargeBoundary) {
  const ChargeFits fits = [](const StepCharge& c) -> absl::StatusOr<bool> {
    return c.epsilon_units <= 2'000'000'000'000;
  };
  for (const char* name : {"rdp", "pld"}) {
    SCOPED_TRACE(name);
    const acc::AccountantKind ledger = *acc::ParseAccountantKind(name);
    auto left = StepsLeft(ledger, kRun, fits);
    ASSERT_TRUE(left.ok()) << left.status();
    ASSERT_GT(*left, 0);
    EXPECT_TRUE(*fits(*PriceStepReport(ledger, kRun, *left)));
    // Exact on rdp; within 1 % on pld.
    const int64_t over = ledger == kRdp ? *left + 1 : static_cast<int64_t>(*left * 1.011) + 1;
    EXPECT_FALSE(*fits(*PriceStepReport(ledger, kRun, over)));
  }
  // PLD is tighter: more steps fit a pld ledger's budget than an rdp one's.
  EXPECT_GT(*StepsLeft(kPld, kRun, fits), *StepsLeft(kRdp, kRun, fits));
}

}  // namespace
}  // namespace dpq::training
