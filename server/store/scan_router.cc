#include "server/store/scan_router.h"

#include <algorithm>

#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/base/database_failure.h"
#include "server/base/status_macros.h"
#include "server/store/scan_session.h"

namespace dpq::store {
namespace {

// The dataset's version as the standby has replayed it; -1 while its row has not arrived.
absl::StatusOr<int64_t> ReplayedVersion(Database& standby, int64_t dataset_id) {
  int64_t version = -1;
  absl::Status s = standby.Run("read standby: dataset version", [&](pqxx::connection& c) {
    pqxx::nontransaction tx(c);
    const pqxx::result r = tx.exec_params("SELECT version FROM datasets WHERE id = $1", dataset_id);
    version = r.empty() ? -1 : r[0][0].as<int64_t>();
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return version;
}

// A scan pool (scan_session.h) to the same server as `db`, as large as its pool.
std::unique_ptr<Database> ScanPoolBeside(const Database& db) {
  return Database::OpenDeferred(db.url(), db.pool_size(), SetUpScanSession);
}

}  // namespace

ScanRouter::ScanRouter(Database* primary) : primary_scans_(ScanPoolBeside(*primary)) {}

ScanRouter::ScanRouter(Database* primary, std::unique_ptr<Database> standby,
                       ScanRouterOptions options)
    : primary_scans_(ScanPoolBeside(*primary)),
      standby_(std::move(standby)),
      standby_scans_(ScanPoolBeside(*standby_)),
      options_(options) {}

bool ScanRouter::StandbyWorthTrying() {
  absl::MutexLock lock(&mu_);
  return absl::Now() >= down_until_;
}

void ScanRouter::NoteStandby(bool up) {
  absl::MutexLock lock(&mu_);
  stats_.standby_up = up;
  down_until_ = up ? absl::InfinitePast() : absl::Now() + options_.retry_after;
}

absl::Status ScanRouter::AwaitStandby(int64_t dataset_id, int64_t min_version,
                                      absl::Time deadline) {
  const absl::Time give_up = std::min(deadline, absl::Now() + options_.max_lag_wait);
  while (true) {
    absl::StatusOr<int64_t> version = ReplayedVersion(*standby_, dataset_id);
    if (!version.ok()) return absl::UnavailableError(version.status().message());
    if (*version >= min_version) return absl::OkStatus();
    if (absl::Now() + options_.poll_interval > give_up) {
      return absl::NotFoundError(
          absl::StrCat("dataset version ", min_version, " not replayed yet"));
    }
    absl::SleepFor(options_.poll_interval);
  }
}

absl::Status ScanRouter::Run(absl::string_view context, int64_t dataset_id, int64_t min_version,
                             absl::Time deadline,
                             const std::function<absl::Status(pqxx::connection&)>& scan) {
  return Run(context, {{dataset_id, min_version}}, deadline, scan);
}

absl::Status ScanRouter::AwaitStandby(const std::vector<std::pair<int64_t, int64_t>>& versions,
                                      absl::Time deadline) {
  for (const auto& [dataset_id, min_version] : versions) {
    RETURN_IF_ERROR(AwaitStandby(dataset_id, min_version, deadline));
  }
  return absl::OkStatus();
}

absl::Status ScanRouter::Run(absl::string_view context,
                             const std::vector<std::pair<int64_t, int64_t>>& versions,
                             absl::Time deadline,
                             const std::function<absl::Status(pqxx::connection&)>& scan) {
  if (standby_ != nullptr && StandbyWorthTrying()) {
    const absl::Status fresh = AwaitStandby(versions, deadline);
    if (fresh.ok()) {
      const absl::Status s = standby_scans_->Run(context, scan);
      // Retryable failures are all UNAVAILABLE (pqxx_status.h): the standby broke, or recovery
      // conflicts cancelled the scan on every attempt (kConflict: the standby itself is up).
      const bool unusable = s.code() == absl::StatusCode::kUnavailable;
      if (!unusable) {
        NoteStandby(true);
        absl::MutexLock lock(&mu_);
        ++stats_.scans_on_standby;
        return s;
      }
      // Broken mid-scan, or cancelled by recovery conflicts on every attempt: the primary has the
      // same rows (and more), so the scan that was paid for still runs once.
      NoteStandby(DatabaseFailureOf(s) == DatabaseFailure::kConflict);
      absl::MutexLock lock(&mu_);
      ++stats_.fallbacks_unavailable;
    } else if (fresh.code() == absl::StatusCode::kNotFound) {
      NoteStandby(true);
      absl::MutexLock lock(&mu_);
      ++stats_.fallbacks_lagging;
    } else {
      NoteStandby(false);
      absl::MutexLock lock(&mu_);
      ++stats_.fallbacks_unavailable;
    }
  }
  {
    absl::MutexLock lock(&mu_);
    ++stats_.scans_on_primary;
  }
  return primary_scans_->Run(context, scan);
}

absl::StatusOr<bool> InRecovery(Database& db) {
  bool in_recovery = false;
  absl::Status s = db.Run("pg_is_in_recovery", [&](pqxx::connection& c) {
    pqxx::nontransaction tx(c);
    in_recovery = tx.exec1("SELECT pg_is_in_recovery()")[0].as<bool>();
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return in_recovery;
}

ScanRouteStats ScanRouter::Stats() const {
  absl::MutexLock lock(&mu_);
  ScanRouteStats s = stats_;
  s.has_standby = standby_ != nullptr;
  return s;
}

}  // namespace dpq::store
