#include "server/store/budget_ledger.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "server/base/sha256.h"
#include "server/base/status_macros.h"
#include "server/store/array_literal.h"
#include "server/store/admin_log.h"
#include "server/store/audit_chain.h"
#include "server/store/debit_batcher.h"
#include "server/store/ledger_accounting.h"
#include "server/store/ledger_rows.h"
#include "server/store/one_trip_transaction.h"

namespace dpq::store {
namespace {

// Reads the releases of the deferred allocations among `allocations` (all of `dataset_id`) by
// primary key, one statement.
void AttachReleases(pqxx::transaction_base& tx, int64_t dataset_id,
                    const std::vector<Allocation*>& allocations) {
  std::map<int64_t, Allocation*> by_seq;
  ArrayLiteral seqs;
  for (Allocation* a : allocations) {
    if (!a->release_deferred) continue;
    by_seq[a->seq] = a;
    seqs.AddInt(a->seq);
  }
  if (by_seq.empty()) return;
  for (const pqxx::row& r : tx.exec_params(
           absl::StrCat("SELECT seq, ", kReleaseColumns,
                        " FROM releases WHERE dataset_id = $1 AND seq = ANY($2::bigint[])"),
           dataset_id, seqs.str())) {
    by_seq.at(r[0].as<int64_t>())->release = ReleaseFromRow(r, 1);
  }
}

// ---- Group commit of debits (debit_batcher.h): the group's transaction. ----

// The statements of the debit transaction (and FindAllocation's), prepared once per pooled
// connection (libpqxx 6.4's prepare() is a no-op when a name is defined again with the same text;
// the server-side PREPARE happens on first use) and run with generic plans (kGenericPlans, SET
// LOCAL: no effect beyond the transaction). `FOR UPDATE OF l` also names the lock wait in
// pg_stat_activity.
//
// Why generic plans: planned for a known dataset id (plain queries, or prepared ones on their
// custom plans), PostgreSQL 15 looks a request id up through audit_cache_lookup or
// (dataset_id, seq), with `dataset_id = <id>` as the index condition and the request id as a mere
// filter, whenever its statistics think that dataset is small: any dataset created or grown since
// the last ANALYZE, which on a large audit table can be a long time. That is a scan of the
// dataset's whole history per lookup (measured: 1.9 ms per group after 20k debits in
// bench/ledger_debit_bench; EXPLAIN shows "Rows Removed by Filter: 2999" at 3k rows). A generic plan
// estimates `dataset_id = $1` from the number of distinct datasets instead, and the lookups are
// equalities on the whole unique key (dataset_id, request_id), so they probe the unique index. The
// group's lookup is one LATERAL probe per id because `request_id = ANY($2)` is costed as ten probes
// and lost to the scan even as a generic plan on a fresh table.
constexpr char kGenericPlans[] = "SET LOCAL plan_cache_mode = force_generic_plan";

struct Statement {
  const char* name;
  std::string sql;
};

const std::vector<Statement>& LedgerStatements() {
  static const std::vector<Statement>* const statements = new std::vector<Statement>{
      {"dpq_find_allocation",
       absl::StrCat("SELECT ", kAllocationColumns, " FROM audit WHERE dataset_id = $1 AND request_id = $2")},
      {"dpq_debit_lock_ledger",
       absl::StrCat("SELECT ", kBudgetColumns,
                    " FROM ledgers l JOIN datasets d ON d.id = l.dataset_id WHERE l.dataset_id = $1 "
                    "FOR UPDATE OF l")},
      // ORDER BY below FOR UPDATE: rows are locked in principal order (the LockRows step runs on
      // the sorted rows), the one order every debit group uses.
      {"dpq_debit_lock_grants",
       "SELECT principal_id, epsilon_cap_units, delta_cap_units, epsilon_spent_units, "
       "delta_spent_units FROM grants WHERE dataset_id = $1 AND principal_id = ANY($2::bigint[]) "
       "ORDER BY principal_id FOR UPDATE"},
      // The group's writes in one statement (one round trip): the ledger's new head and spend, the
      // charged grants' spend, and one audit row per admitted debit. Data-modifying CTEs all run
      // to completion whatever the outer statement reads, on rows this transaction has locked
      // (steps 1 and 3), so the result is that of the three statements in a row. Every value is a
      // bound parameter (arrays, unnested in parallel); doubles travel as %.17g text and hashes as
      // hex, so all round-trip exactly.
      {"dpq_debit_write",
       "WITH ledger AS (UPDATE ledgers SET epsilon_spent_units = $28, delta_spent_units = $29, "
       "audit_head_seq = $30, audit_head_hash = decode($31, 'hex'), accountant_state = $32, "
       "updated_at = now() WHERE dataset_id = $1 RETURNING 1), "
       "charged AS (UPDATE grants g SET epsilon_spent_units = c.epsilon_spent_units, "
       "delta_spent_units = c.delta_spent_units FROM unnest($33::bigint[], $34::bigint[], "
       "$35::bigint[]) AS c(principal_id, epsilon_spent_units, delta_spent_units) "
       "WHERE g.principal_id = c.principal_id AND g.dataset_id = $1 RETURNING 1) "
       "INSERT INTO audit (dataset_id, seq, request_id, principal_id, analyst, fingerprint, "
       "aggregate, column_name, mechanism, epsilon_units, delta_units, sensitivity, noise_scale, "
       "count_noise_scale, value, confidence, ci_lower, ci_upper, clamp_lower, clamp_upper, "
       "max_contributions, prev_hash, hash, events, dataset_version, result, release_deferred) "
       "SELECT $1, u.seq, u.request_id, u.principal_id, u.analyst, u.fingerprint, u.aggregate, "
       "u.column_name, u.mechanism, u.epsilon_units, u.delta_units, u.sensitivity::float8, "
       "u.noise_scale::float8, u.count_noise_scale::float8, u.val::float8, u.confidence::float8, "
       "u.ci_lower::float8, u.ci_upper::float8, nullif(u.clamp_lower, '')::float8, "
       "nullif(u.clamp_upper, '')::float8, u.max_contributions, decode(u.prev_hash, 'hex'), "
       "decode(u.hash, 'hex'), u.events, u.dataset_version, u.result, u.release_deferred "
       "FROM unnest($2::bigint[], $3::text[], $4::bigint[], $5::text[], $6::text[], $7::text[], "
       "$8::text[], $9::text[], $10::bigint[], $11::bigint[], $12::text[], $13::text[], $14::text[], "
       "$15::text[], $16::text[], $17::text[], $18::text[], $19::text[], $20::text[], $21::int[], "
       "$22::text[], $23::text[], $24::text[], $25::bigint[], $26::text[], $27::bool[]) "
       "AS u(seq, request_id, principal_id, analyst, fingerprint, aggregate, column_name, mechanism, "
       "epsilon_units, delta_units, sensitivity, noise_scale, count_noise_scale, val, confidence, "
       "ci_lower, ci_upper, clamp_lower, clamp_upper, max_contributions, prev_hash, hash, events, "
       "dataset_version, result, release_deferred) "
       "RETURNING seq, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"},
  };
  return *statements;
}

void PrepareLedgerStatements(pqxx::connection& c) {
  for (const Statement& s : LedgerStatements()) c.prepare(s.name, s.sql);
}

// The committed rows among a group's request ids ($2), one LATERAL probe of the unique index per
// id. Prepared under a name that changes each time the dataset's history doubles
// (dpq_debit_find_prior_<bit width of the head seq>): a generic plan is made at a statement's
// first execution and kept until the table's statistics change, and one made while the table was
// nearly empty may still pick audit_cache_lookup (all index paths cost alike when the dataset is
// estimated at one row). A fresh plan at every doubling is made with the table's current size, so
// that choice lasts at most until the history doubles; a connection keeps at most 64 variants.
std::string PrepareFindPrior(pqxx::connection& c, int64_t head_seq) {
  static const std::string* const sql = new std::string(absl::StrCat(
      "SELECT a.* FROM unnest($2::text[]) AS r(request_id) CROSS JOIN LATERAL (SELECT ",
      kAllocationColumns, " FROM audit WHERE dataset_id = $1 AND request_id = r.request_id LIMIT 1) a"));
  int width = 0;
  for (uint64_t v = static_cast<uint64_t>(std::max<int64_t>(head_seq, 0)); v != 0; v >>= 1) ++width;
  std::string name = absl::StrCat("dpq_debit_find_prior_", width);
  c.prepare(name, *sql);
  return name;
}

// An analyst's grant row on the dataset, locked for the group: the cap and what was charged against
// it so far, advanced in memory as the group's debits are admitted.
struct GrantCap {
  absl::optional<int64_t> epsilon_cap_units, delta_cap_units;  // nullopt: no cap
  int64_t epsilon_spent_units = 0, delta_spent_units = 0;
  bool charged = false;  // changed by this group: written back before COMMIT
};

// RESOURCE_EXHAUSTED when `a`'s nominal charge does not fit the analyst's cap (caps compose
// basically; decisions.md). Compared as "charge <= cap - spent", which cannot overflow.
absl::Status CheckCap(const GrantCap& g, const std::string& dataset, const Allocation& a) {
  const bool over_epsilon =
      g.epsilon_cap_units && a.epsilon_units > *g.epsilon_cap_units - g.epsilon_spent_units;
  const bool over_delta = g.delta_cap_units && a.delta_units > *g.delta_cap_units - g.delta_spent_units;
  if (!over_epsilon && !over_delta) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrFormat(
      "analyst %s's cap on dataset %s exhausted: requested epsilon=%.12g delta=%.12g, cap "
      "remaining epsilon=%s delta=%s; ask for less, or ask an admin to raise the cap "
      "(`dpqctl grant %s %s --epsilon-cap E`)",
      a.analyst, dataset, query::EpsilonFromUnits(a.epsilon_units), query::DeltaFromUnits(a.delta_units),
      g.epsilon_cap_units
          ? absl::StrFormat("%.12g", query::EpsilonFromUnits(*g.epsilon_cap_units - g.epsilon_spent_units))
          : std::string("unlimited"),
      g.delta_cap_units
          ? absl::StrFormat("%.12g", query::DeltaFromUnits(*g.delta_cap_units - g.delta_spent_units))
          : std::string("unlimited"),
      a.analyst, dataset));
}

absl::Status RequestIdTaken(const std::string& request_id) {
  return absl::AlreadyExistsError(absl::StrCat(
      "request_id ", request_id, " is already taken by a different query or analyst; use a new id"));
}

absl::optional<int64_t> OptionalInt(const pqxx::field& f) {
  if (f.is_null()) return absl::nullopt;
  return f.as<int64_t>();
}

absl::StatusOr<pqxx::row> LockLedger(pqxx::work& tx, int64_t dataset_id) {
  return ReadLedger(tx, dataset_id, /*lock=*/true);
}

std::string OptionalDouble(const absl::optional<double>& v) { return v ? ExactDouble(*v) : ""; }

// Decides and writes one group of debits of `dataset_id` (debit_batcher.h), members in arrival
// order, in ONE transaction: lock the ledger row, take the group, look up its request ids, lock the
// grants, admit in memory, one multi-row INSERT, one UPDATE of the ledger (and one per charged
// grant), one COMMIT. Every member gets its own result; why this is safe is in budget_ledger.h.
void CommitDebitGroup(Database* db, int64_t dataset_id, DebitBatcher::Group& taker) {
  absl::Span<DebitBatcher::Member* const> group;
  size_t n = 0;
  // Each member's own outcome, decided under the locks. A repeat of a request id admitted earlier
  // in this same group replays that member (replay_of), whose row exists only once inserted.
  std::vector<absl::StatusOr<DebitResult>> decided;
  std::vector<std::ptrdiff_t> replay_of;
  const absl::Status run = db->Run("debit", [&](pqxx::connection& c) -> absl::Status {
    PrepareLedgerStatements(c);
    // BEGIN and the plan mode in one round trip (one_trip_transaction.h).
    OneTripTransaction t(c, OneTripTransaction::Mode::kReadWrite, kGenericPlans);
    pqxx::transaction_base& tx = t.tx();

    // 1. The ledger row, locked until the transaction ends: every budget change of the dataset is
    //    serialised on it, group after group.
    const pqxx::result ledger = tx.exec_prepared("dpq_debit_lock_ledger", dataset_id);
    if (ledger.empty()) return absl::NotFoundError(absl::StrCat("no ledger for dataset id ", dataset_id));
    // Only now take the group: debits that arrived while this leader connected and waited for the
    // lock join it (under load, those are typically the members of the previous group, back with
    // their next debit). A retried transaction gets the same group.
    group = taker.Take();
    n = group.size();
    // Run repeats this function after a serialization failure: decide everything afresh.
    decided.assign(n, absl::InternalError("debit not decided"));
    replay_of.assign(n, -1);
    BudgetState budget = BudgetFromRow(ledger[0]);
    int64_t head_seq = ledger[0][7].as<int64_t>();
    std::string head_hash = Bytes(ledger[0][8]);
    std::string state = ledger[0][9].as<std::string>();

    // 2. The group's request ids already committed, in one query. It runs after the lock, so its
    //    snapshot includes every earlier debit of the dataset: two groups cannot both admit an id.
    std::set<std::string> distinct_ids;
    std::set<int64_t> principal_ids;
    for (const DebitBatcher::Member* m : group) {
      if (!m->allocation.request_id_is_fresh) distinct_ids.insert(m->allocation.request_id);
      principal_ids.insert(m->allocation.principal_id);
    }
    std::map<std::string, Allocation> prior;
    if (!distinct_ids.empty()) {  // only ids the callers chose can name a committed row
      ArrayLiteral request_ids;
      for (const std::string& id : distinct_ids) request_ids.AddText(id);
      const std::string find_prior = PrepareFindPrior(c, head_seq);
      for (const auto& row : tx.exec_prepared(find_prior, dataset_id, request_ids.str())) {
        Allocation a = AllocationFromRow(row);
        std::string id = a.request_id;
        prior.emplace(std::move(id), std::move(a));
      }
    }
    {
      std::vector<Allocation*> found;
      for (auto& [id, a] : prior) found.push_back(&a);
      AttachReleases(tx, dataset_id, found);
    }

    // 3. The grant rows of the group's principals (lock order: ledger, then grants by principal
    //    id; a grant row belongs to one dataset, so groups of different datasets share no row).
    //    Principals without a grant row (admins) have no cap.
    ArrayLiteral principals;
    for (int64_t id : principal_ids) principals.AddInt(id);
    std::map<int64_t, GrantCap> grants;
    for (const auto& row : tx.exec_prepared("dpq_debit_lock_grants", dataset_id, principals.str())) {
      GrantCap g;
      g.epsilon_cap_units = OptionalInt(row[1]);
      g.delta_cap_units = OptionalInt(row[2]);
      g.epsilon_spent_units = row[3].as<int64_t>();
      g.delta_spent_units = row[4].as<int64_t>();
      grants.emplace(row[0].as<int64_t>(), g);
    }

    // 4. Admission in arrival order, each debit checked against the budget, accountant state,
    //    caps and chain head left by the previously admitted one: the outcome of running the
    //    group's debits one after another. A refused debit changes nothing and refuses no other.
    std::vector<size_t> admitted;
    std::map<std::string, size_t> admitted_by_id;
    for (size_t i = 0; i < n; ++i) {
      const Allocation& in = group[i]->allocation;
      if (auto p = prior.find(in.request_id); p != prior.end()) {
        if (p->second.fingerprint != in.fingerprint) {
          decided[i] = RequestIdTaken(in.request_id);
        } else {
          decided[i] = DebitResult{p->second, budget, /*replayed=*/true};
        }
        continue;
      }
      if (auto t = admitted_by_id.find(in.request_id); t != admitted_by_id.end()) {
        if (group[t->second]->allocation.fingerprint != in.fingerprint) {
          decided[i] = RequestIdTaken(in.request_id);
        } else {
          decided[i] = DebitResult{Allocation(), budget, /*replayed=*/true};
          replay_of[i] = static_cast<std::ptrdiff_t>(t->second);
        }
        continue;
      }
      // Exact integer arithmetic (privacy_units.h): a charge fits iff it is at most what remains.
      if (in.epsilon_units <= 0 || in.delta_units < 0) {
        decided[i] = absl::InvalidArgumentError("a charge needs epsilon > 0 and delta >= 0");
        continue;
      }
      BudgetState after = budget;
      std::string state_after;
      if (budget.accountant == "basic") {
        if (in.epsilon_units > budget.epsilon_remaining_units() ||
            in.delta_units > budget.delta_remaining_units()) {
          decided[i] = BudgetExhausted(budget, in.epsilon_units, in.delta_units);
          continue;
        }
        after.epsilon_spent_units += in.epsilon_units;
        after.delta_spent_units += in.delta_units;
      } else {
        // Composed onto the state the previous admitted debit of this group produced.
        absl::StatusOr<ComposedState> composed = ComposeCharge(budget, state, in.events);
        if (!composed.ok()) {
          decided[i] = composed.status();
          continue;
        }
        after.epsilon_spent_units = composed->epsilon_spent_units;
        after.delta_spent_units = composed->delta_spent_units;
        state_after = std::move(composed->state);
      }
      auto grant = grants.find(in.principal_id);
      if (grant != grants.end()) {
        if (absl::Status cap = CheckCap(grant->second, budget.dataset, in); !cap.ok()) {
          decided[i] = std::move(cap);
          continue;
        }
        grant->second.epsilon_spent_units += in.epsilon_units;
        grant->second.delta_spent_units += in.delta_units;
        grant->second.charged = true;
      }
      Allocation a = in;
      a.seq = head_seq + 1;
      a.prev_hash = head_hash;
      a.hash = ChainHash(head_hash, dataset_id, a);
      head_seq = a.seq;
      head_hash = a.hash;
      budget = after;
      if (budget.accountant != "basic") state = std::move(state_after);
      admitted_by_id.emplace(in.request_id, i);
      admitted.push_back(i);
      decided[i] = DebitResult{std::move(a), budget, /*replayed=*/false};
    }
    // Replays and refusals only: nothing to write, so no COMMIT (and no WAL flush), as a refused
    // debit always ended; the row locks go with the rollback.
    if (admitted.empty()) return absl::OkStatus();

    // 5. One statement writes it all (dpq_debit_write): the admitted rows (seqs head+1.. in
    //    admission order, each hash chained onto the previous row's), the ledger, the charged
    //    grants. Then one COMMIT.
    ArrayLiteral seq, request_id, principal_id, analyst, fingerprint, aggregate, column, mechanism,
        epsilon_units, delta_units, sensitivity, noise_scale, count_noise_scale, value, confidence,
        ci_lower, ci_upper, clamp_lower, clamp_upper, max_contributions, prev_hash, hash, events,
        dataset_version, result, release_deferred;
    for (size_t i : admitted) {
      const Allocation& a = decided[i]->allocation;
      seq.AddInt(a.seq);
      request_id.AddText(a.request_id);
      principal_id.AddInt(a.principal_id);
      analyst.AddText(a.analyst);
      fingerprint.AddText(a.fingerprint);
      aggregate.AddText(a.aggregate);
      column.AddText(a.column);
      mechanism.AddText(a.mechanism);
      epsilon_units.AddInt(a.epsilon_units);
      delta_units.AddInt(a.delta_units);
      sensitivity.AddText(ExactDouble(a.sensitivity));
      noise_scale.AddText(ExactDouble(a.noise_scale));
      count_noise_scale.AddText(ExactDouble(a.count_noise_scale));
      value.AddText(ExactDouble(a.value));
      confidence.AddText(ExactDouble(a.confidence));
      ci_lower.AddText(ExactDouble(a.ci_lower));
      ci_upper.AddText(ExactDouble(a.ci_upper));
      clamp_lower.AddText(OptionalDouble(a.clamp_lower));
      clamp_upper.AddText(OptionalDouble(a.clamp_upper));
      max_contributions.AddInt(a.max_contributions);
      prev_hash.AddText(ToHex(a.prev_hash));
      hash.AddText(ToHex(a.hash));
      events.AddText(a.events);
      dataset_version.AddInt(a.dataset_version);
      result.AddText(a.result);
      release_deferred.AddText(a.release_deferred ? "t" : "f");
    }
    ArrayLiteral grant_principal, grant_epsilon_spent, grant_delta_spent;
    for (const auto& [principal, g] : grants) {
      if (!g.charged) continue;
      grant_principal.AddInt(principal);
      grant_epsilon_spent.AddInt(g.epsilon_spent_units);
      grant_delta_spent.AddInt(g.delta_spent_units);
    }
    const pqxx::result inserted = tx.exec_prepared(
        "dpq_debit_write", dataset_id, seq.str(), request_id.str(), principal_id.str(),
        analyst.str(), fingerprint.str(), aggregate.str(), column.str(), mechanism.str(),
        epsilon_units.str(), delta_units.str(), sensitivity.str(), noise_scale.str(),
        count_noise_scale.str(), value.str(), confidence.str(), ci_lower.str(), ci_upper.str(),
        clamp_lower.str(), clamp_upper.str(), max_contributions.str(), prev_hash.str(), hash.str(),
        events.str(), dataset_version.str(), result.str(), release_deferred.str(),
        budget.epsilon_spent_units, budget.delta_spent_units, head_seq, ToHex(head_hash), state,
        grant_principal.str(), grant_epsilon_spent.str(), grant_delta_spent.str());
    if (inserted.size() != admitted.size()) {
      return absl::InternalError(absl::StrCat("debit group: inserted ", inserted.size(), " audit rows of ",
                                              admitted.size()));
    }
    const int64_t first_seq = decided[admitted.front()]->allocation.seq;
    for (const auto& row : inserted) {
      const int64_t s = row[0].as<int64_t>() - first_seq;
      if (s < 0 || s >= static_cast<int64_t>(admitted.size())) {
        return absl::InternalError("debit group: the INSERT returned an unexpected seq");
      }
      decided[admitted[static_cast<size_t>(s)]]->allocation.created_at = row[1].as<std::string>();
    }
    t.Commit();
    return absl::OkStatus();
  });

  // Only now, after COMMIT returned (or when nothing needed writing), does any member get OK. A
  // failed transaction (UNAVAILABLE, a commit in doubt included, ...) fails every member: their
  // decisions assumed the others' rows. A transaction that failed before taking the group (while
  // connecting or waiting for the ledger lock) fails the leader's debit alone: the others were not
  // tried, and the next leader tries them.
  if (!taker.taken()) group = taker.TakeLeader();
  if (!run.ok()) {
    for (DebitBatcher::Member* m : group) m->result = run;
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    if (replay_of[i] >= 0) decided[i]->allocation = decided[static_cast<size_t>(replay_of[i])]->allocation;
  }
  for (size_t i = 0; i < n; ++i) group[i]->result = std::move(decided[i]);
}

}  // namespace

