// Step 4 of a debit group's transaction (budget_ledger.h, debit_group.h): the group's debits
// admitted in arrival order, in memory, against the ledger row, the committed rows of their
// request ids and the analysts' grant rows the transaction has locked. Pure: no SQL, no I/O; the
// transaction reads its inputs and writes what this returns.
#ifndef DPQ_SERVER_STORE_DEBIT_ADMISSION_H_
#define DPQ_SERVER_STORE_DEBIT_ADMISSION_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/optional.h"
#include "absl/types/span.h"
#include "server/store/allocation.h"

namespace dpq::store {

// What an analyst spent in one time block (block_caps), locked for the group.
struct BlockSpend {
  int64_t epsilon_spent_units = 0, delta_spent_units = 0;
  bool charged = false;  // changed by this group: written back before COMMIT
};

// An analyst's cap row on the population (population_caps), locked for the group: the cap and what
// was charged against it so far, advanced in memory as the group's debits are admitted. On a
// per-block population the cap limits each block (`blocks`: the analyst's spend in the group's
// blocks, by first day); the population-wide spend then adds every charge and limits nothing.
struct GrantCap {
  absl::optional<int64_t> epsilon_cap_units, delta_cap_units;  // nullopt: no cap
  int64_t epsilon_spent_units = 0, delta_spent_units = 0;
  bool charged = false;  // changed by this group: written back before COMMIT
  std::map<int64_t, BlockSpend> blocks;
};

// A time block's ledger cell (ledger_blocks) of a per-block population, locked for the group: its
// own totals, if it overrides the ledger's per-block ones, and what was charged to it so far,
// advanced in memory as the group's debits are admitted.
struct BlockCell {
  absl::optional<int64_t> epsilon_total_units, delta_total_units;  // nullopt: the ledger's
  int64_t epsilon_spent_units = 0, delta_spent_units = 0;
  std::string accountant_state;
  bool charged = false;  // changed by this group: written back before COMMIT
};

struct DebitAdmission {
  // Each member's own outcome, in arrival order. A repeat of a request id admitted earlier in the
  // same group is decided as a replay of that member (replay_of, else -1), whose row exists only
  // once inserted: its allocation is copied in after the COMMIT.
  std::vector<absl::StatusOr<DebitResult>> decided;
  std::vector<std::ptrdiff_t> replay_of;
  // The admitted members, in admission order: their rows take seqs head_seq + 1, + 2, ...
  std::vector<size_t> admitted;
  // The ledger after the last admitted member (unchanged when none was): spent budget, accountant
  // state and chain head to write back.
  LedgerState ledger;
  // The grant rows with the admitted members' charges added (charged: written back).
  std::map<int64_t, GrantCap> grants;
  // Per-block ledgers: the cells of the group's blocks by first day (days since 1970-01-01), with
  // the admitted members' charges added (charged: written back).
  std::map<int64_t, BlockCell> blocks;
};

// Admits `group` (the members' allocations, in arrival order) one by one, each against the
// budget, accountant state, caps and chain head left by the previously admitted one: the outcome
// of running the group's debits one after another. `ledger` is the locked ledger row, `prior` the
// committed rows of the group's request ids (by request id), `grants` the locked grant rows by
// principal id (a principal without one, an admin, has no cap). A refused member changes nothing
// and refuses no other. The rules per member, in order:
//   - a request id committed earlier: its row, replayed (nothing charged), or ALREADY_EXISTS when
//     the fingerprint differs;
//   - a request id admitted earlier in this group: the same, replaying that member;
//   - INVALID_ARGUMENT unless epsilon_units > 0 and delta_units >= 0;
//   - basic ledgers: RESOURCE_EXHAUSTED (BudgetExhausted) unless the nominal charge fits what
//     remains; other accountants: the events composed onto the state (ComposeCharge);
//   - RESOURCE_EXHAUSTED unless the nominal charge fits the analyst's cap (on a per-block ledger:
//     in every block it pays, naming the first block it does not fit);
//   - admitted: seq head_seq + 1, prev_hash the head's hash, hash ChainHash of the row.
// Per-block ledgers (budget.per_block): instead of the ledger's budget, the charge must fit every
// cell of the blocks it names (Allocation::blocks; `blocks` holds their locked cells), each one
// composed by the ledger's accountant against its own totals, or it is RESOURCE_EXHAUSTED naming
// the first block it does not fit; the ledger's own spent adds the nominal charge (basic
// composition of everything, shown but limiting nothing). A charge that names no blocks on a
// per-block ledger, or blocks on another, is FAILED_PRECONDITION (the budget changed since the
// query was planned: planning again names the right ones).
DebitAdmission AdmitDebits(const LedgerState& ledger,
                           const std::map<std::string, Allocation>& prior,
                           std::map<int64_t, GrantCap> grants,
                           absl::Span<const Allocation* const> group,
                           std::map<int64_t, BlockCell> blocks = {});

// ALREADY_EXISTS for a request id taken by another query or analyst: deliberately the same message
// for both, so the answer does not reveal what someone else asked.
absl::Status RequestIdTaken(const std::string& request_id);

// RESOURCE_EXHAUSTED naming the dataset, the request and what remains (display precision).
absl::Status BudgetExhausted(const BudgetState& budget, int64_t epsilon_units, int64_t delta_units);

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_DEBIT_ADMISSION_H_
