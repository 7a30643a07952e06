// The exact statistics one aggregate scan returns (aggregate_scanner.h), and how the partials of
// several shards add up to the whole (shard_fan_out.h).
#ifndef DPQ_SERVER_STORE_SCAN_RESULT_H_
#define DPQ_SERVER_STORE_SCAN_RESULT_H_

#include <cstdint>
#include <string>
#include <vector>

namespace dpq::store {

// The exact statistics of one group (ScanPlan's comment defines them).
struct GroupStats {
  std::vector<std::string> key;  // the group columns' values as text; empty when ungrouped
  int64_t count = 0;             // kept rows
  double sum = 0;     // sum of (clamped value - center) over kept rows; 0 without a value column
  double sum_sq = 0;  // sum of squares of the centred values (ScanPlan::sum_squares)
  std::vector<int64_t> buckets;  // kept rows per bucket (ScanPlan::bucket_edges); else empty
  int64_t units = 0;  // distinct privacy units among the kept rows (ScanPlan::count_units)
};

// Ungrouped: the totals are in the GroupStats fields and `groups` is empty. Grouped: one entry per
// group with at least one kept row, sorted by key; the top-level fields stay zero.
struct ScanResult : GroupStats {
  std::vector<GroupStats> groups;
  // Empty when the float8 statement answered. Otherwise the SQLSTATE of the data exception it
  // raised: the answer then came from the same scan in exact numeric (scan_arithmetic.h). By the
  // argument of scan_arithmetic.h this never happens; when it does it is a bug, and the engine
  // logs it and counts it (dpq_scan_data_errors_total) while the analyst still gets the answer.
  std::string recovered_data_error;
};

// Adds the partial result of one shard to `total`. Every statistic is a count or a sum over kept
// rows, and every row of a privacy unit sits on one shard (hash partitioning on the unit), so each
// shard bounds its units exactly as one table would and the partials add: counts, sums, sums of
// squares, bucket counts, and distinct units (no unit is on two shards). A group present on
// several shards is one group of the total; the groups stay sorted by key.
void AddShardPartial(const ScanResult& partial, ScanResult* total);

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_SCAN_RESULT_H_
