// The scans of a sharded dataset that postgres_fdw cannot push down whole (sharded_scan.h): the
// per-query random choice of each person's rows (a window function), per-person pre-aggregation
// (an aggregate over a subquery) and the per-person choice of groups. postgres_fdw ships neither,
// so through the coordinator these would pull every row across. Instead dpqd sends each shard the
// same statement one table would run (BuildShardLocalScanStatement: the clamp, the per-unit
// bound, the filter, the aggregates, over the shard's own table and only the rows of committed
// loads), all shards at once, and adds their partials (AddShardPartial). Every row of a privacy
// unit sits on one shard (hash partitioning on the unit), so each shard bounds its units exactly
// as one table would, and only per-group partials travel.
//
// dpqd reaches the shards with the credentials the coordinator's user mapping holds
// (ShardStore::ConnectionUrls), in READ ONLY transactions under the deadline's statement_timeout,
// and keeps a small pool of sessions per shard. Each shard's scan time is reported to an observer
// (dpq_shard_scan_seconds{shard}).
#ifndef DPQ_SERVER_STORE_SHARD_FAN_OUT_H_
#define DPQ_SERVER_STORE_SHARD_FAN_OUT_H_

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/query/filter/ast.h"
#include "server/query/planner.h"
#include "server/store/database.h"
#include "server/store/scan_arithmetic.h"
#include "server/store/scan_result.h"
#include "server/store/shard_store.h"

namespace dpq::store {

class ShardFanOut {
 public:
  // Sessions per shard: scans beyond it wait for one (Database's pool).
  static constexpr int kSessionsPerShard = 4;

  explicit ShardFanOut(ShardStore* shards) : shards_(shards) {}

  // Called once per shard and scan, with the shard's name and the wall time of its statement
  // (from asking the pool for a session to the last row), whether it succeeded or not; on the
  // scanning thread, after every shard of that scan finished, so one scan's shards never call it
  // at once. Concurrent scans do: it must be thread-safe (dpqd's metrics are).
  void SetScanObserver(std::function<void(const std::string& shard, double seconds)> observer) {
    observer_ = std::move(observer);
  }

  // Scans every shard of `plan` (plan.shards) at once and returns the sum of their partials in
  // `*out`. A data exception on any shard comes back in `*data_error` (its SQLSTATE) with an OK
  // status, as AggregateScanner's own statement does. Any other failure of any shard fails the
  // scan (UNAVAILABLE for a shard that cannot be reached, DEADLINE_EXCEEDED at the deadline).
  absl::Status Scan(const query::ScanPlan& plan, absl::Time deadline,
                    const query::filter::TypedFilter* filter, const std::string& partition_seed,
                    ScanArithmetic arithmetic, ScanResult* out, std::string* data_error);

 private:
  // A pool unused this long is closed (its idle sessions with it), so a shard that was removed,
  // or added again elsewhere or with a new password, does not keep sessions from dpqd forever.
  static constexpr absl::Duration kIdlePoolLifetime = absl::Minutes(10);

  // The pool of sessions to the shard at `url`, opened on first use. Keyed by the whole connection
  // string, so a shard removed and added again elsewhere, or with a new password, gets a new pool.
  // Shared: a scan keeps its pools alive while an idle one is closed.
  std::shared_ptr<Database> PoolFor(const ShardUrl& url, absl::Time now);

  struct Pool {
    std::shared_ptr<Database> db;
    absl::Time last_used;
  };

  ShardStore* shards_;
  std::function<void(const std::string&, double)> observer_;
  absl::Mutex mu_;
  std::map<std::string, Pool> pools_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_SHARD_FAN_OUT_H_
