#include "server/store/sharded_scan.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace dpq::store {

bool PushesDownWhole(const query::ScanPlan& plan, bool has_filter) {
  return BoundingModeOf(plan, has_filter) == BoundingMode::kStoredRank;
}

absl::StatusOr<ScanStatement> ShardedScanStatement(std::vector<ScanStatement> branches) {
  if (branches.empty()) return absl::InternalError("a sharded scan needs at least one shard");
  for (const ScanStatement& b : branches) {
    if (b.params != branches[0].params) {
      return absl::InternalError("the shards' scan statements differ in their parameters");
    }
  }
  ScanStatement out;
  out.group_columns = branches[0].group_columns;
  out.buckets = branches[0].buckets;
  std::vector<std::string> groups, columns;
  for (size_t i = 0; i < out.group_columns; ++i) groups.push_back(absl::StrCat("g", i));
  columns = groups;
  const bool bucketed = out.buckets > 0;
  if (bucketed) columns.push_back("b");
  for (const char* c : {"n", "s", "ss", "units"}) columns.push_back(c);
  std::vector<std::string> parts;
  for (const ScanStatement& b : branches) parts.push_back(absl::StrCat("(", b.sql, ")"));
  std::vector<std::string> select = groups;
  select.push_back(bucketed ? "b" : "NULL::int");
  select.push_back(bucketed ? "GROUPING(b)" : "1");
  // coalesce: the grand total of an empty table has no partial to add (GROUPING SETS' () row).
  for (const char* sum : {"coalesce(sum(n), 0)::bigint", "coalesce(sum(s), 0)::float8",
                          "coalesce(sum(ss), 0)::float8", "coalesce(sum(units), 0)::bigint"}) {
    select.push_back(sum);
  }
  std::string group_clause;
  const std::string g = absl::StrJoin(groups, ", ");
  if (bucketed) {
    group_clause =
        absl::StrCat(" GROUP BY GROUPING SETS ((", g, groups.empty() ? "" : ", ", "b), (", g, "))");
  } else if (!groups.empty()) {
    group_clause = absl::StrCat(" GROUP BY ", g);
  }
  out.sql = absl::StrCat("SELECT ", absl::StrJoin(select, ", "), " FROM (",
                         absl::StrJoin(parts, " UNION ALL "), ") shards(",
                         absl::StrJoin(columns, ", "), ")", group_clause);
  out.params = std::move(branches[0].params);
  return out;
}

}  // namespace dpq::store
