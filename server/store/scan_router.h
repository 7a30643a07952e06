// Where an aggregate scan runs: on a streaming-replication hot standby when dpqd has one
// (--read-database-url) and it has replayed the dataset version the query was planned on, else on
// the primary. Every debit, audit row, release and admin write stays on the primary; only the
// READ ONLY scans of raw rows move (docs/scaling.md).
//
// Replica lag, honestly: a standby replays the primary's WAL in commit order, and a dataset's
// version is bumped in the same transaction that creates or appends its rows (dataset_store.h).
// So a standby whose `datasets` row shows version >= v has replayed every row of version v, and
// keeps them: replay only moves forward. The router reads that row on the standby before the
// scan, waits for it up to `max_lag_wait` (bounded by the query's deadline), and otherwise scans
// on the primary. A standby that cannot be reached, or that cancels the scan (a recovery conflict
// that the pool's retries did not outlast), also sends the scan to the primary, and is not tried
// again for `retry_after`, so a dead standby costs one failed connection per interval, not one
// per query.
//
// What this lets an analyst learn for free (docs/threat-model.md): where a scan ran and how long
// the router waited depend on when datasets were loaded and on the standby's health, never on
// row values; the answer is the same exact statistic either way, then noised as before.
#ifndef DPQ_SERVER_STORE_SCAN_ROUTER_H_
#define DPQ_SERVER_STORE_SCAN_ROUTER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/store/database.h"

namespace dpq::store {

// Monotone counters for dpqd's metrics (dpq_scans_total, dpq_read_standby_fallbacks_total).
struct ScanRouteStats {
  bool has_standby = false;
  bool standby_up = false;  // the last attempt reached it (false before the first)
  int64_t scans_on_standby = 0;
  int64_t scans_on_primary = 0;
  int64_t fallbacks_lagging = 0;      // the standby had not replayed the dataset in time
  int64_t fallbacks_unavailable = 0;  // unreachable, or the scan on it failed (recovery conflict)
};

struct ScanRouterOptions {
  absl::Duration max_lag_wait = absl::Milliseconds(500);
  absl::Duration poll_interval = absl::Milliseconds(10);
  absl::Duration retry_after = absl::Seconds(5);
};

class ScanRouter {
 public:
  // Without a standby every scan runs on the server behind `primary`. Scans never run on
  // `primary`'s own sessions: the router opens a scan pool of the same size and URL, whose
  // sessions hold the scan role and read-only mode from their start (scan_session.h), and one on
  // the standby; `standby` itself reads the replayed versions.
  explicit ScanRouter(Database* primary);
  ScanRouter(Database* primary, std::unique_ptr<Database> standby, ScanRouterOptions options);

  // Runs `scan` (a retryable unit of work, as for Database::Run) on the standby when it has
  // replayed `dataset_id` at `min_version` or later, else on the primary. Errors are those of the
  // run that counted: a scan that failed on the primary, or DEADLINE_EXCEEDED.
  absl::Status Run(absl::string_view context, int64_t dataset_id, int64_t min_version,
                   absl::Time deadline, const std::function<absl::Status(pqxx::connection&)>& scan);

  // The same for a scan of several tables (a join): the standby only when it has replayed every
  // (dataset id, version) of `versions`.
  absl::Status Run(absl::string_view context,
                   const std::vector<std::pair<int64_t, int64_t>>& versions, absl::Time deadline,
                   const std::function<absl::Status(pqxx::connection&)>& scan);

  ScanRouteStats Stats() const;
  // The primary's scan pool (dpqd's metrics count it with the main pool: sessions to the primary).
  PoolStats PrimaryScanPoolStats() const { return primary_scans_->Stats(); }

 private:
  // OK: the standby serves this scan. NOT_FOUND: lagging past the wait. UNAVAILABLE: unusable.
  absl::Status AwaitStandby(int64_t dataset_id, int64_t min_version, absl::Time deadline);
  absl::Status AwaitStandby(const std::vector<std::pair<int64_t, int64_t>>& versions,
                            absl::Time deadline);
  bool StandbyWorthTrying();
  void NoteStandby(bool up);

  std::unique_ptr<Database> primary_scans_;
  std::unique_ptr<Database> standby_;        // the replayed versions (dpqd's role)
  std::unique_ptr<Database> standby_scans_;  // the scans (the scan role)
  ScanRouterOptions options_;
  mutable absl::Mutex mu_;
  ScanRouteStats stats_ ABSL_GUARDED_BY(mu_);
  absl::Time down_until_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

// True when the server behind `db` is replaying WAL (a hot standby); for dpqd --check-config.
absl::StatusOr<bool> InRecovery(Database& db);

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_SCAN_ROUTER_H_
