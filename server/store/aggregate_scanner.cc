#include "server/store/aggregate_scanner.h"

#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "server/base/status_macros.h"
#include "server/store/dataset_store.h"
#include "server/store/filter/filter_sql.h"

namespace dpq::store {

absl::StatusOr<ScanResult> AggregateScanner::Scan(const query::ScanPlan& plan, absl::Time deadline,
                                                  const query::filter::TypedFilter* filter) {
  ScanResult out;
  RETURN_IF_ERROR(db_->Run("aggregate scan", [&](pqxx::connection& c) -> absl::Status {
    pqxx::read_transaction tx(c);
    if (deadline != absl::InfiniteFuture()) {
      const int64_t ms = absl::ToInt64Milliseconds(deadline - absl::Now());
      if (ms <= 0) return absl::DeadlineExceededError("aggregate scan: deadline already passed");
      tx.exec0(absl::StrCat("SET LOCAL statement_timeout = ", ms));  // an integer we computed
    }
    // Identifiers come from the stored schema (validated at creation) and are quoted.
    const std::string unit = tx.quote_name(plan.unit_column);
    const std::string table = DataTableName(plan.dataset_id);
    const auto quote = [&tx](const std::string& name) { return tx.quote_name(name); };
    // Values are bound parameters, numbered in order of use: clamp bounds and centre (sum and
    // mean only), then K, then the filter's.
    std::vector<std::string> params;
    std::string value_expr = "NULL::float8";
    std::string sum_expr = "0::float8";
    std::vector<std::string> conditions;
    if (!plan.value_column.empty()) {
      const std::string col = quote(plan.value_column);
      value_expr = absl::StrCat(col, "::float8");
      sum_expr = "coalesce(sum(least(greatest(v, $1::float8), $2::float8) - $3::float8), 0)::float8";
      conditions.push_back(absl::StrCat(col, " IS NOT NULL"));
      params = {ExactDouble(plan.clamp_lower), ExactDouble(plan.clamp_upper), ExactDouble(plan.center)};
    }
    params.push_back(absl::StrCat(plan.max_contributions));
    const std::string k_param = absl::StrCat("$", params.size(), "::int");
    if (filter != nullptr) {
      ASSIGN_OR_RETURN(SqlFragment fragment,
                       RenderFilter(*filter, static_cast<int>(params.size()) + 1, quote));
      conditions.push_back(fragment.sql);
      params.insert(params.end(), fragment.params.begin(), fragment.params.end());
    }
    const std::string sql = absl::StrCat(
        "SELECT count(*), ", sum_expr, " FROM (SELECT ", value_expr,
        " AS v, row_number() OVER (PARTITION BY ", unit, " ORDER BY random()) AS rn FROM ", table,
        conditions.empty() ? "" : absl::StrCat(" WHERE ", absl::StrJoin(conditions, " AND ")),
        ") kept WHERE rn <= ", k_param);
    pqxx::row r = tx.exec_params1(sql, pqxx::prepare::make_dynamic_params(params));
    out.count = r[0].as<int64_t>();
    out.sum = r[1].as<double>();
    return absl::OkStatus();
  }));
  return out;
}

}  // namespace dpq::store
