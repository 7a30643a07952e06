// Budgets: an analyst's view of a dataset's budget, the admin setting one, and the overview of
// every dataset's budget that ServerStatus reports. No gRPC.
#ifndef DPQ_SERVER_ENGINE_ADMIN_BUDGET_BOOK_H_
#define DPQ_SERVER_ENGINE_ADMIN_BUDGET_BOOK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/optional.h"
#include "server/engine/query_engine.h"
#include "server/store/block_ledger.h"
#include "server/store/budget_ledger.h"
#include "server/store/dataset_store.h"
#include "server/store/population_store.h"
#include "server/store/principal_store.h"

namespace dpq::engine {

// A dataset's budget with its epsilon preset (query/epsilon_guidance.h; empty: none).
struct DatasetBudget {
  store::BudgetState budget;  // the population's (budget.population)
  std::string preset;
  std::string via_dataset;  // the dataset the caller named, when it did not name the population
  std::vector<std::string> warnings;  // of the total against the preset (SetBudget only)
  // A per-block budget read with its blocks: every block from the first to the current one, in
  // order (a block never charged has the per-block budget and spent nothing).
  std::vector<store::BlockBudget> blocks;
};

// What SetBudget asks for. Empty `accountant`/`preset` and unset `max_query_epsilon` keep the
// current ones; epsilon 0 with a preset takes the preset's upper end.
struct BudgetChange {
  std::string dataset;
  double epsilon = 0;
  double delta = 0;
  std::string accountant;
  std::string preset;
  absl::optional<double> max_query_epsilon;  // 0: no per-query limit
  // Time blocks (store/block_ledger.h): make the budget per block (epsilon/delta are then every
  // block's), or set the budget of the one block starting on `block` ('YYYY-MM-DD').
  bool per_block = false;
  std::string block;
};

// What the database holds, for ServerStatus: unreachable is a report, not an error.
struct ServerOverview {
  bool database_reachable = false;
  std::string database_error;
  int64_t schema_version = 0;
  std::vector<DatasetBudget> budgets;  // one per population with a live dataset
};

class BudgetBook {
 public:
  struct Stores {
    store::DatasetStore* datasets;
    store::PrincipalStore* principals;
    store::BudgetLedger* ledger;
    store::PopulationStore* populations;
    store::BlockLedger* blocks = nullptr;
  };
  // `engine` authorises analysts' reads (QueryEngine::AuthorizedDataset).
  BudgetBook(QueryEngine* engine, Stores stores) : engine_(engine), stores_(stores) {}

  // An analyst: the budget of the population of `dataset` if the analyst may query the dataset.
  // An admin: the budget of the population `dataset` names, directly or through a dataset of it.
  // With `blocks`, a per-block budget comes with its blocks (FAILED_PRECONDITION for another):
  // the last `last_blocks` up to the current one, or every one from the first when 0
  // (INVALID_ARGUMENT when negative).
  absl::StatusOr<DatasetBudget> Get(const store::Principal& principal, const std::string& dataset,
                                    bool blocks = false, int64_t last_blocks = 0);
  // Sets the budget of the population change.dataset names (a population, or a dataset of it),
  // logged as "budget.set" on the population. INVALID_ARGUMENT names "preset", "epsilon", "delta"
  // or "max_query_epsilon" for a value it refuses; NOT_FOUND when no population or dataset has
  // that name.
  absl::StatusOr<DatasetBudget> Set(const store::Principal& admin, const BudgetChange& change);
  // Schema version and every live dataset's budget; an unreachable database is reported in it.
  absl::StatusOr<ServerOverview> Overview();

 private:
  // The live dataset of the population with time blocks (they share one width) whose blocks
  // start first: what blocks the population has. FAILED_PRECONDITION when none has.
  absl::StatusOr<query::DatasetSchema> BlockedDataset(int64_t population_id,
                                                      const std::string& population);
  absl::Status AddBlocks(DatasetBudget& read, int64_t last_blocks);
  absl::StatusOr<DatasetBudget> SetBlocks(const store::AdminAction& log,
                                          const store::ResolvedPopulation& target,
                                          const BudgetChange& change, int64_t epsilon_units,
                                          int64_t delta_units);

  QueryEngine* engine_;
  Stores stores_;
};

}  // namespace dpq::engine

#endif  // DPQ_SERVER_ENGINE_ADMIN_BUDGET_BOOK_H_
