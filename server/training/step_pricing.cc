#include "server/training/step_pricing.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/dp/accounting/accountant.h"
#include "server/dp/accounting/privacy_event.h"
#include "server/query/privacy_units.h"

namespace dpq::training {
namespace {

namespace acc = dp::accounting;
using acc::AccountantKind;

// The delta every price is computed at: the largest double not above the charged delta units, so
// the priced epsilon is never below the true one at the delta the ledger records (privacy_units.h).
absl::StatusOr<double> ChargedDelta(const RunSpec& run, int64_t* delta_units) {
  ASSIGN_OR_RETURN(*delta_units, query::DeltaToUnits(run.delta, "delta"));
  return query::MechanismDelta(*delta_units);
}

absl::StatusOr<double> PriceSteps(AccountantKind accountant, const RunSpec& run, int64_t steps,
                                  double delta) {
  const acc::PrivacyEvent event =
      acc::PrivacyEvent::PoissonSubsampledGaussian(run.sampling_rate, run.noise_multiplier, steps);
  ASSIGN_OR_RETURN(acc::Price price, acc::PriceEvents(accountant, delta, {event}));
  return price.epsilon;
}

// min(RDP, PLD): both are valid upper bounds for a fixed number of steps, so the smaller is too.
absl::StatusOr<double> TightestSteps(const RunSpec& run, int64_t steps, double delta,
                                     std::string* method) {
  ASSIGN_OR_RETURN(double rdp, PriceSteps(AccountantKind::kRdp, run, steps, delta));
  ASSIGN_OR_RETURN(double pld, PriceSteps(AccountantKind::kPld, run, steps, delta));
  *method = std::string(AccountantName(pld < rdp ? AccountantKind::kPld : AccountantKind::kRdp));
  return std::min(rdp, pld);
}

}  // namespace

bool LedgerComposesSteps(AccountantKind ledger_accountant) {
  return ledger_accountant == AccountantKind::kRdp || ledger_accountant == AccountantKind::kZcdp;
}

absl::StatusOr<StepCharge> PriceStepReport(AccountantKind ledger_accountant, const RunSpec& run,
                                           int64_t steps) {
  RETURN_IF_ERROR(ValidateRunSpec(run));
  RETURN_IF_ERROR(ValidateReportSteps(steps));
  StepCharge charge;
  ASSIGN_OR_RETURN(const double delta, ChargedDelta(run, &charge.delta_units));
  double epsilon = 0;
  if (LedgerComposesSteps(ledger_accountant)) {
    charge.method = std::string(AccountantName(ledger_accountant));
    ASSIGN_OR_RETURN(epsilon, PriceSteps(ledger_accountant, run, steps, delta));
  } else {
    ASSIGN_OR_RETURN(epsilon, TightestSteps(run, steps, delta, &charge.method));
  }
  if (!(epsilon <= query::kMaxEpsilonBudget)) {
    return absl::OutOfRangeError(absl::StrCat(
        "steps: ", steps, " steps at sampling_rate ", run.sampling_rate, ", noise_multiplier ",
        run.noise_multiplier, " cost more than any budget can hold; report fewer steps"));
  }
  // Rounded up: the ledger never records less than the bound.
  charge.epsilon_units = std::max<int64_t>(
      1, static_cast<int64_t>(std::ceil(static_cast<long double>(epsilon) * 1e12L)));
  if (LedgerComposesSteps(ledger_accountant)) {
    charge.events =
        acc::PrivacyEvent::PoissonSubsampledGaussian(run.sampling_rate, run.noise_multiplier, steps)
            .ToSpec();
  } else {
    charge.events =
        acc::PrivacyEvent::ApproxDp(query::EpsilonFromUnits(charge.epsilon_units), delta).ToSpec();
  }
  return charge;
}

absl::StatusOr<double> RunEpsilon(AccountantKind ledger_accountant, const RunSpec& run,
                                  int64_t steps) {
  RETURN_IF_ERROR(ValidateRunSpec(run));
  if (steps == 0) return 0.0;
  if (steps < 0 || steps > kMaxRunSteps) {
    return absl::InvalidArgumentError(absl::StrCat("steps must be in [0, ", kMaxRunSteps, "]"));
  }
  int64_t delta_units = 0;
  ASSIGN_OR_RETURN(const double delta, ChargedDelta(run, &delta_units));
  if (LedgerComposesSteps(ledger_accountant))
    return PriceSteps(ledger_accountant, run, steps, delta);
  std::string method;
  return TightestSteps(run, steps, delta, &method);
}

namespace internal {

absl::StatusOr<int64_t> LargestFittingSteps(
    int64_t lo, int64_t max_steps, double rel_precision,
    const std::function<absl::StatusOr<bool>(int64_t)>& fits) {
  if (lo >= max_steps) return max_steps;
  // Doubling: find hi with !fits(hi), keeping fits(lo).
  int64_t hi = std::max<int64_t>(1, 2 * lo);
  for (;;) {
    hi = std::min(hi, max_steps);
    ASSIGN_OR_RETURN(bool ok, fits(hi));
    if (!ok) break;
    lo = hi;
    if (hi == max_steps) return max_steps;
    hi *= 2;
  }
  while (hi - lo > 1 && static_cast<double>(hi - lo) > rel_precision * static_cast<double>(lo)) {
    const int64_t mid = lo + (hi - lo) / 2;
    ASSIGN_OR_RETURN(bool ok, fits(mid));
    (ok ? lo : hi) = mid;
  }
  return lo;
}

absl::StatusOr<StepCharge> RdpOnlyCharge(const RunSpec& run, int64_t steps) {
  StepCharge charge;
  ASSIGN_OR_RETURN(const double delta, ChargedDelta(run, &charge.delta_units));
  ASSIGN_OR_RETURN(const double epsilon, PriceSteps(AccountantKind::kRdp, run, steps, delta));
  if (!(epsilon <= query::kMaxEpsilonBudget)) return absl::OutOfRangeError("steps: too many");
  charge.method = std::string(AccountantName(AccountantKind::kRdp));
  charge.epsilon_units = std::max<int64_t>(
      1, static_cast<int64_t>(std::ceil(static_cast<long double>(epsilon) * 1e12L)));
  charge.events =
      acc::PrivacyEvent::ApproxDp(query::EpsilonFromUnits(charge.epsilon_units), delta).ToSpec();
  return charge;
}

}  // namespace internal

absl::StatusOr<int64_t> StepsLeft(AccountantKind ledger_accountant, const RunSpec& run,
                                  const ChargeFits& fits) {
  RETURN_IF_ERROR(ValidateRunSpec(run));
  // A charge beyond any budget (OUT_OF_RANGE) fits nowhere.
  const auto probe = [&](auto price) {
    return [&, price](int64_t k) -> absl::StatusOr<bool> {
      if (k == 0) return true;
      absl::StatusOr<StepCharge> c = price(k);
      if (!c.ok() && c.status().code() == absl::StatusCode::kOutOfRange) return false;
      if (!c.ok()) return c.status();
      return fits(*c);
    };
  };
  const auto exact = probe([&](int64_t k) { return PriceStepReport(ledger_accountant, run, k); });
  if (LedgerComposesSteps(ledger_accountant)) {
    return internal::LargestFittingSteps(0, kMaxStepsPerReport, 0.0, exact);
  }
  ASSIGN_OR_RETURN(int64_t by_rdp,
                   internal::LargestFittingSteps(0, kMaxStepsPerReport, 0.0, probe([&](int64_t k) {
                                                   return internal::RdpOnlyCharge(run, k);
                                                 })));
  return internal::LargestFittingSteps(by_rdp, kMaxStepsPerReport, 0.01, exact);
}

}  // namespace dpq::training
