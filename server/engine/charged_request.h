// What one query and a batch share after the plan: the audit row charged before the scan, and
// the error when a charged request is not answered. Internal to the engine (query_engine.cc and
// query_batch.cc).
#ifndef DPQ_SERVER_ENGINE_CHARGED_REQUEST_H_
#define DPQ_SERVER_ENGINE_CHARGED_REQUEST_H_

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "server/engine/noisy_release.h"
#include "server/query/dataset_schema.h"
#include "server/query/planner.h"
#include "server/query/time_blocks/time_blocks.h"
#include "server/store/allocation.h"
#include "server/store/principal_store.h"

namespace dpq::engine {

// The audit row of a query, charged before its scan: everything in it is a function of the plan
// (bounds, K, mechanisms, events), nothing of the data. Its answer is stored later (StoreRelease).
store::Allocation AllocationFor(const store::Principal& principal,
                                const query::DatasetSchema& schema, const query::QueryPlan& plan,
                                const ReleasePlan& release);

// Names in `a` the time blocks of `schema`'s per-block population it pays (every block of
// `range`): the ledger cells the debit charges, recorded in the audit row.
void PayBlocks(const query::DatasetSchema& schema, const query::BlockRange& range,
               store::Allocation& a);

// After the charge the data is touched, and the cost stays whatever happens (pay before you look).
// The error tells the analyst only what they observe anyway (their deadline passed, or the service
// failed) and how to get what they paid for; never the scan's own message, which a failure could
// fill with something of the data. Operators find the cause's code in the log, and the message
// of a database failure (built without row data, store/postgres/pqxx_status.h), never another
// message: logs never hold row values.
absl::Status ChargedButUnanswered(const absl::Status& cause, const std::string& request_id,
                                  absl::Time deadline);

}  // namespace dpq::engine

#endif  // DPQ_SERVER_ENGINE_CHARGED_REQUEST_H_
