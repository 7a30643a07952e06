#include "server/store/bounding_sql.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace dpq::store {

bool UsesStoredRank(const query::ScanPlan& plan, bool has_filter) {
  // count_units only comes with grouped plans today (partition selection); it is excluded anyway
  // so that a future ungrouped use is reviewed before it gets the stored rank.
  // A row condition is a filter (dropped before the choice, see bounding_sql.h).
  // A joined scan never: the rank orders one table's rows, not the joined rows.
  return plan.bound_by_row_rank && plan.join == nullptr && plan.group_columns.empty() &&
         !has_filter && plan.row_condition == nullptr && !plan.count_units;
}

std::string RowRankSelect(const query::ScanPlan& plan, bool has_filter,
                          const std::vector<std::string>& partition_by) {
  if (UsesStoredRank(plan, has_filter)) {
    // A plain column: the subqueries flatten, and `rn <= K` becomes a scan filter.
    return absl::StrCat(kRowRankColumn, " AS rn");
  }
  return absl::StrCat("row_number() OVER (PARTITION BY ", absl::StrJoin(partition_by, ", "),
                      " ORDER BY random()) AS rn");
}

}  // namespace dpq::store
