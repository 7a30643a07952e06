// Runs one central-DP query end to end (DESIGN.md §2):
//   authorise -> plan (validate, derive sensitivity) -> replay check -> budget pre-check ->
//   scan in SQL -> add noise -> debit (lock ledger, audit row, COMMIT) -> return.
// The answer is returned only after the debit has committed; on any error nothing is released.
// No gRPC here: api/ translates protos to these types and back.
#ifndef DPQ_SERVER_ENGINE_QUERY_ENGINE_H_
#define DPQ_SERVER_ENGINE_QUERY_ENGINE_H_

#include <string>

#include "absl/status/statusor.h"
#include "server/dp/random_source.h"
#include "server/query/planner.h"
#include "server/query/query_spec.h"
#include "server/store/aggregate_scanner.h"
#include "server/store/budget_ledger.h"
#include "server/store/dataset_store.h"
#include "server/store/principal_store.h"

namespace dpq::engine {

struct QueryOutcome {
  query::QuerySpec spec;          // normalised (resolved bounds)
  store::Allocation allocation;   // the committed audit row: value, scales, interval, charge
  store::BudgetState budget;      // after the debit
  bool replayed = false;
};

class QueryEngine {
 public:
  struct Stores {
    store::DatasetStore* datasets;
    store::PrincipalStore* principals;
    store::BudgetLedger* ledger;
    store::AggregateScanner* scanner;
  };
  // `rng` must be dp::SecureRandom() in production.
  QueryEngine(Stores stores, dp::RandomSource* rng) : s_(stores), rng_(rng) {}

  // The dataset if `principal` may query it: admins may query any dataset, analysts only granted
  // ones (PERMISSION_DENIED). NOT_FOUND for an unknown dataset.
  absl::StatusOr<query::DatasetSchema> AuthorizedDataset(const store::Principal& principal,
                                                        const std::string& dataset);

  // request_id: empty means "assign one". The scan is cancelled at `deadline`. Errors: see the
  // proto's AnalystService.Query.
  absl::StatusOr<QueryOutcome> Run(const store::Principal& principal, const query::QuerySpec& spec,
                                   std::string request_id, absl::Time deadline = absl::InfiniteFuture());

 private:
  Stores s_;
  dp::RandomSource* rng_;
};

}  // namespace dpq::engine

#endif  // DPQ_SERVER_ENGINE_QUERY_ENGINE_H_
