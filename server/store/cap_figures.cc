#include "server/store/cap_figures.h"

#include <pqxx/pqxx>

#include "server/base/status_macros.h"

namespace dpq::store {

absl::StatusOr<std::vector<AnalystCap>> ListAnalystCaps(Database* db) {
  std::vector<AnalystCap> out;
  RETURN_IF_ERROR(db->Run("list analyst caps", [&](pqxx::connection& c) {
    out.clear();
    pqxx::read_transaction tx(c);
    for (
        const auto& row : tx.exec(
            "SELECT d.name, p.name, g.epsilon_cap_units, s.epsilon_spent_units, g.delta_cap_units, "
            "s.delta_spent_units FROM population_caps g JOIN principals p ON p.id = g.principal_id "
            "JOIN cap_spend s ON s.population_id = g.population_id AND s.principal_id = g.principal_id "
            "JOIN populations d ON d.id = g.population_id "
            "WHERE (g.epsilon_cap_units IS NOT NULL OR g.delta_cap_units IS NOT NULL) "
            "AND p.revoked_at IS NULL AND d.dropped_at IS NULL "
            "ORDER BY d.name, p.name")) {
      AnalystCap cap;
      cap.population = row[0].as<std::string>();
      cap.analyst = row[1].as<std::string>();
      cap.has_epsilon_cap = !row[2].is_null();
      if (cap.has_epsilon_cap) cap.epsilon_cap_units = row[2].as<int64_t>();
      cap.epsilon_spent_units = row[3].as<int64_t>();
      cap.has_delta_cap = !row[4].is_null();
      if (cap.has_delta_cap) cap.delta_cap_units = row[4].as<int64_t>();
      cap.delta_spent_units = row[5].as<int64_t>();
      out.push_back(std::move(cap));
    }
    return absl::OkStatus();
  }));
  return out;
}

}  // namespace dpq::store
