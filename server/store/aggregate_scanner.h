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
#include "server/store/scan_result.h"
#include "server/store/scan_router.h"
#include "server/store/scan_session.h"

namespace dpq::store {

class ShardFanOut;

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

  // Where the scans of a sharded dataset that do not push down whole go (shard_fan_out.h). Without
  // one they fail with FAILED_PRECONDITION; dpqd always sets it.
  void SetShardFanOut(ShardFanOut* fan_out) { fan_out_ = fan_out; }

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
  ShardFanOut* fan_out_ = nullptr;
  bool fail_float8_for_testing_ = false;
};

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_AGGREGATE_SCANNER_H_
