// The text of one aggregate scan (store/aggregate_scanner.h runs it): rows filtered, contribution
// bounded, clamped and aggregated inside PostgreSQL, every value a bound parameter. Pure: builds
// strings, touches no connection (identifiers are quoted by the caller's `quote_name`).
//
// Every arithmetic step on a row value is written by SafeArithmetic (scan_arithmetic.h), after the
// value was clamped, so no stored value can make the statement fail (docs/threat-model.md).
#ifndef DPQ_SERVER_STORE_SCAN_SQL_H_
#define DPQ_SERVER_STORE_SCAN_SQL_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/query/filter/ast.h"
#include "server/query/planner.h"
#include "server/store/scan_arithmetic.h"

namespace dpq::store {

// How a scan bounds each privacy unit's contribution (bounding_sql.h, planner.h).
enum class BoundingMode {
  kRandomWindow,         // K rows per unit (and group) chosen by row_number() over random()
  kStoredRank,           // the unit's first K rows in load order (_dpq_rank <= K)
  kPerUnitPreAggregate,  // one clamped count, sum or mean per unit and group
};
// Every BoundingMode: the scan-totality test (tests/db/scan_totality_test.cc) must reach each.
inline constexpr BoundingMode kAllBoundingModes[] = {
    BoundingMode::kRandomWindow, BoundingMode::kStoredRank, BoundingMode::kPerUnitPreAggregate};
absl::string_view BoundingModeName(BoundingMode mode);  // "random_window", ...

// The mode `plan` is scanned with (with or without a --where filter).
BoundingMode BoundingModeOf(const query::ScanPlan& plan, bool has_filter);

struct ScanStatement {
  std::string sql;
  std::vector<std::string> params;  // text of $1, $2, ...
  // Result columns: the group keys g0..g{n-1}, then bucket, GROUPING(bucket), count, sum,
  // sum of squares, units.
  size_t group_columns = 0;
  size_t buckets = 0;  // 0 when the plan has no bucket edges
};

// The statement for `plan`. `filter` may be null. `partition_seed` keys the per-unit choice of
// groups (grouped plans). `quote_name` quotes an identifier.
absl::StatusOr<ScanStatement> BuildScanStatement(
    const query::ScanPlan& plan, const query::filter::TypedFilter* filter,
    const std::string& partition_seed, ScanArithmetic arithmetic,
    const std::function<std::string(const std::string&)>& quote_name);

// For a sharded dataset, the same statement as one table's, run on a shard itself over its own
// table (dpq_shard.ds_<id>) and only the rows of loads up to plan.dataset_version: what
// shard_fan_out.h sends to each shard when the scan cannot be pushed down whole through
// postgres_fdw. INTERNAL for a plan that is not sharded or joins.
absl::StatusOr<ScanStatement> BuildShardLocalScanStatement(
    const query::ScanPlan& plan, const query::filter::TypedFilter* filter,
    const std::string& partition_seed, ScanArithmetic arithmetic,
    const std::function<std::string(const std::string&)>& quote_name);

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_SCAN_SQL_H_
