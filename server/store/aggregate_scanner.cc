#include "server/store/aggregate_scanner.h"

#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/base/status_macros.h"
#include "server/store/dataset_store.h"

namespace dpq::store {

absl::StatusOr<ScanResult> AggregateScanner::Scan(const query::ScanPlan& plan, absl::Time deadline) {
  ScanResult out;
  RETURN_IF_ERROR(db_->Run("aggregate scan", [&](pqxx::connection& c) -> absl::Status {
    pqxx::read_transaction tx(c);
    if (deadline != absl::InfiniteFuture()) {
      const int64_t ms = absl::ToInt64Milliseconds(deadline - absl::Now());
      if (ms <= 0) return absl::DeadlineExceededError("aggregate scan: deadline already passed");
      tx.exec0(absl::StrCat("SET LOCAL statement_timeout = ", ms));  // an integer we computed
    }
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
