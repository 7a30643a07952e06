// How the store reads ledger and audit rows: the column lists and the row decoders shared by the
// debit path (budget_ledger.cc) and the audit verification (audit_verify.cc). Store-internal: it
// includes libpqxx, so no header outside server/store/ may include it.
#ifndef DPQ_SERVER_STORE_LEDGER_ROWS_H_
#define DPQ_SERVER_STORE_LEDGER_ROWS_H_

#include <cstdint>
#include <string>

#include <pqxx/pqxx>

#include "absl/status/statusor.h"
#include "server/store/allocation.h"

namespace dpq::store {

// A ledger row joined with its dataset. LedgerFromRow is the one reader of these columns (their
// positions: LedgerColumn).
inline constexpr char kBudgetColumns[] =
    "l.population_id, p.name, l.accountant, l.epsilon_total_units, l.delta_total_units, "
    "l.epsilon_spent_units, l.delta_spent_units, l.audit_head_seq, l.audit_head_hash, "
    "l.accountant_state, coalesce(l.max_query_epsilon_units, 0), coalesce(l.epsilon_preset, ''), "
    "l.per_block";
enum LedgerColumn : pqxx::row::size_type {
  kLedgerPopulationId,
  kLedgerPopulationName,
  kLedgerAccountant,
  kLedgerEpsilonTotal,
  kLedgerDeltaTotal,
  kLedgerEpsilonSpent,
  kLedgerDeltaSpent,
  kLedgerAuditHeadSeq,
  kLedgerAuditHeadHash,
  kLedgerAccountantState,
  kLedgerMaxQueryEpsilon,
  kLedgerEpsilonPreset,
  kLedgerPerBlock,
  kLedgerColumnCount,  // columns a query selects after kBudgetColumns start here
};

// An audit row (AllocationFromRow reads them in this order).
inline constexpr char kAllocationColumns[] =
    "seq, request_id, principal_id, analyst, "
    "to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), fingerprint, "
    "aggregate, column_name, mechanism, epsilon_units, delta_units, sensitivity, noise_scale, "
    "count_noise_scale, value, confidence, ci_lower, ci_upper, clamp_lower, clamp_upper, "
    "max_contributions, prev_hash, hash, events, dataset_version, result, release_deferred, "
    "datasets, blocks";
// Its release (migration 0007), after the audit columns in reads of whole histories:
//   SELECT <allocation>, <release> FROM <kAllocationWithRelease> ...
// Lookups by request id read the audit row alone (its unique index) and then the release by
// primary key (AttachReleases): joined, PostgreSQL's generic plans walk the dataset's history.
inline constexpr char kReleaseColumns[] =
    "released_value, released_ci_lower, released_ci_upper, released_result, release_hash";
inline constexpr char kAllocationWithRelease[] =
    "audit LEFT JOIN releases USING (population_id, seq)";

// A row of kBudgetColumns. The accountant's name is parsed here, once (the column's CHECK
// constraint admits only known names; an unknown one throws, as a malformed number does).
LedgerState LedgerFromRow(const pqxx::row& r);
// Its budget alone.
BudgetState BudgetFromRow(const pqxx::row& r);

// A bytea field's bytes.
std::string Bytes(const pqxx::field& f);

// kAllocationColumns, optionally followed by kReleaseColumns (a NULL release: none stored).
Allocation AllocationFromRow(const pqxx::row& r);

// The release columns starting at r[first] (kReleaseColumns order).
Allocation::Release ReleaseFromRow(const pqxx::row& r, pqxx::row::size_type first);

// The dataset's ledger row (kBudgetColumns). With `lock`, the row stays locked until the
// transaction ends: every budget change of a dataset is serialised on it. NOT_FOUND when the
// dataset has no ledger.
absl::StatusOr<pqxx::row> ReadLedger(pqxx::transaction_base& tx, int64_t population_id, bool lock);

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_LEDGER_ROWS_H_
