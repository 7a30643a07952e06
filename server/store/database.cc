#include "server/store/database.h"

#include <poll.h>

#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/base/database_failure.h"
#include "server/store/postgres/pqxx_status.h"

namespace dpq::store {

std::string ExactDouble(double v) { return absl::StrFormat("%.17g", v); }

Database::Database(std::string url, int pool_size, SessionSetup session_setup)
    : url_(std::move(url)), pool_size_(pool_size), session_setup_(std::move(session_setup)) {}

Database::~Database() = default;

std::unique_ptr<Database> Database::OpenDeferred(std::string url, int pool_size,
                                                 SessionSetup session_setup) {
  return std::unique_ptr<Database>(
      new Database(std::move(url), pool_size < 1 ? 1 : pool_size, std::move(session_setup)));
}

PoolStats operator+(const PoolStats& a, const PoolStats& b) {
  return PoolStats{a.opened + b.opened,
                   a.connect_failures + b.connect_failures,
                   a.closed_after_error + b.closed_after_error,
                   a.closed_by_server + b.closed_by_server,
                   a.in_use + b.in_use,
                   a.idle + b.idle};
}

absl::StatusOr<std::unique_ptr<Database>> Database::Open(std::string url, int pool_size) {
  std::unique_ptr<Database> db = OpenDeferred(std::move(url), pool_size);
  auto conn = db->Acquire();
  if (!conn.ok()) return conn.status();
  db->Release(*std::move(conn));
  return db;
}

namespace {

// An idle connection has no query outstanding, so the server sends nothing on it unless it is
// going away: a backend that is terminated (pg_terminate_backend, a fast or immediate shutdown)
// sends a FATAL ErrorResponse and closes the socket. Readable (or hung up) therefore means dead.
// One poll() with a zero timeout; it cannot see a peer that vanished silently (then the request
// fails with UNAVAILABLE as before).
bool ClosedByServer(const pqxx::connection& conn) {
  const int fd = conn.sock();
  if (fd < 0) return true;
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) != 0;  // > 0: readable/hung up; < 0: the descriptor is unusable
}

// libpqxx 6.4 reopens a broken connection by itself at its next use ("reactivation", and the
// two retries of a transaction's BEGIN), so the statements of one unit of work could run on two
// server sessions, the later ones outside the transaction the earlier ones began. Inhibited, a
// broken connection throws pqxx::broken_connection and RunWithAttempts discards it: only this
// pool opens sessions. The setter is marked deprecated in 6.4 but is the only way to say this.
void InhibitReactivation(pqxx::connection& conn) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  conn.inhibit_reactivation(true);
#pragma GCC diagnostic pop
}

// What query results may depend on, fixed on every session whatever the server's configuration, the
// role's or database's ALTER ... SET, or the URL's options say. Doubles print exactly
// (extra_float_digits = 3: shortest round-trip text, so `x::text` is injective on doubles and group
// keys compared as text in the bounding window and in the grouping agree); dates and times in ISO
// and UTC; unqualified names resolve in public only; backslashes in literals are literal; no
// statement, lock or idle timeout but the ones a caller sets (the scan's deadline, scan_session.h).
// The timeouts come first: PostgreSQL applies statement_timeout to each statement of this string
// in turn, so a tiny timeout from the URL could otherwise cancel the pinning itself (it did, under
// ASan, with statement_timeout = 1 ms).
constexpr char kPinnedSessionSettings[] =
    "SET statement_timeout = 0; SET lock_timeout = 0; SET idle_in_transaction_session_timeout = 0; "
    "SET extra_float_digits = 3; SET DateStyle = 'ISO, YMD'; SET IntervalStyle = 'postgres'; "
    "SET TimeZone = 'UTC'; SET search_path = public; SET standard_conforming_strings = on; "
    "SET client_encoding = 'UTF8'; SET bytea_output = 'hex'";

void PinSessionSettings(pqxx::connection& conn) {
  pqxx::nontransaction tx(conn);
  tx.exec0(kPinnedSessionSettings);
}

}  // namespace

absl::StatusOr<std::unique_ptr<pqxx::connection>> Database::Acquire() {
  while (true) {
    std::unique_ptr<pqxx::connection> idle;
    {
      absl::MutexLock lock(&mu_);
      auto available = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return !idle_.empty() || open_ < pool_size_;
      };
      mu_.Await(absl::Condition(&available));
      if (!idle_.empty()) {
        idle = std::move(idle_.back());
        idle_.pop_back();
      } else {
        ++open_;  // reserve a slot, connect outside the lock
      }
    }
    if (idle == nullptr) break;
    // Checked outside the lock: a connection the server closed while it sat in the pool (a
    // PostgreSQL restart) is dropped here instead of failing the caller's request.
    if (!ClosedByServer(*idle)) return idle;
    idle.reset();
    absl::MutexLock lock(&mu_);
    --open_;
    ++counts_.closed_by_server;
  }
  try {
    auto conn = std::make_unique<pqxx::connection>(url_);
    InhibitReactivation(*conn);
    PinSessionSettings(*conn);
    if (session_setup_) session_setup_(*conn);
    absl::MutexLock lock(&mu_);
    ++counts_.opened;
    return conn;
  } catch (const std::exception& e) {
    absl::MutexLock lock(&mu_);
    --open_;
    ++counts_.connect_failures;
    // libpq's text names the server's host and port: for dpqd's log and admins only (the class
    // gives analysts a fixed message, api/status_mapping.h).
    return RetryableDatabaseError(DatabaseFailure::kUnavailable,
                                  absl::StrCat("cannot connect to the database: ", e.what()));
  }
}

void Database::Release(std::unique_ptr<pqxx::connection> conn) {
  absl::MutexLock lock(&mu_);
  if (conn != nullptr && conn->is_open()) {
    idle_.push_back(std::move(conn));
    return;
  }
  --open_;
  if (conn == nullptr) {
    ++counts_.closed_after_error;  // RunWithAttempts closed it: its work threw
  } else {
    ++counts_.closed_by_server;
  }
}

PoolStats Database::Stats() const {
  absl::MutexLock lock(&mu_);
  PoolStats s = counts_;
  s.idle = static_cast<int>(idle_.size());
  s.in_use = open_ - s.idle;
  return s;
}

absl::Status Database::RunWithAttempts(absl::string_view context,
                                       const std::function<absl::Status(pqxx::connection&)>& fn,
                                       int attempts) {
  absl::Status status;
  for (int attempt = 1; attempt <= attempts; ++attempt) {
    auto conn = Acquire();
    if (!conn.ok()) return conn.status();
    try {
      status = fn(**conn);
    } catch (const std::exception& e) {
      status = StatusFromPqxx(e, context);
      // Closed, not pooled (Release() frees the slot): after a throw the session's state is
      // unknown. libpqxx 6.4 abandons a transaction without ROLLBACK when its start command
      // ("BEGIN; SET TRANSACTION ...") throws after BEGIN took effect, and an interrupted COPY
      // leaves the protocol mid-stream; pooled, such a session fails the next caller's BEGIN
      // with 25P02. Reconnecting costs one local connection setup, and only after an error.
      conn->reset();
    }
    Release(*std::move(conn));
    // A serialization failure or deadlock rolled the whole unit back: running it again is safe.
    // Nothing else is retried here: after a broken connection or a commit in doubt only the
    // caller's retry with its request id can tell what happened.
    if (DatabaseFailureOf(status) != DatabaseFailure::kConflict) break;
  }
  return status;
}

}  // namespace dpq::store
