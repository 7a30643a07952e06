// BudgetLedger::Verify: a dataset's audit chain read in pages of kVerifyPageRows rows inside one
// repeatable-read snapshot, from genesis or from the dataset's checkpoint (audit_verified,
// migration 0013). Only the running recomputation is kept, never the rows, so memory does not
// grow with the history.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>

#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "absl/types/optional.h"
#include "server/base/sha256.h"
#include "server/base/status_macros.h"
#include "server/query/calendar.h"
#include "server/query/time_blocks/time_blocks.h"
#include "server/store/audit_chain.h"
#include "server/store/budget_ledger.h"
#include "server/store/ledger_accounting.h"
#include "server/store/ledger_rows.h"

namespace dpq::store {
namespace {

using dp::accounting::AccountantKind;

// Per time block (first day): epsilon and delta units spent.
using BlockSpends = std::map<int64_t, std::pair<int64_t, int64_t>>;

// A walk after row `seq` (0: genesis) and what it recomputed from rows 1..seq.
struct ChainPoint {
  int64_t seq = 0;
  std::string hash = GenesisHash();
  int64_t epsilon_units = 0, delta_units = 0;  // the rows' charges added up
  std::string state;                           // non-basic ledgers: the rows' events composed
};

struct Checkpoint {
  ChainPoint point;
  std::string accountant;   // as stored (audit_verified.accountant)
  std::string verified_at;  // RFC 3339 UTC, for messages
  bool full_due = false;    // the last walk from genesis is older than asked (or there was none)
};

// Checks rows handed to it in seq order, starting after `from`, and recomputes the ledger from
// them. After the first broken link it only recomputes (what spent the rows add up to is still
// reported).
class ChainWalk {
 public:
  ChainWalk(int64_t population_id, const BudgetState& budget, ChainPoint from)
      : population_id_(population_id),
        budget_(budget),
        at_(std::move(from)),
        from_genesis_(at_.seq == 0) {
    budget_.epsilon_spent_units = 0;
    budget_.epsilon_total_units = INT64_MAX;  // recompute, never refuse
  }

  void Add(const Allocation& a) {
    if (first_broken_seq_ == 0) Check(a);
    Recompute(a);
    at_.seq = a.seq;
    at_.hash = a.hash;
  }

  const ChainPoint& at() const { return at_; }
  // Per-block ledgers, walked from genesis: what the rows charged each block (by first day).
  bool from_genesis() const { return from_genesis_; }
  const BlockSpends& block_spends() const { return blocks_; }
  int64_t first_broken_seq() const { return first_broken_seq_; }
  const std::string& reason() const { return reason_; }

 private:
  void Broken(int64_t seq, std::string reason) {
    first_broken_seq_ = seq;
    reason_ = std::move(reason);
  }

  void Check(const Allocation& a) {
    const int64_t want = at_.seq + 1;
    if (a.seq != want) {
      Broken(want, absl::StrCat("row ", want, " is missing (next row has seq ", a.seq, ")"));
    } else if (a.prev_hash != at_.hash) {
      Broken(a.seq, absl::StrCat("row ", a.seq, " does not link to the previous row's hash"));
    } else if (ChainHash(a.prev_hash, population_id_, a) != a.hash) {
      Broken(a.seq, absl::StrCat("row ", a.seq, " content does not match its hash (altered)"));
    } else if (a.release.has_value() &&
               (!a.release_deferred ||
                ReleaseHash(a.hash, population_id_, a.seq, a.release->value, a.release->ci_lower,
                            a.release->ci_upper, a.release->result) != a.release->hash)) {
      Broken(a.seq, absl::StrCat("row ", a.seq, ": its release does not match its hash (altered)"));
    }
  }

  void Recompute(const Allocation& a) {
    at_.epsilon_units += a.epsilon_units;
    at_.delta_units += a.delta_units;
    if (!a.blocks.empty() && from_genesis_) {
      const absl::optional<query::PaidBlocks> paid = query::ParseBlockRange(a.blocks);
      if (!paid.has_value()) {
        if (first_broken_seq_ == 0) Broken(a.seq, absl::StrCat("row ", a.seq, ": bad blocks"));
        return;
      }
      for (int64_t start : query::BlockStarts(paid->width, paid->range)) {
        blocks_[start].first += a.epsilon_units;
        blocks_[start].second += a.delta_units;
      }
    }
    if (budget_.accountant == AccountantKind::kBasic || compose_failed_) return;
    absl::StatusOr<ComposedState> composed = ComposeCharge(budget_, at_.state, a.events);
    if (!composed.ok()) {
      compose_failed_ = true;
      if (first_broken_seq_ == 0) {
        Broken(a.seq, absl::StrCat("row ", a.seq,
                                   ": its events do not compose: ", composed.status().message()));
      }
      return;
    }
    at_.state = std::move(composed->state);
  }

