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
#include "server/base/status_macros.h"
#include "server/query/calendar.h"
#include "server/store/array_literal.h"
#include "server/store/debit_admission.h"
#include "server/store/debit_write.h"
#include "server/store/known_ledgers.h"
#include "server/store/ledger_rows.h"
#include "server/store/one_trip_transaction.h"

namespace dpq::store {
namespace {

struct Statement {
  const char* name;
  std::string sql;
};

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
      // before the query read its schema and grant. k::text and g::text are the rows' images
      // (debit_write.h): a row value of the same columns prints as the write statement's does.
      {"dpq_debit_lock_ledger",
       absl::StrCat("WITH k AS MATERIALIZED (SELECT ", kBudgetColumns,
                    " FROM ledgers l JOIN populations p ON p.id = l.population_id "
                    "WHERE l.population_id = $1 FOR UPDATE OF l) "
                    "SELECT k.*, k::text, g.*, g::text FROM k LEFT JOIN LATERAL (SELECT ",
                    kGrantCapColumns,
                    " FROM population_caps c WHERE c.population_id = k.population_id "
                    "AND c.principal_id = $2 FOR UPDATE) g ON true")},
      // ORDER BY below FOR UPDATE: rows are locked in principal order (the LockRows step runs on
      // the sorted rows), the one order every debit group uses.
      {"dpq_debit_lock_grants",
       absl::StrCat("SELECT ", kGrantCapColumns, ", ", GrantImageSql(),
                    " FROM population_caps c WHERE c.population_id = $1 AND c.principal_id = "
                    "ANY($2::bigint[]) ORDER BY c.principal_id FOR UPDATE")},
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
      {kDebitWrite, DebitWriteSql()},
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

// The analyst's cap, spend and row image in a population_caps row read from column `first` on
// (kGrantCapColumns, then the image).
std::pair<int64_t, KnownGrant> GrantFromRow(const pqxx::row& row, pqxx::row::size_type first) {
  KnownGrant g;
  g.cap.epsilon_cap_units = OptionalInt(row[first + 1]);
  g.cap.delta_cap_units = OptionalInt(row[first + 2]);
  g.cap.epsilon_spent_units = row[first + 3].as<int64_t>();
  g.cap.delta_spent_units = row[first + 4].as<int64_t>();
  g.image = row[first + 5].as<std::string>();
  return {row[first].as<int64_t>(), std::move(g)};
}

// 1. The ledger row, locked until the transaction ends: every budget change of the dataset is
//    serialised on it, group after group. The leader's grant row comes locked with it (or its
//    absence, for a principal without one: an admin), so a group of one analyst's debits, the
//    common case, locks its grants without a round trip of its own. Into `seen`, with their
//    images; grants of other principals seen before stay (they are only ever a guess: the write
//    compares them).
absl::Status LockLedgerRow(pqxx::transaction_base& tx, int64_t population_id,
                           int64_t leader_principal, KnownLedger& seen) {
  const pqxx::result ledger =
      tx.exec_prepared("dpq_debit_lock_ledger", population_id, leader_principal);
  if (ledger.empty()) {
    return absl::NotFoundError(absl::StrCat("no ledger for dataset id ", population_id));
  }
  seen.ledger = LedgerFromRow(ledger[0]);
  seen.image = ledger[0][kLedgerColumnCount].as<std::string>();
  constexpr pqxx::row::size_type kGrant = kLedgerColumnCount + 1;
  if (ledger[0][kGrant].is_null()) {
    seen.grants[leader_principal] = absl::nullopt;
  } else {
    seen.grants[leader_principal] = GrantFromRow(ledger[0], kGrant).second;
  }
  return absl::OkStatus();
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
                absl::Span<const Allocation* const> group, KnownLedger& seen) {
  std::set<int64_t> principal_ids;
  for (const Allocation* a : group) {
    if (a->principal_id != leader_principal) principal_ids.insert(a->principal_id);
  }
  if (principal_ids.empty()) return;
  ArrayLiteral principals;
  for (int64_t id : principal_ids) {
    principals.AddInt(id);
    seen.grants[id] = absl::nullopt;  // until its row is read
  }
  for (const auto& row :
       tx.exec_prepared("dpq_debit_lock_grants", population_id, principals.str())) {
    auto [principal, grant] = GrantFromRow(row, 0);
    seen.grants[principal] = std::move(grant);
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

// Only now, after COMMIT returned (or when nothing needed writing), does any member get OK. A
// failed transaction (UNAVAILABLE, a commit in doubt included, ...) fails every member: their
// decisions assumed the others' rows. A transaction that failed before taking the group (while
// connecting or waiting for the ledger lock) fails the leader's debit alone: the others were not
// tried, and the next leader tries them; unless the one-trip path took the group already (its
// statement found a row changed), when the whole group fails, each member's retry with its
// request id being as safe as after any failed write.
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

std::vector<const Allocation*> Allocations(absl::Span<DebitBatcher::Member* const> members) {
  std::vector<const Allocation*> out;
  for (const DebitBatcher::Member* m : members) out.push_back(&m->allocation);
  return out;
}

// What a group's run leaves: its status, each member's outcome, and the rows it leaves behind for
// the next group (known_ledgers.h), when it knows them.
struct GroupOutcome {
  absl::Status run;
  DebitAdmission admission;
  absl::optional<KnownLedger> known_after;
};

// The locked path, in ONE transaction: lock the ledger row with the leader's grant row, take the
// group (debits that arrived while this leader connected and waited for the lock join it, unless
// the one-trip path took it already), look up its callers' request ids, lock the other members'
// grants (and, per block, the cells), admit in memory, write, COMMIT. `known` (may be empty): what
// was remembered, whose other analysts' grant rows are kept for later groups.
GroupOutcome CommitLocked(Database* db, int64_t population_id, int64_t leader_principal,
                          absl::optional<KnownLedger> known, DebitBatcher::Group& taker) {
  GroupOutcome out;
  out.run = db->Run("debit", [&](pqxx::connection& c) -> absl::Status {
    PrepareLedgerStatements(c);
    // BEGIN and the plan mode in one round trip (one_trip_transaction.h).
    OneTripTransaction t(c, OneTripTransaction::Mode::kReadWrite, kGenericPlans);
    pqxx::transaction_base& tx = t.tx();
    KnownLedger seen;
    if (known.has_value()) seen.grants = known->grants;
    RETURN_IF_ERROR(LockLedgerRow(tx, population_id, leader_principal, seen));
    // A retried transaction (Run repeats this function after a serialization failure) gets the
    // same group and decides everything afresh.
    const std::vector<const Allocation*> group = Allocations(taker.Take());
    const std::map<std::string, Allocation> prior =
        ReadPriorAllocations(c, tx, population_id, seen.ledger.head_seq, group);
    LockGrants(tx, population_id, leader_principal, group, seen);
    std::map<int64_t, GrantCap> grants = seen.CapsFor(group);
    std::map<int64_t, BlockCell> blocks;
    if (seen.ledger.budget.per_block) {
      blocks = LockBlocks(tx, population_id, group);
      LockBlockCaps(tx, population_id, group, grants);
    }
    // 4. Admission in arrival order, in memory (debit_admission.h).
    out.admission = AdmitDebits(seen.ledger, prior, std::move(grants), group, std::move(blocks));
    out.known_after.reset();
    // Replays and refusals only: nothing to write, so no COMMIT (and no WAL flush), as a refused
    // debit always ended; the row locks go with the rollback. What was read is what is committed.
    if (out.admission.admitted.empty()) {
      out.known_after = std::move(seen);
      return absl::OkStatus();
    }
    // 5. The write (debit_write.h), on rows this transaction holds: they are as read.
    ASSIGN_OR_RETURN(const absl::optional<WrittenImages> written,
                     WriteIfUnchanged(tx, population_id, out.admission, seen.ExpectFor(group)));
    if (!written.has_value()) {
      return absl::InternalError("debit group: a locked row changed before the write");
    }
    t.Commit();
    out.known_after = seen.After(out.admission, *written);
    return absl::OkStatus();
  });
  return out;
}

// The one-trip path (known_ledgers.h): `group` decided on what `known` remembers and written by
// one autocommitted statement, which writes nothing unless every row it was decided on is
// unchanged. True when that settled the group (written, or failed: `out.run`); false when the
// locked path must decide it: a row differed, or no member was admitted (a refusal is only ever
// given on rows read under the lock).
bool DebitInOneTrip(Database* db, int64_t population_id, const KnownLedger& known,
                    absl::Span<const Allocation* const> group, GroupOutcome& out) {
  bool unsettled = false;
  bool differed = false;
  out.run = db->Run("debit", [&](pqxx::connection& c) -> absl::Status {
    unsettled = differed = false;
    PrepareLedgerStatements(c);
    out.admission = AdmitDebits(known.ledger, {}, known.CapsFor(group), group);
    if (out.admission.admitted.empty()) {
      unsettled = true;
      return absl::OkStatus();
    }
    pqxx::nontransaction tx(c);
    absl::StatusOr<absl::optional<WrittenImages>> written;
    try {
      written = WriteIfUnchanged(tx, population_id, out.admission, known.ExpectFor(group));
    } catch (const pqxx::broken_connection& e) {
      // The statement is its own transaction: it may have committed.
      throw pqxx::in_doubt_error(std::string("connection lost during a debit: ") + e.what());
    }
    RETURN_IF_ERROR(written.status());
    if (!written->has_value()) {
      unsettled = differed = true;
      return absl::OkStatus();
    }
    out.known_after = known.After(out.admission, **written);
    return absl::OkStatus();
  });
  if (out.run.ok() && !(unsettled && !differed)) KnownLedgers::Shared().Count(!differed);
  return !out.run.ok() || !unsettled;
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
  KnownLedgers& known_ledgers = KnownLedgers::Shared();
  absl::optional<KnownLedger> known = known_ledgers.Take(db, population_id);
  GroupOutcome out;
  bool decided = false;
  if (known.has_value()) {
    // The members the remembered rows can decide, from the front of the queue: none when the
    // leader's own debit cannot be (the group then forms under the lock, as below).
    const std::vector<const Allocation*> group =
        Allocations(taker.TakeWhile([&](const Allocation& a) { return known->Decides(a); }));
    if (!group.empty()) decided = DebitInOneTrip(db, population_id, *known, group, out);
  }
  if (!decided) out = CommitLocked(db, population_id, leader_principal, std::move(known), taker);
  if (out.run.ok() && out.known_after.has_value()) {
    known_ledgers.Put(db, population_id, *std::move(out.known_after));
  }
  HandOutResults(out.run, taker, out.admission);
}

}  // namespace dpq::store