absl::Status BudgetExhausted(const BudgetState& budget, int64_t epsilon_units, int64_t delta_units) {
  // Every message says what to do next (issue 12).
  if (budget.epsilon_total() == 0) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "dataset %s has no privacy budget yet: ask an admin to run `dpqctl budget set %s "
        "--epsilon E [--delta D]`",
        budget.dataset, budget.dataset));
  }
  return absl::ResourceExhaustedError(absl::StrFormat(
      "privacy budget of dataset %s exhausted: requested epsilon=%.12g delta=%.12g, remaining "
      "epsilon=%.12g delta=%.12g; ask for less (a smaller --epsilon or --delta) or ask an admin "
      "to raise the total (`dpqctl budget set %s --epsilon E`)",
      budget.dataset, query::EpsilonFromUnits(epsilon_units), query::DeltaFromUnits(delta_units),
      budget.epsilon_remaining(), budget.delta_remaining(), budget.dataset));
}

absl::StatusOr<BudgetState> BudgetLedger::Get(int64_t dataset_id) {
  BudgetState b;
  RETURN_IF_ERROR(db_->Run("read budget", [&](pqxx::connection& c) -> absl::Status {
    pqxx::read_transaction tx(c);
    ASSIGN_OR_RETURN(pqxx::row row, ReadLedger(tx, dataset_id, /*lock=*/false));
    b = BudgetFromRow(row);
    return absl::OkStatus();
  }));
  return b;
}

