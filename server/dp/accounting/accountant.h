// Privacy accountants behind one interface, selectable by kind (accountant_kind.h: "basic",
// "advanced", "rdp", "zcdp", "pld"). Each keeps a compact composed state (not the history), so
// Compose and Epsilon cost O(state) however many events were composed, and the state serialises to
// one versioned text blob that the ledger stores in one row (Deserialize(SerializeState())
// reproduces it exactly).
//
// Adaptive use (the ledger as a privacy filter): accept a debit iff, after composing it,
// Epsilon(delta_budget) <= epsilon_budget. This stopping rule is a valid filter for the accountants
// whose valid_for_adaptive_filter() is true:
//  * basic: sum eps_i <= eps and sum delta_i <= delta (filter in the sense of Rogers, Roth, Ullman
//    & Vadhan 2016, Def. of privacy filters; valid because each pure event bounds the privacy loss
//    pointwise, and each delta_i is a separate failure event, so the stopped sums bound the loss).
//  * advanced: Whitehouse, Ramdas, Rogers & Wu 2023 filter, combined with basic (see accountant.cc
//    for why "stop only when both bounds exceed the budget" stays valid).
//  * rdp: Feldman & Zrnic 2021 (one order) / Lécuyer 2021 (a finite set of orders: continue while
//    some order is within its budget, which is exactly "converted eps <= budget"); order infinity
//    (pure DP, basic composition) is part of the set, and the (eps, delta) part of ApproxDp events
//    composes basically on top.
//  * zcdp: rho is RDP with rdp(a) = a rho at every order, so the same RDP filter argument applies.
//  * pld: NOT a filter (composition proven for mechanisms fixed in advance). Use it to price
//    declared workloads (batches, training runs) and charge the result to an adaptive accountant as
//    one ApproxDp event.
//
// delta split for ApproxDp events (eps_i, delta_i > 0) in rdp / zcdp: their deltas are spent first;
// the RDP/zCDP part is converted at delta - sum delta_i and the eps_i are added (basic composition of
// the two parts). Epsilon is +inf when sum delta_i >= delta.
#ifndef DPQ_SERVER_DP_ACCOUNTING_ACCOUNTANT_H_
#define DPQ_SERVER_DP_ACCOUNTING_ACCOUNTANT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "server/dp/accounting/accountant_kind.h"
#include "server/dp/accounting/pld.h"
#include "server/dp/accounting/privacy_event.h"

namespace dpq::dp::accounting {

class Accountant {
 public:
  virtual ~Accountant() = default;

  virtual AccountantKind kind() const = 0;
  std::string name() const { return std::string(AccountantName(kind())); }
  virtual bool valid_for_adaptive_filter() const = 0;

  // Adds `event` (count times). INVALID_ARGUMENT for an invalid event (naming the parameter) or an
  // event this accountant cannot represent (basic/advanced need pure or (eps, delta) events, not
  // Gaussian noise). On error the state is unchanged.
  virtual absl::Status Compose(const PrivacyEvent& event) = 0;

  // Smallest epsilon (>= 0, possibly +inf) such that the composition is (epsilon, delta)-DP by this
  // accountant's bound. INVALID_ARGUMENT unless delta in (0, 1). RESOURCE_EXHAUSTED from PLD size.
  virtual absl::StatusOr<double> Epsilon(double delta) const = 0;

  // Versioned text state: first line "dpq-accountant/1 NAME", then key=value lines.
  virtual std::string SerializeState() const = 0;

  virtual std::unique_ptr<Accountant> Clone() const = 0;

  // Rebuilds any accountant from SerializeState(). INVALID_ARGUMENT on a malformed or unknown state.
  static absl::StatusOr<std::unique_ptr<Accountant>> Deserialize(absl::string_view state);
};

// Factory with default options.
std::unique_ptr<Accountant> CreateAccountant(AccountantKind kind);
// By name (ParseAccountantKind): INVALID_ARGUMENT naming "accountant" for an unknown name.
absl::StatusOr<std::unique_ptr<Accountant>> CreateAccountant(absl::string_view name);

// Advanced accountant with the share of delta used as the WRRW slack delta' (the rest caps the sum
// of the events' deltas). Fixed when the budget is set; default 0.5. Must be in (0, 1].
absl::StatusOr<std::unique_ptr<Accountant>> CreateAdvancedAccountant(double slack_fraction);
inline constexpr double kDefaultAdvancedSlackFraction = 0.5;

// PLD accountant with a given discretisation interval (loss units) in [1e-6, 1]; default 1e-4.
absl::StatusOr<std::unique_ptr<Accountant>> CreatePldAccountant(double interval);

struct Price {
  double epsilon = 0;
  double delta = 0;
};

// (epsilon, delta) that `events` would cost under the named accountant, without any ledger.
absl::StatusOr<Price> PriceEvents(absl::string_view accountant, double delta,
                                  absl::Span<const PrivacyEvent> events);
absl::StatusOr<Price> PriceEvents(AccountantKind accountant, double delta,
                                  absl::Span<const PrivacyEvent> events);

// Smallest noise multiplier z (to relative precision `tolerance`, rounded up: the result always
// meets the target) such that `steps` Poisson-subsampled Gaussian steps at rate q cost at most
// target_epsilon at delta under the named accountant (what Opacus make_private_with_epsilon and
// dp_accounting calibrate_dp_mechanism do). INVALID_ARGUMENT naming the bad parameter;
// OUT_OF_RANGE if no z <= 1e6 meets the target.
absl::StatusOr<double> CalibrateNoiseMultiplier(absl::string_view accountant, double target_epsilon,
                                                double delta, double sampling_rate, int64_t steps,
                                                double tolerance = 1e-7);
absl::StatusOr<double> CalibrateNoiseMultiplier(AccountantKind accountant, double target_epsilon,
                                                double delta, double sampling_rate, int64_t steps,
                                                double tolerance = 1e-7);

}  // namespace dpq::dp::accounting

#endif  // DPQ_SERVER_DP_ACCOUNTING_ACCOUNTANT_H_
