#include "server/store/debit_group.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/optional.h"
#include "absl/types/span.h"
#include "server/base/sha256.h"
#include "server/base/status_macros.h"
#include "server/query/calendar.h"
#include "server/store/array_literal.h"
#include "server/store/debit_admission.h"
#include "server/store/ledger_rows.h"
#include "server/store/one_trip_transaction.h"

namespace dpq::store {
namespace {

struct Statement {
  const char* name;
  std::string sql;
};

// A population_caps row as GrantCapFromRow reads it, from column `first` on.
constexpr char kGrantCapColumns[] =
    "principal_id, epsilon_cap_units, delta_cap_units, epsilon_spent_units, delta_spent_units";

const std::vector<Statement>& LedgerStatements() {
  static const std::vector<Statement>* const statements = new std::vector<Statement>{
      {"dpq_find_allocation",
       absl::StrCat("SELECT ", kAllocationColumns,
                    " FROM audit WHERE population_id = $1 AND request_id = $2")},
      // The ledger row, then the leader's grant row ($2), in one round trip and in that order:
      // the CTE's own row lock runs as its row is fetched, and the LATERAL subquery, which needs
      // that row's values, only after it. (A FOR UPDATE on the outer query would lock after the
      // join, so after the grant.) The grant row is read under the statement's snapshot, taken
      // before the ledger lock was granted: a row updated since is locked and returned at its
      // newest version (READ COMMITTED's FOR UPDATE), and none can appear since, because an
      // analyst's population_caps row is created with the analyst's first grant, which committed
      // before the query read its schema and grant.
      {"dpq_debit_lock_ledger",
       absl::StrCat("WITH k AS MATERIALIZED (SELECT ", kBudgetColumns,
                    " FROM ledgers l JOIN populations p ON p.id = l.population_id "
                    "WHERE l.population_id = $1 FOR UPDATE OF l) "
                    "SELECT k.*, g.* FROM k LEFT JOIN LATERAL (SELECT ",
                    kGrantCapColumns,
                    " FROM population_caps c WHERE c.population_id = k.population_id "
                    "AND c.principal_id = $2 FOR UPDATE) g ON true")},
      // ORDER BY below FOR UPDATE: rows are locked in principal order (the LockRows step runs on
      // the sorted rows), the one order every debit group uses.
      {"dpq_debit_lock_grants",
       absl::StrCat("SELECT ", kGrantCapColumns,
                    " FROM population_caps WHERE population_id = $1 AND principal_id = "
                    "ANY($2::bigint[]) ORDER BY principal_id FOR UPDATE")},
      // Per-block ledgers: the cells of the group's blocks, created when first charged (with the
      // ledger's per-block budget: no totals of their own) and locked in block order, the one
      // order every debit uses (and only under the population's ledger row lock, so no other
      // transaction creates or locks them meanwhile), in one statement: the ON CONFLICT update
      // locks an existing cell as the insert does a new one (the days are distinct: each cell is
      // touched once), and RETURNING reads both.
      {"dpq_debit_lock_blocks",
       "INSERT INTO ledger_blocks AS b (population_id, block_start) "
       "SELECT $1, d FROM unnest($2::date[]) AS d ORDER BY d "
       "ON CONFLICT (population_id, block_start) DO UPDATE SET "
       "epsilon_spent_units = b.epsilon_spent_units "
       "RETURNING block_start - date '1970-01-01', epsilon_total_units, delta_total_units, "
       "epsilon_spent_units, delta_spent_units, accountant_state"},
      // Per-block ledgers: the group's analysts' spend in each block they pay, created when first
      // charged and locked in (principal, block) order in one statement: the ON CONFLICT update
      // locks an existing row as the insert does a new one (pairs are distinct: each row is
      // touched once), and RETURNING reads both. Only under the ledger row and population_caps locks.
      {"dpq_debit_lock_block_caps",
       "INSERT INTO block_caps AS c (population_id, principal_id, block_start) "
       "SELECT $1, u.principal_id, u.block_start FROM unnest($2::bigint[], $3::date[]) AS "
       "u(principal_id, block_start) ORDER BY u.principal_id, u.block_start "
       "ON CONFLICT (population_id, principal_id, block_start) DO UPDATE SET "
       "epsilon_spent_units = c.epsilon_spent_units "
       "RETURNING principal_id, block_start - date '1970-01-01', epsilon_spent_units, "
       "delta_spent_units"},
      // The group's writes in one statement (one round trip): the ledger's new head and spend, the
      // charged grants' spend, and one audit row per admitted debit. Data-modifying CTEs all run
      // to completion whatever the outer statement reads, on rows this transaction has locked
      // (steps 1 and 3), so the result is that of the three statements in a row. Every value is a
      // bound parameter (arrays, unnested in parallel); doubles travel as %.17g text and hashes as
      // hex, so all round-trip exactly.
      {"dpq_debit_write",
       "WITH ledger AS (UPDATE ledgers SET epsilon_spent_units = $28, delta_spent_units = $29, "
       "audit_head_seq = $30, audit_head_hash = decode($31, 'hex'), accountant_state = $32, "
       "updated_at = now() WHERE population_id = $1 RETURNING 1), "
       "charged AS (UPDATE population_caps g SET epsilon_spent_units = c.epsilon_spent_units, "
       "delta_spent_units = c.delta_spent_units FROM unnest($33::bigint[], $34::bigint[], "
       "$35::bigint[]) AS c(principal_id, epsilon_spent_units, delta_spent_units) "
       "WHERE g.principal_id = c.principal_id AND g.population_id = $1 RETURNING 1), "
       "cells AS (UPDATE ledger_blocks b SET epsilon_spent_units = c.epsilon_spent_units, "
       "delta_spent_units = c.delta_spent_units, accountant_state = c.accountant_state "
       "FROM unnest($38::date[], $39::bigint[], $40::bigint[], $41::text[]) AS c(block_start, "
       "epsilon_spent_units, delta_spent_units, accountant_state) "
       "WHERE b.population_id = $1 AND b.block_start = c.block_start RETURNING 1), "
       "capcells AS (UPDATE block_caps b SET epsilon_spent_units = c.epsilon_spent_units, "
       "delta_spent_units = c.delta_spent_units FROM unnest($42::bigint[], $43::date[], "
       "$44::bigint[], $45::bigint[]) AS c(principal_id, block_start, epsilon_spent_units, "
       "delta_spent_units) WHERE b.population_id = $1 AND b.principal_id = c.principal_id AND "
       "b.block_start = c.block_start RETURNING 1) "
       "INSERT INTO audit (population_id, seq, request_id, principal_id, analyst, fingerprint, "
       "aggregate, column_name, mechanism, epsilon_units, delta_units, sensitivity, noise_scale, "
       "count_noise_scale, value, confidence, ci_lower, ci_upper, clamp_lower, clamp_upper, "
       "max_contributions, prev_hash, hash, events, dataset_version, result, release_deferred, "
       "datasets, blocks) "
       "SELECT $1, u.seq, u.request_id, u.principal_id, u.analyst, u.fingerprint, u.aggregate, "
       "u.column_name, u.mechanism, u.epsilon_units, u.delta_units, u.sensitivity::float8, "
       "u.noise_scale::float8, u.count_noise_scale::float8, u.val::float8, u.confidence::float8, "
       "u.ci_lower::float8, u.ci_upper::float8, nullif(u.clamp_lower, '')::float8, "
       "nullif(u.clamp_upper, '')::float8, u.max_contributions, decode(u.prev_hash, 'hex'), "
       "decode(u.hash, 'hex'), u.events, u.dataset_version, u.result, u.release_deferred, u.datasets, "
       "u.blocks FROM unnest($2::bigint[], $3::text[], $4::bigint[], $5::text[], $6::text[], $7::text[], "
       "$8::text[], $9::text[], $10::bigint[], $11::bigint[], $12::text[], $13::text[], $14::text[], "
       "$15::text[], $16::text[], $17::text[], $18::text[], $19::text[], $20::text[], $21::int[], "
       "$22::text[], $23::text[], $24::text[], $25::bigint[], $26::text[], $27::bool[], $36::text[], "
       "$37::text[]) AS u(seq, request_id, principal_id, analyst, fingerprint, aggregate, column_name, mechanism, "
       "epsilon_units, delta_units, sensitivity, noise_scale, count_noise_scale, val, confidence, "
       "ci_lower, ci_upper, clamp_lower, clamp_upper, max_contributions, prev_hash, hash, events, "
       "dataset_version, result, release_deferred, datasets, blocks) "
       "RETURNING seq, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"},
  };
  return *statements;
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
      kAllocationColumns,
      " FROM audit WHERE population_id = $1 AND request_id = r.request_id LIMIT 1) a"));
  int width = 0;
  for (uint64_t v = static_cast<uint64_t>(std::max<int64_t>(head_seq, 0)); v != 0; v >>= 1) ++width;
  std::string name = absl::StrCat("dpq_debit_find_prior_", width);
  c.prepare(name, *sql);
  return name;
}

