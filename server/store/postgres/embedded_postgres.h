// A private PostgreSQL cluster that dpqd creates and runs under its data directory when no
// --database-url is given (and that tests start by the dozen through tests/support/test_postgres.h).
#ifndef DPQ_SERVER_STORE_POSTGRES_EMBEDDED_POSTGRES_H_
#define DPQ_SERVER_STORE_POSTGRES_EMBEDDED_POSTGRES_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/optional.h"
#include "server/store/postgres/process.h"

namespace dpq::store {

struct EmbeddedPostgresOptions {
  // dpq's data directory (created if missing). The cluster lives in <data_dir>/pg, its unix socket
  // in <data_dir>/run, its server log in <data_dir>/log/postgres.log. Must be short enough for a
  // unix socket path (the absolute "<data_dir>/run/.s.PGSQL.5432" at most 107 bytes) and must not
  // contain quotes, commas or control characters.
  std::string data_dir;
  std::string bin_dir = "/usr/lib/postgresql/15/bin";
  std::string database = "dpq";  // created on first start
  // false (tests only): fsync=off, synchronous_commit=off, full_page_writes=off, initdb --no-sync.
  bool durable = true;
  // Extra server settings (name, value), applied on every start after dpq's defaults.
  std::vector<std::pair<std::string, std::string>> settings;
  // Seconds pg_ctl waits for start-up / shutdown.
  int timeout_seconds = 60;
  // When running as root: the unprivileged system user that owns and runs the cluster. A cluster
  // that already exists and is owned by another non-root user is run as that owner instead.
  std::string system_user = "postgres";
};

enum class PostgresStopMode { kFast, kImmediate };

class EmbeddedPostgres {
 public:
  // initdb on first run (superuser "postgres", auth trust, UTF8, locale C.UTF-8), then
  // pg_ctl start -w, listening only on a unix socket in <data_dir>/run (listen_addresses=''), and
  // creates `database` if it does not exist. As root, initdb/postgres run as `system_user` after the
  // directories are chown-ed to it (and <data_dir> is made group-traversable for it); as an
  // ordinary user they run directly. A stale postmaster.pid left by a crash (dead or zombie
  // process, or a reused pid) is removed; a postmaster of this cluster that is still running
  // (e.g. dpqd was killed) is stopped and started again with the current settings.
  // Errors: INVALID_ARGUMENT for a bad option; FAILED_PRECONDITION when the cluster cannot be
  // created or started (the message quotes the tail of initdb's output or of the server log), or
  // when, as root, the system user is missing or cannot reach <data_dir>; UNAVAILABLE/INTERNAL
  // when the database cannot be created.
  static absl::StatusOr<std::unique_ptr<EmbeddedPostgres>> Start(EmbeddedPostgresOptions options);

  EmbeddedPostgres(const EmbeddedPostgres&) = delete;
  EmbeddedPostgres& operator=(const EmbeddedPostgres&) = delete;
  ~EmbeddedPostgres();  // Stop() (fast) if still running; errors are logged

  // pg_ctl stop -w (-m fast by default). Idempotent: OK when already stopped, also when the
  // postmaster died or was replaced by another one (which is left alone). FAILED_PRECONDITION
  // with pg_ctl's output when the server does not stop.
  absl::Status Stop(PostgresStopMode mode = PostgresStopMode::kFast);
  bool running() const { return running_; }

  // libpq URI for `database`: "postgresql:///dpq?host=/abs/data/run&port=5432&user=postgres" (the
  // port only names the socket file; it is explicit so that a PGPORT in the environment is ignored).
  std::string connection_url() const { return ConnectionUrlFor(options_.database); }
  // The same for another database of this cluster (e.g. "postgres").
  std::string ConnectionUrlFor(const std::string& database) const;
  std::string socket_dir() const { return socket_dir_; }
  std::string pg_data_dir() const { return pg_dir_; }
  std::string log_file() const { return log_file_; }
  // The postmaster's pid as recorded in postmaster.pid (for diagnostics and crash tests).
  absl::StatusOr<pid_t> postmaster_pid() const;

 private:
  explicit EmbeddedPostgres(EmbeddedPostgresOptions options) : options_(std::move(options)) {}

  absl::Status Prepare();
  // Prepare's steps: the options' own checks; data_dir_ and the paths under it; as root, the user
  // PostgreSQL runs as (run_as_) and that user's access to data_dir_.
  absl::Status ValidateOptions() const;
  absl::Status ResolveDataDir();
  absl::Status ChooseRunAsUser();
  absl::Status MakeDataDirReachable();
  absl::Status InitDbIfNeeded();
  absl::Status WriteConfig();
  absl::Status ClearStaleLock();
  absl::Status ChownToRunAs(const std::string& path) const;
  absl::Status StartServer();
  absl::Status CreateDatabaseIfMissing();
  absl::StatusOr<ProcessResult> Run(const std::vector<std::string>& argv) const;

  EmbeddedPostgresOptions options_;
  std::string data_dir_;              // absolute
  std::string pg_dir_;                // <data_dir>/pg
  std::string socket_dir_;            // <data_dir>/run
  std::string log_dir_;               // <data_dir>/log
  std::string log_file_;              // <data_dir>/log/postgres.log
  absl::optional<RunAsUser> run_as_;  // set when we are root
  bool running_ = false;
  pid_t postmaster_pid_ = 0;  // the postmaster we started; Stop() leaves any other alone
};

// Percent-encodes `value` for use inside a libpq URI (RFC 3986 unreserved characters and '/' kept).
std::string PercentEncodeUriComponent(const std::string& value);

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_POSTGRES_EMBEDDED_POSTGRES_H_
