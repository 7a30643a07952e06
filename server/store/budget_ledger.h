// The per-dataset privacy ledger (basic composition: epsilons and deltas add, exactly, in integer
// units (privacy_units.h); basic composition is a valid
// privacy filter under fully adaptive choice; Rogers, Roth, Ullman, Vadhan 2016, Thm. 3.6 with
// basic composition). A debit is one short transaction:
//   SELECT ... FROM ledgers WHERE dataset_id = $1 FOR UPDATE;  -- serialises debits of one dataset
//   check the request id (replay) and the budget;
//   INSERT INTO audit (...);  UPDATE ledgers SET spent += ..., audit head = this row;
//   COMMIT
// and the caller releases the answer only after Debit returns OK, i.e. after COMMIT succeeded.
#ifndef DPQ_SERVER_STORE_BUDGET_LEDGER_H_
#define DPQ_SERVER_STORE_BUDGET_LEDGER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/optional.h"
#include "server/store/allocation.h"
#include "server/store/database.h"

namespace dpq::store {

struct DebitResult {
  Allocation allocation;  // as committed (seq, created_at, hashes filled in)
  BudgetState budget;     // after the debit
  bool replayed = false;  // the request id was already committed: stored answer, nothing charged
};

// RESOURCE_EXHAUSTED naming the dataset, the request and what remains (display precision).
absl::Status BudgetExhausted(const BudgetState& budget, int64_t epsilon_units, int64_t delta_units);

class BudgetLedger {
 public:
  explicit BudgetLedger(Database* db) : db_(db) {}

  // NOT_FOUND for an unknown dataset id.
  absl::StatusOr<BudgetState> Get(int64_t dataset_id);

  // Sets the totals (units of privacy_units.h). FAILED_PRECONDITION when a total would fall below
  // what is already spent.
  // `accountant` ("basic", "advanced", "rdp", "zcdp"; empty keeps the current one) can change only
  // while nothing is spent (FAILED_PRECONDITION); non-basic accountants need delta > 0.
  absl::StatusOr<BudgetState> Set(int64_t dataset_id, int64_t epsilon_total_units,
                                  int64_t delta_total_units, const std::string& accountant = "");

  // The committed allocation for (dataset, request id), if any.
  absl::StatusOr<absl::optional<Allocation>> FindAllocation(int64_t dataset_id,
                                                            const std::string& request_id);

  // Charges `allocation` (epsilon_units, delta_units) and appends it to the audit chain, atomically.
  //   RESOURCE_EXHAUSTED: the charge does not fit the remaining budget; nothing is written.
  //   ALREADY_EXISTS: the request id was used for a different query (fingerprint differs).
  //   A request id already committed with the same fingerprint returns that row, replayed=true.
  //   UNAVAILABLE: the connection broke before COMMIT (nothing committed).
  //   INTERNAL "commit in doubt": the outcome is unknown; never retried here.
  absl::StatusOr<DebitResult> Debit(int64_t dataset_id, Allocation allocation);

  // Oldest first.
  absl::StatusOr<std::vector<Allocation>> ListAllocations(int64_t dataset_id);

  struct Verification {
    bool ok = false;
    int64_t entries = 0;
    int64_t first_broken_seq = 0;  // 0: no broken link
    std::string reason;
    int64_t epsilon_spent_recomputed_units = 0, delta_spent_recomputed_units = 0;
    int64_t epsilon_spent_ledger_units = 0, delta_spent_ledger_units = 0;
  };
  // Walks the audit chain (seq 1..n without gaps, each prev_hash the previous hash, each hash
  // ChainHash of its content), checks the ledger head points at the last row (so a deleted tail is
  // seen), and recomputes the ledger's spent budget (and accountant state) from the rows' charges.
  absl::StatusOr<Verification> Verify(int64_t dataset_id);

  // Every dataset's ledger, for metrics.
  absl::StatusOr<std::vector<BudgetState>> ListBudgets();
  struct AnalystSpend {
    std::string dataset, analyst;
    double epsilon = 0, delta = 0;
  };
  // Sum of committed charges per (dataset, analyst), from the audit rows.
  absl::StatusOr<std::vector<AnalystSpend>> SpendByAnalyst();

 private:
  Database* db_;
};

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_BUDGET_LEDGER_H_