absl::StatusOr<BudgetState> BudgetLedger::Set(int64_t dataset_id, int64_t epsilon_total_units,
                                              int64_t delta_total_units, const std::string& accountant,
                                              absl::optional<int64_t> max_query_epsilon_units,
                                              const AdminAction* log) {
  BudgetState b;
  RETURN_IF_ERROR(db_->Run("set budget", [&](pqxx::connection& c) -> absl::Status {
    pqxx::work tx(c);
    ASSIGN_OR_RETURN(pqxx::row locked, LockLedger(tx, dataset_id));
    b = BudgetFromRow(locked);
    const std::string state = locked[9].as<std::string>();
    const bool anything_spent = locked[7].as<int64_t>() > 0;
    const std::string chosen = accountant.empty() ? b.accountant : accountant;
    RETURN_IF_ERROR(ValidateLedgerAccountant(chosen));
    if (chosen != b.accountant && anything_spent) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the accountant of dataset ", b.dataset, " is ", b.accountant,
          " and cannot change once budget was spent"));
    }
    if (chosen != "basic" && delta_total_units == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("delta must be > 0 for the ", chosen, " accountant"));
    }
    b.accountant = chosen;
    if (chosen != "basic") {
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
        "max_query_epsilon_units = nullif($7::bigint, 0), updated_at = now() WHERE dataset_id = $1",
        dataset_id, b.accountant, epsilon_total_units, delta_total_units, b.epsilon_spent_units,
        b.delta_spent_units, b.max_query_epsilon_units);
    if (log != nullptr) AppendAdminAction(tx, *log);
    tx.commit();
    b.epsilon_total_units = epsilon_total_units;
    b.delta_total_units = delta_total_units;
    return absl::OkStatus();
  }));
  return b;
}