absl::optional<int64_t> OptionalInt(const pqxx::field& f) {
  if (f.is_null()) return absl::nullopt;
  return f.as<int64_t>();
}

std::string OptionalDouble(const absl::optional<double>& v) { return v ? ExactDouble(*v) : ""; }

// The analyst's cap and spend in a population_caps row read from column `first` on
// (kGrantCapColumns).
std::pair<int64_t, GrantCap> GrantCapFromRow(const pqxx::row& row, pqxx::row::size_type first) {
  GrantCap g;
  g.epsilon_cap_units = OptionalInt(row[first + 1]);
  g.delta_cap_units = OptionalInt(row[first + 2]);
  g.epsilon_spent_units = row[first + 3].as<int64_t>();
  g.delta_spent_units = row[first + 4].as<int64_t>();
  return {row[first].as<int64_t>(), g};
}

// 1. The ledger row, locked until the transaction ends: every budget change of the dataset is
//    serialised on it, group after group. The leader's grant row comes locked with it, into
//    `grants` (nothing for a principal without one: an admin), so a group of one analyst's
//    debits, the common case, locks its grants without a round trip of its own.
absl::StatusOr<LedgerState> LockLedgerRow(pqxx::transaction_base& tx, int64_t population_id,
                                          int64_t leader_principal,
                                          std::map<int64_t, GrantCap>* grants) {
  const pqxx::result ledger =
      tx.exec_prepared("dpq_debit_lock_ledger", population_id, leader_principal);
  if (ledger.empty()) {
    return absl::NotFoundError(absl::StrCat("no ledger for dataset id ", population_id));
  }
  grants->clear();
  if (!ledger[0][kLedgerColumnCount].is_null()) {
    grants->insert(GrantCapFromRow(ledger[0], kLedgerColumnCount));
  }
  return LedgerFromRow(ledger[0]);
}

