// Computes a ScanPlan's exact clipped statistics inside PostgreSQL (push-down): rows never travel
// to dpqd, only one (count, sum) pair does, and that pair is secret until noise is added.
#ifndef DPQ_SERVER_STORE_AGGREGATE_SCANNER_H_
#define DPQ_SERVER_STORE_AGGREGATE_SCANNER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/query/filter/ast.h"
#include "server/query/planner.h"
#include "server/store/database.h"
#include "server/store/scan_arithmetic.h"
#include "server/store/scan_router.h"

namespace dpq::store {

// The database role every scan runs under (migration 0010; docs/database-roles.md): SELECT on the
// dataset tables in dpq_data, nothing else.
inline constexpr char kScanRole[] = "dpq_scan";

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

class AggregateScanner {
 public:
  // Every scan on `db`.
  explicit AggregateScanner(Database* db)
      : own_router_(std::make_unique<ScanRouter>(db)), router_(own_router_.get()) {}
  // Scans where `router` sends them: a read standby when it has replayed the dataset.
  explicit AggregateScanner(ScanRouter* router) : router_(router) {}

  // Contribution bounding: each privacy unit keeps at most plan.max_contributions rows, so the
  // bound holds whatever the data: chosen uniformly at random (row_number() over a random order
  // within the unit; rows whose value is NULL are dropped before the choice) or, when
  // plan.bound_by_row_rank, the unit's first K rows in load order (the stored rank; bounding_sql.h).
  // All rows with a NULL unit form one unit, which is the conservative reading.
  // The statement is cancelled at `deadline` (DEADLINE_EXCEEDED), so a client that gave up does not
  // leave a scan running.
  // `filter` (may be null) keeps only the rows it accepts, before contribution bounding: the
  // filter is a per-row condition, so each unit still keeps at most K rows and the sensitivity is
  // unchanged.
  // Grouped scans also keep at most plan.max_partitions groups per unit: each unit ranks its groups
  // by a keyed hash of the unit and its group values under a fresh random key (`partition_seed`),
  // so the choice is uniform and independent of other units' data, and keeps the first M.
  // Every arithmetic step after the clamp is total (scan_arithmetic.h). Should the float8
  // statement still raise a data exception (SQLSTATE class 22), the scan runs once more in exact
  // numeric, which cannot, and says so in ScanResult::recovered_data_error: the analyst's status
  // never depends on a stored value.
  absl::StatusOr<ScanResult> Scan(const query::ScanPlan& plan,
                                  absl::Time deadline = absl::InfiniteFuture(),
                                  const query::filter::TypedFilter* filter = nullptr,
                                  const std::string& partition_seed = "");

  // Fault injection for the fallback's tests: every float8 statement raises division_by_zero
  // (SQLSTATE 22012), as a scan with an arithmetic bug would. Never set in production.
  void FailFloat8ScansForTesting(bool fail) { fail_float8_for_testing_ = fail; }

 private:
  // One run of the statement in `arithmetic`. A data exception is returned in `data_error`
  // (SQLSTATE) with an OK status, after the transaction was rolled back normally.
  absl::Status RunOnce(const query::ScanPlan& plan, absl::Time deadline,
                       const query::filter::TypedFilter* filter, const std::string& partition_seed,
                       ScanArithmetic arithmetic, ScanResult* out, std::string* data_error);

  std::unique_ptr<ScanRouter> own_router_;
  ScanRouter* router_;
  bool fail_float8_for_testing_ = false;
};

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_AGGREGATE_SCANNER_H_
