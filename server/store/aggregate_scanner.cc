#include "server/store/aggregate_scanner.h"

#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/store/dataset_store.h"

namespace dpq::store {

absl::StatusOr<ScanResult> AggregateScanner::Scan(const query::ScanPlan& plan) {
  ScanResult out;
  RETURN_IF_ERROR(db_->Run("aggregate scan", [&](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    // Identifiers come from the stored schema (validated at creation) and are quoted; values are
    // bound parameters.
    const std::string unit = tx.quote_name(plan.unit_column);
    const std::string table = DataTableName(plan.dataset_id);
    pqxx::row r = [&] {
      if (plan.value_column.empty()) {
        return tx.exec_params1(absl::StrCat(
            "SELECT count(*), 0::float8 FROM (SELECT row_number() OVER (PARTITION BY ", unit,
            " ORDER BY random()) AS rn FROM ", table, ") kept WHERE rn <= $1"),
            plan.max_contributions);
      }
      const std::string col = tx.quote_name(plan.value_column);
      return tx.exec_params1(
          absl::StrCat("SELECT count(*), coalesce(sum(least(greatest(v, $1::float8), $2::float8) - "
                       "$3::float8), 0)::float8 FROM (SELECT ", col, "::float8 AS v, row_number() "
                       "OVER (PARTITION BY ", unit, " ORDER BY random()) AS rn FROM ", table,
                       " WHERE ", col, " IS NOT NULL) kept WHERE rn <= $4"),
          ExactDouble(plan.clamp_lower), ExactDouble(plan.clamp_upper), ExactDouble(plan.center),
          plan.max_contributions);
    }();
    out.count = r[0].as<int64_t>();
    out.sum = r[1].as<double>();
    return absl::OkStatus();
  }));
  return out;
}

}  // namespace dpq::store