// 2. The group's request ids already committed, in one query, with their releases. It runs after
//    the lock, so its snapshot includes every earlier debit of the dataset: two groups cannot both
//    admit an id.
std::map<std::string, Allocation> ReadPriorAllocations(pqxx::connection& c,
                                                       pqxx::transaction_base& tx,
                                                       int64_t population_id, int64_t head_seq,
                                                       absl::Span<const Allocation* const> group) {
  std::set<std::string> distinct_ids;
  for (const Allocation* a : group) {
    if (!a->request_id_is_fresh) distinct_ids.insert(a->request_id);
  }
  std::map<std::string, Allocation> prior;
  if (distinct_ids.empty()) return prior;  // only ids the callers chose can name a committed row
  ArrayLiteral request_ids;
  for (const std::string& id : distinct_ids) request_ids.AddText(id);
  const std::string find_prior = PrepareFindPrior(c, head_seq);
  for (const auto& row : tx.exec_prepared(find_prior, population_id, request_ids.str())) {
    Allocation a = AllocationFromRow(row);
    std::string id = a.request_id;
    prior.emplace(std::move(id), std::move(a));
  }
  std::vector<Allocation*> found;
  for (auto& [id, a] : prior) found.push_back(&a);
  AttachReleases(tx, population_id, found);
  return prior;
}

