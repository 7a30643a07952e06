#include "tests/support/test_postgres.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "server/base/logging.h"
#include "server/base/status_macros.h"
#include "server/store/postgres/process.h"

namespace dpq::testing {

namespace fs = std::filesystem;

absl::StatusOr<std::unique_ptr<TempDir>> TempDir::Create(const std::string& prefix) {
  std::string templ = absl::StrCat("/tmp/", prefix, "XXXXXX");
  if (mkdtemp(templ.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("mkdtemp ", templ, " failed"));
  }
  return std::unique_ptr<TempDir>(new TempDir(templ));
}

TempDir::~TempDir() {
  std::error_code ec;
  if (getenv("DPQ_KEEP_TMP") != nullptr) return;
  fs::remove_all(path_, ec);
  if (ec) LogWarning(absl::StrCat("cannot remove ", path_, ": ", ec.message()));
}

absl::Status TempDir::WriteFile(const std::string& relative_path,
                                const std::string& contents) const {
  fs::path full = fs::path(path_) / relative_path;
  std::error_code ec;
  fs::create_directories(full.parent_path(), ec);
  std::ofstream out(full, std::ios::binary | std::ios::trunc);
  out << contents;
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", full.string()));
  return absl::OkStatus();
}

store::EmbeddedPostgresOptions TestPostgres::ServerOptions() const {
  store::EmbeddedPostgresOptions o;
  o.data_dir = dir_->path();
  o.database = options_.database;
  o.durable = false;
  // Many clusters may run side by side (ctest -j): keep each one small.
  o.settings = {{"shared_buffers", "16MB"}, {"max_connections", "30"}, {"max_wal_size", "256MB"}};
  for (const auto& s : options_.settings) o.settings.push_back(s);
  return o;
}

absl::StatusOr<std::unique_ptr<TestPostgres>> TestPostgres::Start(TestPostgresOptions options) {
  std::unique_ptr<TestPostgres> pg(new TestPostgres());
  pg->options_ = std::move(options);
  ASSIGN_OR_RETURN(pg->dir_, TempDir::Create("dpq-pg-"));
  ASSIGN_OR_RETURN(pg->server_, store::EmbeddedPostgres::Start(pg->ServerOptions()));
  return pg;
}

TestPostgres::~TestPostgres() {
  if (server_ != nullptr) {
    absl::Status s = server_->Stop(store::PostgresStopMode::kImmediate);
    if (!s.ok()) LogWarning(absl::StrCat("TestPostgres: ", s.ToString()));
    server_.reset();
  }
  dir_.reset();
}

absl::Status TestPostgres::Restart() {
  RETURN_IF_ERROR(server_->Stop());
  server_.reset();
  ASSIGN_OR_RETURN(server_, store::EmbeddedPostgres::Start(ServerOptions()));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<TestPostgres>> TestPostgres::StartStandby() const {
  std::unique_ptr<TestPostgres> standby(new TestPostgres());
  standby->options_ = options_;
  ASSIGN_OR_RETURN(standby->dir_, TempDir::Create("dpq-standby-"));
  // As root the copy is root's; EmbeddedPostgres hands a root-owned cluster directory to the
  // server's user before starting it. Its dpq.conf (socket directory) is rewritten at start, and
  // -R puts the primary's socket into primary_conninfo (postgresql.auto.conf), which it keeps.
  ASSIGN_OR_RETURN(store::ProcessResult r,
                   store::RunProcess({"/usr/lib/postgresql/15/bin/pg_basebackup", "-D",
                                      standby->dir_->path() + "/pg", "-R", "-X", "stream", "-c",
                                      "fast", "--no-sync", "-d", ConnectionUrlFor("postgres")}));
  if (r.exit_code != 0) {
    return absl::InternalError(
        absl::StrCat("pg_basebackup failed (exit ", r.exit_code, "): ", r.output));
  }
  ASSIGN_OR_RETURN(standby->server_, store::EmbeddedPostgres::Start(standby->ServerOptions()));
  return standby;
}

absl::StatusOr<std::string> TestPostgres::CreateDatabase(const std::string& name) {
  if (name.empty()) return absl::InvalidArgumentError("name must not be empty");
  for (char c : name) {
    if (!(absl::ascii_isalnum(c) || c == '_')) {
      return absl::InvalidArgumentError(absl::StrCat("name: invalid database name \"", name, "\""));
    }
  }
  RETURN_IF_ERROR(
      RunPsql(ConnectionUrlFor("postgres"), absl::StrCat("CREATE DATABASE \"", name, "\""))
          .status());
  return ConnectionUrlFor(name);
}

absl::StatusOr<std::string> TestPostgres::RunPsql(const std::string& url, const std::string& sql) {
  ASSIGN_OR_RETURN(
      store::ProcessResult r,
      store::RunProcess({"/usr/lib/postgresql/15/bin/psql", "-X", "-q", "-A", "-t", "-v",
                         "ON_ERROR_STOP=1", "-d", url, "-c", sql},
                        absl::nullopt,
                        {"PGOPTIONS=-c client_min_messages=warning", "PGCONNECT_TIMEOUT=10"}));
  if (r.exit_code != 0) {
    return absl::InternalError(
        absl::StrCat("psql failed (exit ", r.exit_code, ") running \"", sql, "\": ", r.output));
  }
  std::string out = std::move(r.output);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace dpq::testing