  const int64_t population_id_;
  BudgetState budget_;
  ChainPoint at_;
  int64_t first_broken_seq_ = 0;
  std::string reason_;
  bool compose_failed_ = false;
  const bool from_genesis_;
  BlockSpends blocks_;
};

// The spent figures of a per-block population's cells, by first day.
BlockSpends ReadBlockSpends(pqxx::transaction_base& tx, int64_t population_id) {
  BlockSpends spends;
  for (const pqxx::row& r : tx.exec_params(
           "SELECT block_start - date '1970-01-01', epsilon_spent_units, delta_spent_units "
           "FROM ledger_blocks WHERE population_id = $1 AND (epsilon_spent_units > 0 OR "
           "delta_spent_units > 0)",
           population_id)) {
    spends[r[0].as<int64_t>()] = {r[1].as<int64_t>(), r[2].as<int64_t>()};
  }
  return spends;
}

// A walk from genesis of a per-block ledger: each cell must have spent what the rows that paid
// its block add up to, and no cell more.
std::string BlockSpendProblem(const ChainWalk& walk, const BlockSpends& cells) {
  if (!walk.from_genesis() || walk.block_spends() == cells) return "";
  for (const auto& [start, spent] : walk.block_spends()) {
    auto cell = cells.find(start);
    if (cell == cells.end() || cell->second != spent) {
      return absl::StrCat("the spent budget of time block ", query::FormatDate(start),
                          " differs from the sum recomputed from the audit rows");
    }
  }
  // Every paid block matched: some cell holds a spend that no row paid. Name it, as above.
  for (const auto& [start, spent] : cells) {
    if (walk.block_spends().count(start) == 0) {
      return absl::StrCat("the cell of time block ", query::FormatDate(start),
                          " holds a spend that no audit row paid");
    }
  }
  return "";
}

// The dataset's checkpoint, if any; full_due when its last walk from genesis is older than
// `full_after_seconds` (> 0) or there was none.
absl::optional<Checkpoint> ReadCheckpoint(pqxx::transaction_base& tx, int64_t population_id,
                                          double full_after_seconds) {
  const pqxx::result r = tx.exec_params(
      "SELECT seq, hash, accountant, epsilon_spent_units, delta_spent_units, accountant_state, "
      "to_char(verified_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), "
      "full_verified_at IS NULL OR ($2::float8 > 0 AND "
      "full_verified_at <= now() - $2::float8 * interval '1 second') "
      "FROM audit_verified WHERE population_id = $1",
      population_id, ExactDouble(full_after_seconds));
  if (r.empty()) return absl::nullopt;
  Checkpoint cp;
  cp.point.seq = r[0][0].as<int64_t>();
  cp.point.hash = Bytes(r[0][1]);
  cp.accountant = r[0][2].as<std::string>();
  cp.point.epsilon_units = r[0][3].as<int64_t>();
  cp.point.delta_units = r[0][4].as<int64_t>();
  cp.point.state = r[0][5].as<std::string>();
  cp.verified_at = r[0][6].as<std::string>();
  cp.full_due = r[0][7].as<bool>();
  return cp;
}

// Hands every audit row of the dataset with seq > `after` to `row`, in seq order, reading
// kVerifyPageRows rows (and their releases) per statement: each page is a range scan of the
// (population_id, seq) keys of audit and of releases, and only one page is held at a time.
void ForEachRowAfter(pqxx::transaction_base& tx, int64_t population_id, int64_t after,
                     const std::function<void(const Allocation&)>& row) {
  // A page must be read in key order, never sorted: with statistics older than the dataset's
  // history (a young dataset, or rows since the last ANALYZE) PostgreSQL estimates a few hundred
  // rows and plans a bitmap scan of every row after `after` plus a sort, so each page cost the
  // whole rest of the history (measured on 200,000 rows: 0.7 s per page, the sort spilling 49 MB
  // to disk; 13 s for the walk). With sorts off, the ordered index scan is the only plan left.
  tx.exec0("SET LOCAL enable_sort = off");
  for (;;) {
    const pqxx::result page = tx.exec_params(
        absl::StrCat("SELECT ", kAllocationColumns,
                     " FROM audit WHERE population_id = $1 AND seq > $2 ORDER BY seq LIMIT $3"),
        population_id, after, BudgetLedger::kVerifyPageRows);
    if (page.empty()) return;
    const int64_t last = page[page.size() - 1][0].as<int64_t>();
    std::map<int64_t, Allocation::Release> releases;
    for (const pqxx::row& r : tx.exec_params(
             absl::StrCat("SELECT seq, ", kReleaseColumns,
                          " FROM releases WHERE population_id = $1 AND seq > $2 AND seq <= $3"),
             population_id, after, last)) {
      releases.emplace(r[0].as<int64_t>(), ReleaseFromRow(r, 1));
    }
    for (const pqxx::row& r : page) {
      Allocation a = AllocationFromRow(r);
      if (auto it = releases.find(a.seq); it != releases.end()) a.release = std::move(it->second);
      row(a);
    }
    if (static_cast<int64_t>(page.size()) < BudgetLedger::kVerifyPageRows) return;
    after = last;
  }
}

// Why the checkpoint cannot be continued from, or "" when it can: the row it names must still be
// there with the hash it was verified with and hash to it, and the ledger's accountant must be
// the one its state was composed with.
std::string CheckpointProblem(pqxx::transaction_base& tx, int64_t population_id,
                              const Checkpoint& cp, AccountantKind accountant, int64_t* rows_read) {
  const std::string when = absl::StrCat(" verified at ", cp.verified_at);
  if (cp.accountant != AccountantName(accountant)) {
    return absl::StrCat("the ledger's accountant is ", accountant, " but was ", cp.accountant,
                        " when the chain was", when, " up to row ", cp.point.seq);
  }
  const pqxx::result r =
      tx.exec_params(absl::StrCat("SELECT ", kAllocationColumns,
                                  " FROM audit WHERE population_id = $1 AND seq = $2"),
                     population_id, cp.point.seq);
  if (r.empty()) {
    return absl::StrCat("row ", cp.point.seq, ",", when, ", is gone: rows were removed");
  }
  ++*rows_read;
  const Allocation a = AllocationFromRow(r[0]);
  if (a.hash != cp.point.hash || ChainHash(a.prev_hash, population_id, a) != a.hash) {
    return absl::StrCat("row ", cp.point.seq, " differs from the row", when,
                        ": the chain was rewritten up to it");
  }
  return "";
}

// Moves the checkpoint forward to `end` (never back; a concurrent verification may have moved
// it further already). `full`: `end` was reached from genesis.
void WriteCheckpoint(pqxx::transaction_base& tx, int64_t population_id, AccountantKind accountant,
                     const ChainPoint& end, bool full) {
  tx.exec_params0(
      "INSERT INTO audit_verified AS v (population_id, seq, hash, accountant, epsilon_spent_units, "
      "delta_spent_units, accountant_state, verified_at, full_verified_at) "
      "VALUES ($1, $2, decode($3, 'hex'), $4, $5, $6, $7, now(), CASE WHEN $8 THEN now() END) "
      "ON CONFLICT (population_id) DO UPDATE SET seq = EXCLUDED.seq, hash = EXCLUDED.hash, "
      "accountant = EXCLUDED.accountant, epsilon_spent_units = EXCLUDED.epsilon_spent_units, "
      "delta_spent_units = EXCLUDED.delta_spent_units, accountant_state = EXCLUDED.accountant_state, "
      "verified_at = now(), full_verified_at = coalesce(EXCLUDED.full_verified_at, v.full_verified_at) "
      "WHERE v.seq < EXCLUDED.seq OR (v.seq = EXCLUDED.seq AND v.hash = EXCLUDED.hash)",
      population_id, end.seq, ToHex(end.hash), std::string(AccountantName(accountant)),
      end.epsilon_units, end.delta_units, end.state, full);
}

// Fills `v` from a finished walk: the chain's breaks, then the ledger head (a deleted tail),
// then the checkpoint, then the spent budget and accountant state recomputed from the rows.
// `ledger`: what the ledger row said when the chain was read.
absl::Status Judge(const ChainWalk& walk, const LedgerState& ledger,
                   const std::string& checkpoint_problem, const BlockSpends& cells,
                   BudgetLedger::Verification* v) {
  const BudgetState& budget = ledger.budget;
  const ChainPoint& end = walk.at();
  v->entries = end.seq;
  v->first_broken_seq = walk.first_broken_seq();
  v->reason = walk.reason();
  v->epsilon_spent_ledger_units = budget.epsilon_spent_units;
  v->delta_spent_ledger_units = budget.delta_spent_units;
  if (v->first_broken_seq == 0 && (ledger.head_seq != end.seq || ledger.head_hash != end.hash)) {
    v->first_broken_seq = std::min(ledger.head_seq, end.seq) + 1;
    v->reason = absl::StrCat("the ledger head (seq ", ledger.head_seq,
                             ") does not match the chain's last row (seq ", end.seq,
                             "): rows were removed or added outside dpqd");
  }
  if (v->reason.empty() && !checkpoint_problem.empty()) {
    v->first_broken_seq = std::min(v->checkpoint_seq, end.seq + 1);
    v->reason = checkpoint_problem;
  }

  // What the ledger should have spent, recomputed from the rows.
  if (budget.accountant == AccountantKind::kBasic) {
    v->epsilon_spent_recomputed_units = end.epsilon_units;
    v->delta_spent_recomputed_units = end.delta_units;
  } else {
    ASSIGN_OR_RETURN(v->epsilon_spent_recomputed_units,
                     SpentEpsilonUnits(budget.accountant, end.state, budget.delta_total_units));
    v->delta_spent_recomputed_units = end.state.empty() ? 0 : budget.delta_total_units;
    if (v->reason.empty() && end.state != ledger.accountant_state) {
      v->reason =
          "the ledger's accountant state differs from the one recomputed from the audit rows";
    }
  }
  if (v->reason.empty() && (v->epsilon_spent_recomputed_units != budget.epsilon_spent_units ||
                            v->delta_spent_recomputed_units != budget.delta_spent_units)) {
    v->reason = "the ledger's spent budget differs from the sum recomputed from the audit rows";
  }
  if (v->reason.empty() && budget.per_block) v->reason = BlockSpendProblem(walk, cells);
  v->ok = v->reason.empty();
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<BudgetLedger::Verification> BudgetLedger::Verify(int64_t population_id,
                                                                const VerifyOptions& options) {
  Verification v;
  LedgerState ledger;
  const BudgetState& budget = ledger.budget;
  std::string checkpoint_problem;
  absl::optional<ChainWalk> walk;
  BlockSpends cells;
  // One snapshot: the checkpoint, the rows, the head and the state are read in the same
  // repeatable-read transaction (Run repeats it whole after a serialization failure).
  RETURN_IF_ERROR(db_->Run("verify audit", [&](pqxx::connection& c) -> absl::Status {
    v = Verification();
    checkpoint_problem.clear();
    pqxx::transaction<pqxx::isolation_level::repeatable_read, pqxx::readwrite_policy::read_only> tx(
        c);
    ASSIGN_OR_RETURN(pqxx::row row, ReadLedger(tx, population_id, /*lock=*/false));
    ledger = LedgerFromRow(row);
    const absl::optional<Checkpoint> cp =
        ReadCheckpoint(tx, population_id, options.full_after_seconds);
    ChainPoint from;
    if (cp.has_value()) {
      v.checkpoint_seq = cp->point.seq;
      if (!options.full && !cp->full_due) {
        checkpoint_problem =
            CheckpointProblem(tx, population_id, *cp, budget.accountant, &v.rows_read);
        if (checkpoint_problem.empty()) from = cp->point;  // else: from genesis, to find the break
      } else if (cp->accountant != AccountantName(budget.accountant)) {
        checkpoint_problem =
            CheckpointProblem(tx, population_id, *cp, budget.accountant, &v.rows_read);
      }
    }
    v.full = from.seq == 0;
    walk.emplace(population_id, budget, std::move(from));
    ForEachRowAfter(tx, population_id, walk->at().seq, [&](const Allocation& a) {
      ++v.rows_read;
      // A walk from genesis passes the checkpoint: the row must be the one verified then.
      if (cp.has_value() && a.seq == cp->point.seq && a.hash != cp->point.hash &&
          checkpoint_problem.empty()) {
        checkpoint_problem = absl::StrCat("row ", a.seq, " differs from the row verified at ",
                                          cp->verified_at, ": the chain was rewritten up to it");
      }
      walk->Add(a);
    });
    if (budget.per_block) cells = ReadBlockSpends(tx, population_id);
    if (cp.has_value() && walk->at().seq < cp->point.seq && checkpoint_problem.empty()) {
      checkpoint_problem =
          absl::StrCat("the chain ends at row ", walk->at().seq, ", before row ", cp->point.seq,
                       " verified at ", cp->verified_at, ": rows were removed");
    }
    tx.commit();
    return absl::OkStatus();
  }));
  RETURN_IF_ERROR(Judge(*walk, ledger, checkpoint_problem, cells, &v));
  const ChainPoint& end = walk->at();
  if (v.ok && end.seq > 0) {
    RETURN_IF_ERROR(db_->Run("record audit checkpoint", [&](pqxx::connection& c) {
      pqxx::work tx(c);
      WriteCheckpoint(tx, population_id, budget.accountant, end, v.full);
      tx.commit();
      return absl::OkStatus();
    }));
  }
  return v;
}

}  // namespace dpq::store