// 3. The grant rows of the group's other principals, after the leader's (lock order: ledger,
//    the leader's grant, then the others by principal id; every debit group of a population holds
//    its ledger row first, and a grant row belongs to one population, so no two groups wait on
//    each other's grants). Principals without a grant row (admins) have no cap. No statement when
//    every member is the leader's principal.
void LockGrants(pqxx::transaction_base& tx, int64_t population_id, int64_t leader_principal,
                absl::Span<const Allocation* const> group, std::map<int64_t, GrantCap>* grants) {
  std::set<int64_t> principal_ids;
  for (const Allocation* a : group) {
    if (a->principal_id != leader_principal) principal_ids.insert(a->principal_id);
  }
  if (principal_ids.empty()) return;
  ArrayLiteral principals;
  for (int64_t id : principal_ids) principals.AddInt(id);
  for (const auto& row :
       tx.exec_prepared("dpq_debit_lock_grants", population_id, principals.str())) {
    grants->insert(GrantCapFromRow(row, 0));
  }
}

// 3c. Per-block ledgers: what each analyst with a grant row spent in each block the analyst's
//     debits pay (the cap limits each block), created when first charged and locked in
//     (principal, block) order, after the grant rows.
void LockBlockCaps(pqxx::transaction_base& tx, int64_t population_id,
                   absl::Span<const Allocation* const> group, std::map<int64_t, GrantCap>& grants) {
  std::set<std::pair<int64_t, int64_t>> pairs;
  for (const Allocation* a : group) {
    if (grants.count(a->principal_id) == 0) continue;
    for (int64_t start : a->block_starts) pairs.emplace(a->principal_id, start);
  }
  if (pairs.empty()) return;
  ArrayLiteral principals, days;
  for (const auto& [principal, start] : pairs) {
    principals.AddInt(principal);
    days.AddText(query::FormatDate(start));
  }
  for (const auto& row :
       tx.exec_prepared("dpq_debit_lock_block_caps", population_id, principals.str(), days.str())) {
    BlockSpend& spent = grants[row[0].as<int64_t>()].blocks[row[1].as<int64_t>()];
    spent.epsilon_spent_units = row[2].as<int64_t>();
    spent.delta_spent_units = row[3].as<int64_t>();
  }
}

// 3b. Per-block ledgers: the cells of every block the group's debits pay (created when first
//     charged), locked in block order, in one round trip.
std::map<int64_t, BlockCell> LockBlocks(pqxx::transaction_base& tx, int64_t population_id,
                                        absl::Span<const Allocation* const> group) {
  std::set<int64_t> starts;
  for (const Allocation* a : group) starts.insert(a->block_starts.begin(), a->block_starts.end());
  std::map<int64_t, BlockCell> cells;
  if (starts.empty()) return cells;
  ArrayLiteral days;
  for (int64_t start : starts) days.AddText(query::FormatDate(start));
  for (const auto& row : tx.exec_prepared("dpq_debit_lock_blocks", population_id, days.str())) {
    BlockCell cell;
    cell.epsilon_total_units = OptionalInt(row[1]);
    cell.delta_total_units = OptionalInt(row[2]);
    cell.epsilon_spent_units = row[3].as<int64_t>();
    cell.delta_spent_units = row[4].as<int64_t>();
    cell.accountant_state = row[5].as<std::string>();
    cells.emplace(row[0].as<int64_t>(), std::move(cell));
  }
  return cells;
}

// The admitted audit rows as the parallel arrays dpq_debit_write unnests ($2..$27 and $36, in that order),
// one element per row. Doubles travel as %.17g text and hashes as hex, so all round-trip exactly.
struct AuditRowArrays {
  ArrayLiteral seq, request_id, principal_id, analyst, fingerprint, aggregate, column, mechanism,
      epsilon_units, delta_units, sensitivity, noise_scale, count_noise_scale, value, confidence,
      ci_lower, ci_upper, clamp_lower, clamp_upper, max_contributions, prev_hash, hash, events,
      dataset_version, result, release_deferred, datasets, blocks;

