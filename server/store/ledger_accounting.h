// The privacy filter of a non-basic ledger (rdp, zcdp, advanced): compose an allocation's events
// onto the stored accountant state and accept iff the converted epsilon at the dataset's delta still
// fits the epsilon budget. The stopping rule's validity for adaptively chosen queries is argued
// per accountant in server/dp/accounting/accountant.h. Pure: no SQL.
#ifndef DPQ_SERVER_STORE_LEDGER_ACCOUNTING_H_
#define DPQ_SERVER_STORE_LEDGER_ACCOUNTING_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "server/dp/accounting/accountant_kind.h"
#include "server/store/allocation.h"

namespace dpq::store {

// A ledger may be kept by any AccountantKind. PLD composition is not a valid adaptive filter
// (accountant.h), so a pld ledger keeps an RDP filter state for one-by-one queries; PLD prices
// declared batches, which reach the ledger as one ApproxDp event.

struct ComposedState {
  std::string state;  // serialized accountant state after the charge
  int64_t epsilon_spent_units =
      0;                          // ceil(converted epsilon * 1e12), never below the previous value
  int64_t delta_spent_units = 0;  // the delta budget the conversion used
};

// Adds `events` (';'-separated specs) to `state` (empty: a fresh accountant of kind
// budget.accountant). RESOURCE_EXHAUSTED when the composed epsilon at the delta budget exceeds the
// epsilon budget; INVALID_ARGUMENT for malformed events.
absl::StatusOr<ComposedState> ComposeCharge(const BudgetState& budget, const std::string& state,
                                            const std::string& events);

// The epsilon spent (units) by `state` at a delta budget of delta_total_units; 0 for an empty state.
absl::StatusOr<int64_t> SpentEpsilonUnits(dp::accounting::AccountantKind accountant,
                                          const std::string& state, int64_t delta_total_units);

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_LEDGER_ACCOUNTING_H_