absl::StatusOr<absl::optional<Allocation>> BudgetLedger::FindAllocation(int64_t dataset_id,
                                                                        const std::string& request_id) {
  absl::optional<Allocation> a;
  RETURN_IF_ERROR(db_->Run("find allocation", [&](pqxx::connection& c) {
    PrepareLedgerStatements(c);
    // BEGIN and the plan mode (see LedgerStatements()) in one round trip: this runs on every query.
    OneTripTransaction t(c, OneTripTransaction::Mode::kReadOnly, kGenericPlans);
    pqxx::result r = t.tx().exec_prepared("dpq_find_allocation", dataset_id, request_id);
    if (!r.empty()) {
      a = AllocationFromRow(r[0]);
      AttachReleases(t.tx(), dataset_id, {&*a});
    }
    t.Commit();
    return absl::OkStatus();
  }));
  return a;
}

absl::StatusOr<DebitResult> BudgetLedger::Debit(int64_t dataset_id, Allocation allocation) {
  const absl::Time start = absl::Now();
  absl::StatusOr<DebitResult> result = DebitBatcher::Shared().Submit(
      db_, dataset_id, std::move(allocation),
      [this, dataset_id](DebitBatcher::Group& group) { CommitDebitGroup(db_, dataset_id, group); });
  if (debit_observer_) debit_observer_(absl::ToDoubleSeconds(absl::Now() - start));
  return result;
}