  void Add(const Allocation& a) {
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
    datasets.AddText(a.datasets);
    blocks.AddText(a.blocks);
  }
};

// 5. One statement writes it all (dpq_debit_write): the admitted rows (seqs head+1.. in admission
//    order, each hash chained onto the previous row's), the ledger, the charged grants. Fills in
//    the admitted allocations' created_at from what the INSERT returned.
absl::Status WriteAdmitted(pqxx::transaction_base& tx, int64_t population_id,
                           DebitAdmission& admission) {
  AuditRowArrays rows;
  for (size_t i : admission.admitted) rows.Add(admission.decided[i]->allocation);
  ArrayLiteral grant_principal, grant_epsilon_spent, grant_delta_spent;
  for (const auto& [principal, g] : admission.grants) {
    if (!g.charged) continue;
    grant_principal.AddInt(principal);
    grant_epsilon_spent.AddInt(g.epsilon_spent_units);
    grant_delta_spent.AddInt(g.delta_spent_units);
  }
  ArrayLiteral cap_principal, cap_block, cap_epsilon_spent, cap_delta_spent;
  for (const auto& [principal, g] : admission.grants) {
    for (const auto& [start, spent] : g.blocks) {
      if (!spent.charged) continue;
      cap_principal.AddInt(principal);
      cap_block.AddText(query::FormatDate(start));
      cap_epsilon_spent.AddInt(spent.epsilon_spent_units);
      cap_delta_spent.AddInt(spent.delta_spent_units);
    }
  }
  ArrayLiteral block_start, block_epsilon_spent, block_delta_spent, block_state;
  for (const auto& [start, cell] : admission.blocks) {
    if (!cell.charged) continue;
    block_start.AddText(query::FormatDate(start));
    block_epsilon_spent.AddInt(cell.epsilon_spent_units);
    block_delta_spent.AddInt(cell.delta_spent_units);
    block_state.AddText(cell.accountant_state);
  }
  const LedgerState& ledger = admission.ledger;
  const pqxx::result inserted = tx.exec_prepared(
      "dpq_debit_write", population_id, rows.seq.str(), rows.request_id.str(),
      rows.principal_id.str(), rows.analyst.str(), rows.fingerprint.str(), rows.aggregate.str(),
      rows.column.str(), rows.mechanism.str(), rows.epsilon_units.str(), rows.delta_units.str(),
      rows.sensitivity.str(), rows.noise_scale.str(), rows.count_noise_scale.str(),
      rows.value.str(), rows.confidence.str(), rows.ci_lower.str(), rows.ci_upper.str(),
      rows.clamp_lower.str(), rows.clamp_upper.str(), rows.max_contributions.str(),
      rows.prev_hash.str(), rows.hash.str(), rows.events.str(), rows.dataset_version.str(),
      rows.result.str(), rows.release_deferred.str(), ledger.budget.epsilon_spent_units,
      ledger.budget.delta_spent_units, ledger.head_seq, ToHex(ledger.head_hash),
      ledger.accountant_state, grant_principal.str(), grant_epsilon_spent.str(),
      grant_delta_spent.str(), rows.datasets.str(), rows.blocks.str(), block_start.str(),
      block_epsilon_spent.str(), block_delta_spent.str(), block_state.str(), cap_principal.str(),
      cap_block.str(), cap_epsilon_spent.str(), cap_delta_spent.str());
  const std::vector<size_t>& admitted = admission.admitted;
  if (inserted.size() != admitted.size()) {
    return absl::InternalError(absl::StrCat("debit group: inserted ", inserted.size(),
                                            " audit rows of ", admitted.size()));
  }
  const int64_t first_seq = admission.decided[admitted.front()]->allocation.seq;
  for (const auto& row : inserted) {
    const int64_t s = row[0].as<int64_t>() - first_seq;
    if (s < 0 || s >= static_cast<int64_t>(admitted.size())) {
      return absl::InternalError("debit group: the INSERT returned an unexpected seq");
    }
    Allocation& a = admission.decided[admitted[static_cast<size_t>(s)]]->allocation;
    a.created_at = row[1].as<std::string>();
  }
  return absl::OkStatus();
}

