#include "client/dpqctl/population_output.h"

#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "client/dpqctl/enum_names.h"
#include "client/dpqctl/json_output.h"
#include "client/dpqctl/text_output.h"

namespace dpqctl {

nlohmann::json PopulationToJson(const dpq::v1::Population& p) {
  return {
      {"name", p.name()},
      {"unit_type", ColumnTypeWord(p.unit_type())},
      {"created_at", p.created_at()},
      {"dropped", p.dropped()},
      {"datasets", std::vector<std::string>(p.datasets().begin(), p.datasets().end())},
      {"budget", BudgetToJson(p.budget())},
  };
}

nlohmann::json ListPopulationsResponseToJson(const dpq::v1::ListPopulationsResponse& response) {
  nlohmann::json out = nlohmann::json::array();
  for (const dpq::v1::Population& p : response.populations()) out.push_back(PopulationToJson(p));
  return {{"populations", out}};
}

void WritePopulationText(std::ostream& out, const dpq::v1::Population& p) {
  out << "population '" << p.name() << "': people identified by " << ColumnTypeWord(p.unit_type())
      << " values" << (p.dropped() ? " (dropped)" : "") << '\n';
  out << "datasets:   "
      << (p.datasets().empty() ? std::string("none") : absl::StrJoin(p.datasets(), ", ")) << '\n';
  WriteBudgetText(out, p.budget());
}

void WriteListPopulationsText(std::ostream& out, const dpq::v1::ListPopulationsResponse& response) {
  if (response.populations().empty()) {
    out << "no populations (create one with `dpqctl population create NAME --unit-type integer`)\n";
    return;
  }
  std::vector<std::vector<std::string>> rows;
  for (const dpq::v1::Population& p : response.populations()) {
    rows.push_back({p.name() + (p.dropped() ? " (dropped)" : ""), ColumnTypeWord(p.unit_type()),
                    p.datasets().empty() ? "-" : absl::StrJoin(p.datasets(), ","),
                    FormatNumber(p.budget().epsilon_spent()),
                    FormatNumber(p.budget().epsilon_total())});
  }
  WriteTable(out, {"POPULATION", "UNIT", "DATASETS", "EPSILON SPENT", "OF TOTAL"}, rows);
}

}  // namespace dpqctl
