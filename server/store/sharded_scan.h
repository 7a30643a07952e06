// A scan of a sharded dataset (sharded_table.h) written so that no raw row leaves a shard.
//
// PostgreSQL 15's postgres_fdw ships a complete aggregate over ONE foreign table to its server,
// never a partial aggregate of a partitioned table, never a window function, GROUPING SETS,
// GROUPING() or LEAST/GREATEST (docs/scaling.md, measured). So the statement is a UNION ALL of one
// branch per shard, each the whole scan over that shard's foreign partition (the clamp, the
// per-unit bound by stored rank, and the aggregates, grouped by bucket when there are buckets),
// which postgres_fdw sends as one remote aggregate and runs as an Async Foreign Scan, all shards
// at once. The coordinator adds the shards' partials: counts and sums add, because every row of a
// privacy unit sits on one shard (hash partitioning on the unit), so bounding per unit on each
// shard bounds exactly as one table would; the per-group totals of a histogram are the sums over
// its buckets.
//
// Only the stored-rank bound (bounding_sql.h: ungrouped, unfiltered, not pre-aggregated) pushes
// down whole; the random per-query choice and per-unit pre-aggregation need a window function or
// an aggregate over a subquery on the shard, which postgres_fdw does not ship, and would pull rows
// to the coordinator. dpqd sends those to each shard itself (shard_fan_out.h).
#ifndef DPQ_SERVER_STORE_SHARDED_SCAN_H_
#define DPQ_SERVER_STORE_SHARDED_SCAN_H_

#include <vector>

#include "absl/status/statusor.h"
#include "server/query/planner.h"
#include "server/store/scan_sql.h"

namespace dpq::store {

// True when `plan` (on a sharded dataset) runs as one coordinator statement whose every branch
// postgres_fdw pushes down whole (ShardedScanStatement); false when dpqd must send it to each
// shard itself (shard_fan_out.h). Decided from the plan's shape alone, never from the data.
bool PushesDownWhole(const query::ScanPlan& plan, bool has_filter);

// The coordinator's statement over `branches` (one per shard, built with the same plan, so with
// the same parameters): the same result columns as one table's ScanStatement.
absl::StatusOr<ScanStatement> ShardedScanStatement(std::vector<ScanStatement> branches);

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_SHARDED_SCAN_H_
