// The per-dataset privacy ledger (basic composition: epsilons and deltas add, exactly, in integer
// units (privacy_units.h); basic composition is a valid
// privacy filter under fully adaptive choice; Rogers, Roth, Ullman, Vadhan 2016, Thm. 3.6 with
// basic composition; other accountants: ledger_accounting.h). Debits are group-committed per
// dataset (debit_batcher.h): concurrent debits of one dataset queue, and one caller (the leader)
// decides and writes all of them in ONE transaction:
//   SELECT ... FROM ledgers WHERE population_id = $1 FOR UPDATE;  -- serialises groups of one dataset
//   take every debit of the dataset queued by now (at most DebitBatcher::kMaxGroup);
//   SELECT ... FROM unnest($2) r, LATERAL (... FROM audit WHERE request_id = r.request_id)
//                                                    -- committed ids of the group: replays
//   SELECT ... FROM grants ... ORDER BY principal_id FOR UPDATE;  -- caps (lock order: ledger, grants)
//   admit in arrival order, in memory;
//   INSERT INTO audit SELECT ... FROM unnest(...);   -- one row per admitted debit, hash-chained
//   UPDATE ledgers SET spent, audit head, accountant state;  UPDATE grants ... (per analyst);
//   COMMIT
// and each caller releases its answer only after Debit returns OK, i.e. after that COMMIT.
// A group this process can decide on the rows it remembers from its last group of the dataset
// (server-drawn request ids, known grant rows, no time blocks) skips all but the write: one
// autocommitted statement locks the same rows in the same order and writes only if each is
// exactly as remembered; otherwise it writes nothing and the group runs the transaction above
// (known_ledgers.h, debit_write.h).
#ifndef DPQ_SERVER_STORE_BUDGET_LEDGER_H_
#define DPQ_SERVER_STORE_BUDGET_LEDGER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/optional.h"
#include "server/store/allocation.h"
#include "server/store/audit_chain.h"
#include "server/store/database.h"

namespace dpq::store {

class BudgetLedger {
 public:
  explicit BudgetLedger(Database* db) : db_(db) {}

  // Called after every Debit with its wall time in seconds (group-commit wait included), whatever
  // the outcome; for dpq_debit_duration_seconds. Set before the first Debit, not concurrently.
  void SetDebitObserver(std::function<void(double seconds)> observer) {
    debit_observer_ = std::move(observer);
  }

  // NOT_FOUND for an unknown dataset id.
  absl::StatusOr<BudgetState> Get(int64_t population_id);

  // Sets the totals (units of privacy_units.h). FAILED_PRECONDITION when a total would fall below
  // what is already spent.
  // `accountant` (a name ParseAccountantKind accepts, as the admin sent it; empty keeps the current
  // one) can change only while nothing is spent (FAILED_PRECONDITION); non-basic accountants need
  // delta > 0.
  // `max_query_epsilon_units`: the largest epsilon one query may ask (0: no limit; absent: keep).
  absl::StatusOr<BudgetState> Set(int64_t population_id, int64_t epsilon_total_units,
                                  int64_t delta_total_units, const std::string& accountant = "",
                                  absl::optional<int64_t> max_query_epsilon_units = absl::nullopt,
                                  const AdminAction* log = nullptr);

  // The committed allocation for (dataset, request id), if any.
  absl::StatusOr<absl::optional<Allocation>> FindAllocation(int64_t population_id,
                                                            const std::string& request_id);