absl::StatusOr<Allocation> BudgetLedger::StoreRelease(int64_t dataset_id, int64_t seq,
                                                      const Allocation::Release& release) {
  Allocation out;
  RETURN_IF_ERROR(db_->Run("store release", [&](pqxx::connection& c) -> absl::Status {
    pqxx::work tx(c);
    const pqxx::result paid = tx.exec_params(
        "SELECT hash, release_deferred FROM audit WHERE dataset_id = $1 AND seq = $2", dataset_id, seq);
    if (paid.empty()) {
      return absl::NotFoundError(absl::StrCat("no allocation ", seq, " on dataset ", dataset_id));
    }
    if (!paid[0][1].as<bool>()) {
      return absl::FailedPreconditionError(
          absl::StrCat("allocation ", seq, " carries its answer inline (written before migration 0007)"));
    }
    const std::string hash = ReleaseHash(Bytes(paid[0][0]), dataset_id, seq, release.value,
                                         release.ci_lower, release.ci_upper, release.result);
    // A concurrent insert of the same key waits for the other to commit, then does nothing; the
    // SELECT (a new snapshot under READ COMMITTED) then reads whichever release won.
    tx.exec_params0(
        "INSERT INTO releases (dataset_id, seq, released_value, released_ci_lower, released_ci_upper, "
        "released_result, release_hash) VALUES ($1, $2, $3::float8, $4::float8, $5::float8, $6, "
        "decode($7, 'hex')) ON CONFLICT (dataset_id, seq) DO NOTHING",
        dataset_id, seq, ExactDouble(release.value), ExactDouble(release.ci_lower),
        ExactDouble(release.ci_upper), release.result, ToHex(hash));
    const pqxx::row r = tx.exec_params1(
        absl::StrCat("SELECT ", kAllocationColumns, ", ", kReleaseColumns, " FROM ",
                     kAllocationWithRelease, " WHERE dataset_id = $1 AND seq = $2"),
        dataset_id, seq);
    out = AllocationFromRow(r);
    tx.commit();
    return absl::OkStatus();
  }));
  return out;
}

