// A small pool of libpqxx connections. Every store class runs its SQL through Database::Run, which
// is the one place where libpqxx exceptions become absl::Status (pqxx_status.h); nothing thrown by
// libpqxx crosses into the layers above.
#ifndef DPQ_SERVER_STORE_DATABASE_H_
#define DPQ_SERVER_STORE_DATABASE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

// Forward declaration matching libpqxx 6.4's own, so this header does not pull <pqxx> into
// the layers above (only store links libpqxx).
namespace pqxx {
class connect_direct;
template <typename CONNECTPOLICY>
class basic_connection_base;
using connection = basic_connection_base<connect_direct>;
}  // namespace pqxx

namespace dpq::store {

// What the pool has done since it was opened (monotone counters) and holds now (gauges), for
// dpqd's metrics: a PostgreSQL restart or a burst of errors shows up as connections closed and
// opened again.
struct PoolStats {
  int64_t opened = 0;              // sessions established
  int64_t connect_failures = 0;    // attempts to establish one that failed (UNAVAILABLE)
  int64_t closed_after_error = 0;  // closed because the work on them threw
  int64_t closed_by_server = 0;    // found closed by the server while idle, or broken at release
  int in_use = 0;                  // lent out to work right now (or being established for it)
  int idle = 0;                    // sessions waiting in the pool
};

class Database {
 public:
  // Connects once eagerly (UNAVAILABLE if the server cannot be reached); further connections are
  // opened on demand up to `pool_size`.
  static absl::StatusOr<std::unique_ptr<Database>> Open(std::string url, int pool_size);
  // As Open, without the eager connection: for a server that may be down when dpqd starts (a read
  // standby, store/scan_router.h); the first Run connects, and fails with UNAVAILABLE if it cannot.
  // `session_setup` (may be null) runs on every new session after the pinned settings, outside
  // any transaction: a pool whose sessions all hold one role and mode (the scan pool,
  // scan_session.h). A throw from it fails the connection attempt (UNAVAILABLE).
  using SessionSetup = std::function<void(pqxx::connection&)>;
  static std::unique_ptr<Database> OpenDeferred(std::string url, int pool_size,
                                                SessionSetup session_setup = nullptr);
  ~Database();

  // Runs `fn` on a pooled connection. Exceptions thrown inside are mapped to a Status naming
  // `context`, and the connection they came from is closed, never pooled again: the next call
  // gets a fresh session. libpqxx never reconnects a connection by itself (reactivation is
  // inhibited), so all of one `fn`'s statements run on one server session. An idle connection
  // the server closed while it was pooled (a PostgreSQL restart) is noticed before use and
  // replaced, so it does not fail a request. Transactions that fail
  // with a serialization failure or deadlock (DatabaseFailure::kConflict) are retried up to
  // `kMaxAttempts` times, then reported as UNAVAILABLE; a broken connection and a commit in doubt
  // are never retried (UNAVAILABLE at once: the caller retries with its request id).
  absl::Status Run(absl::string_view context,
                   const std::function<absl::Status(pqxx::connection&)>& fn) {
    return RunWithAttempts(context, fn, kMaxAttempts);
  }
  // As Run, but never retried: for work that consumes a stream and so cannot be replayed.
  absl::Status RunOnce(absl::string_view context,
                       const std::function<absl::Status(pqxx::connection&)>& fn) {
    return RunWithAttempts(context, fn, 1);
  }

  const std::string& url() const { return url_; }
  int pool_size() const { return pool_size_; }

  PoolStats Stats() const;

  static constexpr int kMaxAttempts = 3;

 private:
  Database(std::string url, int pool_size, SessionSetup session_setup);
  absl::Status RunWithAttempts(absl::string_view context,
                               const std::function<absl::Status(pqxx::connection&)>& fn,
                               int attempts);
  absl::StatusOr<std::unique_ptr<pqxx::connection>> Acquire();
  // Pools `conn`, or frees its slot: null means RunWithAttempts closed it after its work threw.
  void Release(std::unique_ptr<pqxx::connection> conn);

  const std::string url_;
  const int pool_size_;
  const SessionSetup session_setup_;
  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<pqxx::connection>> idle_ ABSL_GUARDED_BY(mu_);
  int open_ ABSL_GUARDED_BY(mu_) = 0;      // established or being established, lent out or idle
  PoolStats counts_ ABSL_GUARDED_BY(mu_);  // the counters only; Stats() fills in the gauges
};

// The sum of two pools' figures (dpqd's metrics count every session it holds to the primary).
PoolStats operator+(const PoolStats& a, const PoolStats& b);

// Formats a double so that it parses back to the same value (17 significant digits).
std::string ExactDouble(double v);

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_DATABASE_H_
