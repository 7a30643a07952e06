// The transaction of one group of debits (debit_batcher.h; the protocol and why it is safe are in
// budget_ledger.h), and the prepared statements it shares with BudgetLedger::FindAllocation.
// Store-internal: it includes libpqxx, so no header outside server/store/ may include it.
#ifndef DPQ_SERVER_STORE_DEBIT_GROUP_H_
#define DPQ_SERVER_STORE_DEBIT_GROUP_H_

#include <cstdint>
#include <vector>

#include <pqxx/pqxx>

#include "server/store/allocation.h"
#include "server/store/database.h"
#include "server/store/debit_batcher.h"

namespace dpq::store {

// The statements of the debit transaction (and FindAllocation's), prepared once per pooled
// connection (libpqxx 6.4's prepare() is a no-op when a name is defined again with the same text;
// the server-side PREPARE happens on first use) and run with generic plans (kGenericPlans, SET
// LOCAL: no effect beyond the transaction). `FOR UPDATE OF l` also names the lock wait in
// pg_stat_activity.
//
// Why generic plans: planned for a known dataset id (plain queries, or prepared ones on their
// custom plans), PostgreSQL 15 looks a request id up through audit_cache_lookup or
// (population_id, seq), with `population_id = <id>` as the index condition and the request id as a mere
// filter, whenever its statistics think that dataset is small: any dataset created or grown since
// the last ANALYZE, which on a large audit table can be a long time. That is a scan of the
// dataset's whole history per lookup (measured: 1.9 ms per group after 20k debits in
// bench/ledger_debit_bench; EXPLAIN shows "Rows Removed by Filter: 2999" at 3k rows). A generic plan
// estimates `population_id = $1` from the number of distinct datasets instead, and the lookups are
// equalities on the whole unique key (population_id, request_id), so they probe the unique index. The
// group's lookup is one LATERAL probe per id because `request_id = ANY($2)` is costed as ten probes
// and lost to the scan even as a generic plan on a fresh table.
inline constexpr char kGenericPlans[] = "SET LOCAL plan_cache_mode = force_generic_plan";
void PrepareLedgerStatements(pqxx::connection& c);

// Reads the releases of the deferred allocations among `allocations` (all of `population_id`) by
// primary key, one statement.
void AttachReleases(pqxx::transaction_base& tx, int64_t population_id,
                    const std::vector<Allocation*>& allocations);

// Decides and writes one group of debits of `population_id`, members in arrival order.
// When this process remembers the population's rows (known_ledgers.h) and they decide the
// leader's debit, the group is the run of queued debits they decide, admitted in memory and
// written by one autocommitted statement that writes only if those rows are unchanged
// (debit_write.h; the statement runs with the session's plans: it looks up no request id).
// Otherwise, or when a row changed, in ONE transaction: lock the ledger row with the grant row of
// `leader_principal` (the leader's own debit's principal), take the group, look up its request
// ids, lock the other members' grants, admit in memory (debit_admission.h), the same write, one
// COMMIT. Every member gets its own result.
void CommitDebitGroup(Database* db, int64_t population_id, int64_t leader_principal,
                      DebitBatcher::Group& taker);

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_DEBIT_GROUP_H_