  // Charges `allocation` (epsilon_units, delta_units) and appends it to the audit chain, atomically.
  //   RESOURCE_EXHAUSTED: the charge does not fit the remaining budget, or the analyst's cap
  //     (grants.*_cap_units); nothing of this debit is written.
  //   ALREADY_EXISTS: the request id was used for a different query (fingerprint differs).
  //   INVALID_ARGUMENT: epsilon_units <= 0 or delta_units < 0, or malformed events (non-basic).
  //   A request id already committed with the same fingerprint returns that row, replayed=true,
  //     and charges nothing (even if the charge would no longer fit).
  //   NOT_FOUND: no ledger for the dataset.
  //   UNAVAILABLE: the connection broke before COMMIT (nothing committed), or during it
  //     (DatabaseFailure::kCommitInDoubt: the outcome is unknown; never retried here). Either way
  //     the caller's retry with the same request id resolves it: it replays the committed row or
  //     commits the debit once.
  // Group commit (debit_batcher.h). The call may be decided together with other concurrent debits
  // of the same dataset (at most DebitBatcher::kMaxGroup). A debit with no concurrent debit of its
  // dataset runs at once, alone: no timer, no added latency. Within a group:
  //   - Exactness: the debits are admitted one by one in arrival order under the ledger row lock,
  //     each against the spent budget / accountant state (ComposeCharge onto the state the previous
  //     admitted debit produced), chain head and caps left by the previous admitted one; so the
  //     outcome is that of running them serially, and the exact budget (and every cap) can never be
  //     exceeded. `budget` in the result is the state right after this debit in that order.
  //   - One audit row per admitted debit, each with its own seq and hash chained onto the
  //     previous row's; the ledger head and spent move to the last one; all in one transaction.
  //   - Refusals are per debit: a refused debit gets its own error and does not affect the others.
  //   - Replays: a request id committed earlier returns that row; the same id twice in one group
  //     is charged once: with the same fingerprint the later ones replay the first (replayed=true),
  //     with another fingerprint they get ALREADY_EXISTS.
  //   - Answer only after commit: no member of a group gets OK before its COMMIT succeeded. When
  //     the transaction fails, every member gets that error (UNAVAILABLE, in doubt or not, ...):
  //     nothing of the group was written (or, in doubt, all or nothing was). The group is formed
  //     once the leader holds the ledger lock; a failure before that (connecting, waiting for the
  //     lock) fails the leader's debit alone, and the next leader tries the others.
  absl::StatusOr<DebitResult> Debit(int64_t population_id, Allocation allocation);

  // Records the answer of the deferred allocation `seq` (charged before its scan) at most once:
  // the first release stored for a paid allocation is its answer for ever. Returns the allocation
  // with the release that won, this one or a concurrent retry's (so both callers return the same
  // answer). NOT_FOUND for no such allocation, FAILED_PRECONDITION for one that is not deferred.
  absl::StatusOr<Allocation> StoreRelease(int64_t population_id, int64_t seq,
                                          const Allocation::Release& release);
  // As above for the allocation `paid` as Debit or FindAllocation returned it (its seq and hash):
  // the usual case, this release stored first, is ONE autocommitted statement (durable when it
  // returns, as a COMMIT is) that also checks the audit row's hash and deferral, and returns `paid`
  // with this release; anything else (another release won, the row differs) takes the path above.
  absl::StatusOr<Allocation> StoreRelease(int64_t population_id, const Allocation& paid,
                                          const Allocation::Release& release);

  // Oldest first.
  absl::StatusOr<std::vector<Allocation>> ListAllocations(int64_t population_id);

  struct Verification {
    bool ok = false;
    int64_t entries = 0;           // rows in the chain (the last seq walked)
    int64_t first_broken_seq = 0;  // 0: no broken link
    std::string reason;
    int64_t epsilon_spent_recomputed_units = 0, delta_spent_recomputed_units = 0;
    int64_t epsilon_spent_ledger_units = 0, delta_spent_ledger_units = 0;
    bool full = false;           // walked from genesis (else from the checkpoint)
    int64_t rows_read = 0;       // audit rows read (the checkpoint row included)
    int64_t checkpoint_seq = 0;  // the stored checkpoint found (0: none)
  };
  struct VerifyOptions {
    // From genesis; else from the dataset's checkpoint (audit_verified), when there is one.
    bool full = true;
    // With full == false: still from genesis when the last verification from genesis (by any
    // dpqd) is older than this many seconds; 0: only when there is no checkpoint.
    double full_after_seconds = 0;
  };
  // Walks the audit chain in one repeatable-read snapshot, reading kVerifyPageRows rows at a
  // time and keeping only the running recomputation (memory does not grow with the history):
  // seq without gaps, each prev_hash the previous hash, each hash ChainHash of its content, each
  // release bound to a deferred row by its ReleaseHash; then checks the ledger head points at the
  // last row (so a deleted tail is seen), and recomputes the ledger's spent budget (and accountant
  // state) from the rows' charges.
  // Incremental (options.full == false): starts at the checkpoint, which must still hold the hash
  // it was verified with (else the run goes on from genesis and fails: the chain was rewritten or
  // cut). Rows before the checkpoint are not read again; a full run checks them and the
  // checkpoint too. A run that finds nothing wrong moves the checkpoint to the last row.
  absl::StatusOr<Verification> Verify(int64_t population_id, const VerifyOptions& options);
  absl::StatusOr<Verification> Verify(int64_t population_id) {
    return Verify(population_id, VerifyOptions());
  }
  static constexpr int64_t kVerifyPageRows = 10000;

  // Every dataset's ledger, for metrics.
  absl::StatusOr<std::vector<BudgetState>> ListBudgets();
  // (Spend per analyst, for metrics: spend_tally.h.)

 private:
  Database* db_;
  std::function<void(double)> debit_observer_;
};

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_BUDGET_LEDGER_H_
