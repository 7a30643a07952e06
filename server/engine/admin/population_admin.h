// The admin's population actions (create, list, show, drop), each with the population's budget.
// Each mutating action appends its admin-log entry in the same transaction as the change
// (store/population_store.h). No gRPC.
#ifndef DPQ_SERVER_ENGINE_ADMIN_POPULATION_ADMIN_H_
#define DPQ_SERVER_ENGINE_ADMIN_POPULATION_ADMIN_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/query/dataset_schema.h"
#include "server/store/allocation.h"
#include "server/store/budget_ledger.h"
#include "server/store/population_store.h"
#include "server/store/principal_store.h"

namespace dpq::engine {

struct PopulationView {
  store::Population population;
  store::BudgetState budget;
};

class PopulationAdmin {
 public:
  PopulationAdmin(store::PopulationStore* populations, store::BudgetLedger* ledger)
      : populations_(populations), ledger_(ledger) {}

  // A population of people identified by `unit_type` values (integer or text: a double does not
  // identify anyone reliably), with an empty budget; logged as "population.create".
  absl::StatusOr<PopulationView> Create(const store::Principal& admin, const std::string& name,
                                        query::ColumnType unit_type);
  absl::StatusOr<std::vector<PopulationView>> List();
  absl::StatusOr<PopulationView> Get(const std::string& name);
  // Logged as "population.drop"; FAILED_PRECONDITION while it has a live dataset.
  absl::Status Drop(const store::Principal& admin, const std::string& name);

 private:
  absl::StatusOr<PopulationView> WithBudget(store::Population population);

  store::PopulationStore* populations_;
  store::BudgetLedger* ledger_;
};

}  // namespace dpq::engine

#endif  // DPQ_SERVER_ENGINE_ADMIN_POPULATION_ADMIN_H_
