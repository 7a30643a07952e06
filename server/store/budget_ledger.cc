#include "server/store/budget_ledger.h"

#include <string>
#include <utility>
#include <vector>

#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/base/sha256.h"
#include "server/base/status_macros.h"
#include "server/dp/accounting/accountant_kind.h"
#include "server/store/admin_log.h"
#include "server/store/audit_chain.h"
#include "server/store/debit_batcher.h"
#include "server/store/debit_group.h"
#include "server/store/ledger_accounting.h"
#include "server/store/ledger_rows.h"
#include "server/store/one_trip_transaction.h"

namespace dpq::store {
namespace {

using dp::accounting::AccountantKind;

absl::StatusOr<pqxx::row> LockLedger(pqxx::work& tx, int64_t population_id) {
  return ReadLedger(tx, population_id, /*lock=*/true);
}

}  // namespace

absl::StatusOr<BudgetState> BudgetLedger::Get(int64_t population_id) {
  BudgetState b;
  RETURN_IF_ERROR(db_->Run("read budget", [&](pqxx::connection& c) -> absl::Status {
    pqxx::read_transaction tx(c);
    ASSIGN_OR_RETURN(pqxx::row row, ReadLedger(tx, population_id, /*lock=*/false));
    b = BudgetFromRow(row);
    return absl::OkStatus();
  }));
  return b;
}

absl::StatusOr<BudgetState> BudgetLedger::Set(int64_t population_id, int64_t epsilon_total_units,
                                              int64_t delta_total_units,
                                              const std::string& accountant,
                                              absl::optional<int64_t> max_query_epsilon_units,
                                              const AdminAction* log) {
  BudgetState b;
  RETURN_IF_ERROR(db_->Run("set budget", [&](pqxx::connection& c) -> absl::Status {
    pqxx::work tx(c);
    ASSIGN_OR_RETURN(pqxx::row locked, LockLedger(tx, population_id));
    const LedgerState ledger = LedgerFromRow(locked);
    b = ledger.budget;
    if (b.per_block) {
      return absl::FailedPreconditionError(
          absl::StrCat("the budget of population ", b.population,
                       " is per time block: set every block's with "
                       "`dpqctl budget set ",
                       b.population,
                       " --epsilon E --per-block`, or one block's with "
                       "--block YYYY-MM-DD"));
    }
    const std::string& state = ledger.accountant_state;
    const bool anything_spent = ledger.head_seq > 0;
    AccountantKind chosen = b.accountant;
    if (!accountant.empty()) {
      ASSIGN_OR_RETURN(chosen, dp::accounting::ParseAccountantKind(accountant));
    }
    if (chosen != b.accountant && anything_spent) {
      return absl::FailedPreconditionError(
          absl::StrCat("the accountant of population ", b.population, " is ",
                       AccountantName(b.accountant), " and cannot change once budget was spent"));
    }
    if (chosen != AccountantKind::kBasic && delta_total_units == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("delta must be > 0 for the ", AccountantName(chosen), " accountant"));
    }
    b.accountant = chosen;
    if (chosen != AccountantKind::kBasic) {
      // The spent epsilon of a converted accountant depends on the delta it is converted at.
      ASSIGN_OR_RETURN(b.epsilon_spent_units, SpentEpsilonUnits(chosen, state, delta_total_units));
      b.delta_spent_units = state.empty() ? 0 : delta_total_units;
    }
    if (epsilon_total_units < b.epsilon_spent_units || delta_total_units < b.delta_spent_units) {
      return absl::FailedPreconditionError(absl::StrCat(
          "budget cannot go below what is already spent (epsilon_spent=", b.epsilon_spent(),
          ", delta_spent=", b.delta_spent(), ")"));
    }
    if (max_query_epsilon_units.has_value()) b.max_query_epsilon_units = *max_query_epsilon_units;
    tx.exec_params0(
        "UPDATE ledgers SET accountant = $2, epsilon_total_units = $3, delta_total_units = $4, "
        "epsilon_spent_units = $5, delta_spent_units = $6, "
        "max_query_epsilon_units = nullif($7::bigint, 0), updated_at = now() WHERE population_id = $1",
        population_id, std::string(AccountantName(b.accountant)), epsilon_total_units,
        delta_total_units, b.epsilon_spent_units, b.delta_spent_units, b.max_query_epsilon_units);
    if (log != nullptr) AppendAdminAction(tx, *log);
    tx.commit();
    b.epsilon_total_units = epsilon_total_units;
    b.delta_total_units = delta_total_units;
    return absl::OkStatus();
  }));
  return b;
}

absl::StatusOr<absl::optional<Allocation>> BudgetLedger::FindAllocation(
    int64_t population_id, const std::string& request_id) {
  absl::optional<Allocation> a;
  RETURN_IF_ERROR(db_->Run("find allocation", [&](pqxx::connection& c) {
    PrepareLedgerStatements(c);
    // BEGIN and the plan mode (see LedgerStatements()) in one round trip: this runs on every query.
    OneTripTransaction t(c, OneTripTransaction::Mode::kReadOnly, kGenericPlans);
    pqxx::result r = t.tx().exec_prepared("dpq_find_allocation", population_id, request_id);
    if (!r.empty()) {
      a = AllocationFromRow(r[0]);
      AttachReleases(t.tx(), population_id, {&*a});
    }
    t.Commit();
    return absl::OkStatus();
  }));
  return a;
}