// Only now, after COMMIT returned (or when nothing needed writing), does any member get OK. A
// failed transaction (UNAVAILABLE, a commit in doubt included, ...) fails every member: their
// decisions assumed the others' rows. A transaction that failed before taking the group (while
// connecting or waiting for the ledger lock) fails the leader's debit alone: the others were not
// tried, and the next leader tries them.
void HandOutResults(const absl::Status& run, DebitBatcher::Group& taker,
                    DebitAdmission& admission) {
  const absl::Span<DebitBatcher::Member* const> group =
      taker.taken() ? taker.Take() : taker.TakeLeader();
  if (!run.ok()) {
    for (DebitBatcher::Member* m : group) m->result = run;
    return;
  }
  std::vector<absl::StatusOr<DebitResult>>& decided = admission.decided;
  for (size_t i = 0; i < group.size(); ++i) {
    const std::ptrdiff_t first = admission.replay_of[i];
    if (first >= 0) decided[i]->allocation = decided[static_cast<size_t>(first)]->allocation;
  }
  for (size_t i = 0; i < group.size(); ++i) group[i]->result = std::move(decided[i]);
}

}  // namespace

void PrepareLedgerStatements(pqxx::connection& c) {
  for (const Statement& s : LedgerStatements()) c.prepare(s.name, s.sql);
}

void AttachReleases(pqxx::transaction_base& tx, int64_t population_id,
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
                        " FROM releases WHERE population_id = $1 AND seq = ANY($2::bigint[])"),
           population_id, seqs.str())) {
    by_seq.at(r[0].as<int64_t>())->release = ReleaseFromRow(r, 1);
  }
}

void CommitDebitGroup(Database* db, int64_t population_id, int64_t leader_principal,
                      DebitBatcher::Group& taker) {
  DebitAdmission admission;
  const absl::Status run = db->Run("debit", [&](pqxx::connection& c) -> absl::Status {
    PrepareLedgerStatements(c);
    // BEGIN and the plan mode in one round trip (one_trip_transaction.h).
    OneTripTransaction t(c, OneTripTransaction::Mode::kReadWrite, kGenericPlans);
    pqxx::transaction_base& tx = t.tx();
    std::map<int64_t, GrantCap> grants;
    ASSIGN_OR_RETURN(const LedgerState ledger,
                     LockLedgerRow(tx, population_id, leader_principal, &grants));
    // Only now take the group: debits that arrived while this leader connected and waited for the
    // lock join it (under load, those are typically the members of the previous group, back with
    // their next debit). A retried transaction (Run repeats this function after a serialization
    // failure) gets the same group and decides everything afresh.
    std::vector<const Allocation*> group;
    for (const DebitBatcher::Member* m : taker.Take()) group.push_back(&m->allocation);
    const std::map<std::string, Allocation> prior =
        ReadPriorAllocations(c, tx, population_id, ledger.head_seq, group);
    LockGrants(tx, population_id, leader_principal, group, &grants);
    std::map<int64_t, BlockCell> blocks;
    if (ledger.budget.per_block) {
      blocks = LockBlocks(tx, population_id, group);
      LockBlockCaps(tx, population_id, group, grants);
    }
    // 4. Admission in arrival order, in memory (debit_admission.h).
    admission = AdmitDebits(ledger, prior, std::move(grants), group, std::move(blocks));
    // Replays and refusals only: nothing to write, so no COMMIT (and no WAL flush), as a refused
    // debit always ended; the row locks go with the rollback.
    if (admission.admitted.empty()) return absl::OkStatus();
    RETURN_IF_ERROR(WriteAdmitted(tx, population_id, admission));
    t.Commit();
    return absl::OkStatus();
  });
  HandOutResults(run, taker, admission);
}

}  // namespace dpq::store