absl::StatusOr<Allocation> BudgetLedger::StoreRelease(int64_t dataset_id, const Allocation& paid,
                                                      const Allocation::Release& release) {
  Allocation::Release stored = release;
  stored.hash = ReleaseHash(paid.hash, dataset_id, paid.seq, release.value, release.ci_lower,
                            release.ci_upper, release.result);
  bool inserted = false;
  RETURN_IF_ERROR(db_->Run("store release", [&](pqxx::connection& c) -> absl::Status {
    // Autocommit: no BEGIN/COMMIT round trips; libpq returns once the implicit transaction has
    // committed (at the protocol's Sync), under the same synchronous_commit as a COMMIT.
    // Prepared once per connection: a primary-key probe plans alike for every value.
    c.prepare("dpq_store_release",
              "INSERT INTO releases (dataset_id, seq, released_value, released_ci_lower, "
              "released_ci_upper, released_result, release_hash) "
              "SELECT dataset_id, seq, $3::float8, $4::float8, $5::float8, $6, decode($7, 'hex') "
              "FROM audit WHERE dataset_id = $1 AND seq = $2 AND release_deferred "
              "AND hash = decode($8, 'hex') ON CONFLICT (dataset_id, seq) DO NOTHING RETURNING seq");
    pqxx::nontransaction tx(c);
    inserted = !tx.exec_prepared("dpq_store_release", dataset_id, paid.seq, ExactDouble(release.value),
                                 ExactDouble(release.ci_lower), ExactDouble(release.ci_upper),
                                 release.result, ToHex(stored.hash), ToHex(paid.hash))
                    .empty();
    return absl::OkStatus();
  }));
  if (!inserted) return StoreRelease(dataset_id, paid.seq, release);  // the winner, or the error
  Allocation out = paid;
  out.release = std::move(stored);
  return out;
}

absl::StatusOr<std::vector<Allocation>> BudgetLedger::ListAllocations(int64_t dataset_id) {
  std::vector<Allocation> out;
  RETURN_IF_ERROR(db_->Run("list audit", [&](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    for (const auto& row : tx.exec_params(
             absl::StrCat("SELECT ", kAllocationColumns, ", ", kReleaseColumns, " FROM ", kAllocationWithRelease,
                          " WHERE dataset_id = $1 ORDER BY seq"),
             dataset_id)) {
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
             "SELECT ", kBudgetColumns, " FROM ledgers l JOIN datasets d ON d.id = l.dataset_id ORDER BY d.name"))) {
      out.push_back(BudgetFromRow(row));
    }
    return absl::OkStatus();
  }));
  return out;
}

}  // namespace dpq::store