absl::StatusOr<DebitResult> BudgetLedger::Debit(int64_t population_id, Allocation allocation) {
  const absl::Time start = absl::Now();
  // The group runs on the leader's own function, so this debit's principal is the leader's.
  const int64_t principal = allocation.principal_id;
  absl::StatusOr<DebitResult> result =
      DebitBatcher::Shared().Submit(db_, population_id, std::move(allocation),
                                    [this, population_id, principal](DebitBatcher::Group& group) {
                                      CommitDebitGroup(db_, population_id, principal, group);
                                    });
  if (debit_observer_) debit_observer_(absl::ToDoubleSeconds(absl::Now() - start));
  return result;
}

absl::StatusOr<Allocation> BudgetLedger::StoreRelease(int64_t population_id, int64_t seq,
                                                      const Allocation::Release& release) {
  Allocation out;
  RETURN_IF_ERROR(db_->Run("store release", [&](pqxx::connection& c) -> absl::Status {
    pqxx::work tx(c);
    const pqxx::result paid = tx.exec_params(
        "SELECT hash, release_deferred FROM audit WHERE population_id = $1 AND seq = $2",
        population_id, seq);
    if (paid.empty()) {
      return absl::NotFoundError(
          absl::StrCat("no allocation ", seq, " on dataset ", population_id));
    }
    if (!paid[0][1].as<bool>()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "allocation ", seq, " carries its answer inline (written before migration 0007)"));
    }
    const std::string hash = ReleaseHash(Bytes(paid[0][0]), population_id, seq, release.value,
                                         release.ci_lower, release.ci_upper, release.result);
    // A concurrent insert of the same key waits for the other to commit, then does nothing; the
    // SELECT (a new snapshot under READ COMMITTED) then reads whichever release won.
    tx.exec_params0(
        "INSERT INTO releases (population_id, seq, released_value, released_ci_lower, released_ci_upper, "
        "released_result, release_hash) VALUES ($1, $2, $3::float8, $4::float8, $5::float8, $6, "
        "decode($7, 'hex')) ON CONFLICT (population_id, seq) DO NOTHING",
        population_id, seq, ExactDouble(release.value), ExactDouble(release.ci_lower),
        ExactDouble(release.ci_upper), release.result, ToHex(hash));
    const pqxx::row r = tx.exec_params1(
        absl::StrCat("SELECT ", kAllocationColumns, ", ", kReleaseColumns, " FROM ",
                     kAllocationWithRelease, " WHERE population_id = $1 AND seq = $2"),
        population_id, seq);
    out = AllocationFromRow(r);
    tx.commit();
    return absl::OkStatus();
  }));
  return out;
}

absl::StatusOr<Allocation> BudgetLedger::StoreRelease(int64_t population_id, const Allocation& paid,
                                                      const Allocation::Release& release) {
  Allocation::Release stored = release;
  stored.hash = ReleaseHash(paid.hash, population_id, paid.seq, release.value, release.ci_lower,
                            release.ci_upper, release.result);
  bool inserted = false;
  RETURN_IF_ERROR(db_->Run("store release", [&](pqxx::connection& c) -> absl::Status {
    // Autocommit: no BEGIN/COMMIT round trips; libpq returns once the implicit transaction has
    // committed (at the protocol's Sync), under the same synchronous_commit as a COMMIT.
    // Prepared once per connection: a primary-key probe plans alike for every value.
    c.prepare(
        "dpq_store_release",
        "INSERT INTO releases (population_id, seq, released_value, released_ci_lower, "
        "released_ci_upper, released_result, release_hash) "
        "SELECT population_id, seq, $3::float8, $4::float8, $5::float8, $6, decode($7, 'hex') "
        "FROM audit WHERE population_id = $1 AND seq = $2 AND release_deferred "
        "AND hash = decode($8, 'hex') ON CONFLICT (population_id, seq) DO NOTHING RETURNING seq");
    pqxx::nontransaction tx(c);
    inserted =
        !tx.exec_prepared("dpq_store_release", population_id, paid.seq, ExactDouble(release.value),
                          ExactDouble(release.ci_lower), ExactDouble(release.ci_upper),
                          release.result, ToHex(stored.hash), ToHex(paid.hash))
             .empty();
    return absl::OkStatus();
  }));
  if (!inserted) return StoreRelease(population_id, paid.seq, release);  // the winner, or the error
  Allocation out = paid;
  out.release = std::move(stored);
  return out;
}

absl::StatusOr<std::vector<Allocation>> BudgetLedger::ListAllocations(int64_t population_id) {
  std::vector<Allocation> out;
  RETURN_IF_ERROR(db_->Run("list audit", [&](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    for (const auto& row : tx.exec_params(
             absl::StrCat("SELECT ", kAllocationColumns, ", ", kReleaseColumns, " FROM ",
                          kAllocationWithRelease, " WHERE population_id = $1 ORDER BY seq"),
             population_id)) {
      out.push_back(AllocationFromRow(row));
    }
    return absl::OkStatus();
  }));
  return out;
}

absl::StatusOr<std::vector<BudgetState>> BudgetLedger::ListBudgets() {
  std::vector<BudgetState> out;
  RETURN_IF_ERROR(db_->Run("list budgets", [&](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    for (const auto& row : tx.exec(absl::StrCat(
             "SELECT ", kBudgetColumns,
             " FROM ledgers l JOIN populations p ON p.id = l.population_id ORDER BY p.name"))) {
      out.push_back(BudgetFromRow(row));
    }
    return absl::OkStatus();
  }));
  return out;
}

}  // namespace dpq::store
