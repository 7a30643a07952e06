#include "server/engine/admin/population_admin.h"

#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/engine/admin/admin_action.h"

namespace dpq::engine {

absl::StatusOr<PopulationView> PopulationAdmin::WithBudget(store::Population population) {
  PopulationView view{std::move(population), {}};
  ASSIGN_OR_RETURN(view.budget, ledger_->Get(view.population.id));
  return view;
}

absl::StatusOr<PopulationView> PopulationAdmin::Create(const store::Principal& admin,
                                                       const std::string& name,
                                                       query::ColumnType unit_type) {
  if (unit_type != query::ColumnType::kInteger && unit_type != query::ColumnType::kText) {
    return absl::InvalidArgumentError(
        absl::StrCat("unit_type must be integer or text: people are identified by ids, not by ",
                     query::ColumnTypeName(unit_type), "s"));
  }
  const store::AdminAction log =
      Logged(admin, "population.create", name,
             absl::StrCat("unit_type=", query::ColumnTypeName(unit_type)));
  ASSIGN_OR_RETURN(store::Population created, populations_->Create(name, unit_type, &log));
  return WithBudget(std::move(created));
}

absl::StatusOr<std::vector<PopulationView>> PopulationAdmin::List() {
  ASSIGN_OR_RETURN(std::vector<store::Population> populations, populations_->List());
  // One read of every ledger, not one per population.
  ASSIGN_OR_RETURN(std::vector<store::BudgetState> budgets, ledger_->ListBudgets());
  std::map<int64_t, store::BudgetState> by_id;
  for (store::BudgetState& b : budgets) by_id[b.population_id] = std::move(b);
  std::vector<PopulationView> out;
  for (store::Population& p : populations) {
    const int64_t id = p.id;
    out.push_back({std::move(p), by_id[id]});
  }
  return out;
}

absl::StatusOr<PopulationView> PopulationAdmin::Get(const std::string& name) {
  ASSIGN_OR_RETURN(store::Population found, populations_->Get(name));
  return WithBudget(std::move(found));
}

absl::Status PopulationAdmin::Drop(const store::Principal& admin, const std::string& name) {
  const store::AdminAction log = Logged(admin, "population.drop", name);
  return populations_->Drop(name, &log);
}

}  // namespace dpq::engine
