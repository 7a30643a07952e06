// Throwaway PostgreSQL clusters and temp directories for db and e2e tests.
//
//   ASSERT_OK_AND_ASSIGN(std::unique_ptr<TestPostgres> pg, TestPostgres::Start());
//   ... ApplyMigrations(pg->connection_url(), dir) ...
//   EXPECT_THAT(pg->Query("SELECT count(*) FROM t"), IsOkAndHolds("3"));
//
// Each TestPostgres is a private cluster (initdb ~1 s, start ~0.2 s) in a fresh mkdtemp directory
// under /tmp, non-durable (fsync off), reachable only through its own unix socket; the destructor
// stops it (immediate) and deletes the directory. Works as root (the cluster runs as "postgres").
// Tests that need several empty databases can share one cluster via CreateDatabase().
#ifndef DPQ_TESTS_SUPPORT_TEST_POSTGRES_H_
#define DPQ_TESTS_SUPPORT_TEST_POSTGRES_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/store/postgres/embedded_postgres.h"

namespace dpq::testing {

// A directory created with mkdtemp ("/tmp/<prefix>XXXXXX") and removed recursively on destruction
// (kept when the environment variable DPQ_KEEP_TMP is set, for debugging a failed test).
class TempDir {
 public:
  static absl::StatusOr<std::unique_ptr<TempDir>> Create(const std::string& prefix = "dpq-test-");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  // Writes `contents` to <path>/<relative_path>, creating parent directories.
  absl::Status WriteFile(const std::string& relative_path, const std::string& contents) const;

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

struct TestPostgresOptions {
  std::string database = "dpq";
  std::vector<std::pair<std::string, std::string>> settings;
};

class TestPostgres {
 public:
  static absl::StatusOr<std::unique_ptr<TestPostgres>> Start(TestPostgresOptions options = {});
  ~TestPostgres();  // immediate stop, then removes the directory
  TestPostgres(const TestPostgres&) = delete;
  TestPostgres& operator=(const TestPostgres&) = delete;

  // libpq URI of the test database (options.database).
  std::string connection_url() const { return server_->connection_url(); }
  std::string ConnectionUrlFor(const std::string& database) const {
    return server_->ConnectionUrlFor(database);
  }
  const std::string& data_dir() const { return dir_->path(); }
  store::EmbeddedPostgres& server() { return *server_; }

  // Creates an empty database `name` (letters, digits, '_') and returns its URL.
  absl::StatusOr<std::string> CreateDatabase(const std::string& name);
  // Stops the cluster (fast, a clean shutdown) and starts it again on the same directory.
  absl::Status Restart();
  // A streaming-replication hot standby of this cluster in its own directory and socket:
  // pg_basebackup -R (base copy, WAL streamed during the copy, standby.signal and primary_conninfo
  // written), then started; it follows this cluster until it is destroyed. Stop() on its server()
  // and Restart() work as for a primary.
  absl::StatusOr<std::unique_ptr<TestPostgres>> StartStandby() const;
  // Runs `sql` on the test database through psql; see RunPsql.
  absl::StatusOr<std::string> Query(const std::string& sql) const {
    return RunPsql(connection_url(), sql);
  }

  // Runs `sql` with psql against `url` (ON_ERROR_STOP, unaligned, tuples only: one row per line,
  // columns separated by '|'), returning stdout without the trailing newline. INTERNAL with psql's
  // output when it fails. Lets tests inspect the database without including libpqxx.
  static absl::StatusOr<std::string> RunPsql(const std::string& url, const std::string& sql);

 private:
  TestPostgres() = default;
  store::EmbeddedPostgresOptions ServerOptions() const;

  TestPostgresOptions options_;
  std::unique_ptr<TempDir> dir_;
  std::unique_ptr<store::EmbeddedPostgres> server_;
};

}  // namespace dpq::testing

#endif  // DPQ_TESTS_SUPPORT_TEST_POSTGRES_H_
