#include "server/store/postgres/migrator.h"

#include <pqxx/pqxx>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "server/base/database_failure.h"
#include "server/base/logging.h"
#include "server/base/status_macros.h"
#include "server/store/postgres/pqxx_status.h"

namespace dpq::store {
namespace {

namespace fs = std::filesystem;

// "NNNN_verb_noun.sql": returns the version, or 0 when the name does not match.
int ParseMigrationName(const std::string& name) {
  constexpr absl::string_view kSuffix = ".sql";
  if (name.size() < 4 + 1 + 1 + kSuffix.size() || !absl::EndsWith(name, kSuffix) ||
      name[4] != '_') {
    return 0;
  }
  for (size_t i = 0; i < 4; ++i) {
    if (!absl::ascii_isdigit(name[i])) return 0;
  }
  for (size_t i = 5; i < name.size() - kSuffix.size(); ++i) {
    char c = name[i];
    if (!(absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '_')) return 0;
  }
  int version = 0;
  if (!absl::SimpleAtoi(absl::string_view(name).substr(0, 4), &version)) return 0;
  return version;
}

constexpr char kCreateTable[] =
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    "  version integer PRIMARY KEY,"
    "  name text NOT NULL,"
    "  applied_at timestamptz NOT NULL DEFAULT now())";

}  // namespace

absl::StatusOr<std::vector<MigrationFile>> ListMigrations(const std::string& migrations_dir) {
  std::error_code ec;
  if (!fs::is_directory(migrations_dir, ec)) {
    return absl::NotFoundError(
        absl::StrCat("migrations directory ", migrations_dir, " does not exist"));
  }
  std::vector<MigrationFile> files;
  for (auto it = fs::directory_iterator(migrations_dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const std::string name = it->path().filename().string();
    if (!absl::EndsWith(name, ".sql")) continue;
    const int version = ParseMigrationName(name);
    if (version == 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "migration file ", name, " in ", migrations_dir,
          " is not named NNNN_verb_noun.sql (4 digits from 0001, lowercase letters, digits, '_')"));
    }
    files.push_back({version, name, it->path().string()});
  }
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot list migrations directory ", migrations_dir, ": ", ec.message()));
  }
  std::sort(files.begin(), files.end(),
            [](const MigrationFile& a, const MigrationFile& b) { return a.version < b.version; });
  for (size_t i = 0; i < files.size(); ++i) {
    const int expected = static_cast<int>(i) + 1;
    if (files[i].version != expected) {
      if (i > 0 && files[i].version == files[i - 1].version) {
        return absl::FailedPreconditionError(absl::StrCat("migrations ", files[i - 1].name, " and ",
                                                          files[i].name, " have the same version"));
      }
      return absl::FailedPreconditionError(absl::StrCat(
          "migrations in ", migrations_dir, " must be numbered contiguously from 0001; version ",
          expected, " is missing (next file: ", files[i].name, ")"));
    }
  }
  return files;
}

absl::StatusOr<std::vector<Migration>> ReadMigrations(const std::string& migrations_dir) {
  ASSIGN_OR_RETURN(std::vector<MigrationFile> files, ListMigrations(migrations_dir));
  std::vector<Migration> migrations;
  for (const MigrationFile& file : files) {
    std::ifstream in(file.path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    if (!in)
      return absl::FailedPreconditionError(absl::StrCat("cannot read migration ", file.path));
    migrations.push_back({file.version, file.name, ss.str()});
  }
  return migrations;
}

absl::StatusOr<MigrationReport> ApplyMigrations(const std::string& connection_url,
                                                const std::string& migrations_dir) {
  ASSIGN_OR_RETURN(std::vector<Migration> migrations, ReadMigrations(migrations_dir));
  return ApplyMigrations(connection_url, migrations);
}

absl::StatusOr<MigrationReport> ApplyMigrations(const std::string& connection_url,
                                                const std::vector<Migration>& files) {
  for (size_t i = 0; i < files.size(); ++i) {
    if (files[i].version != static_cast<int>(i) + 1) {
      return absl::FailedPreconditionError(
          absl::StrCat("migrations must be numbered contiguously from 0001; ", files[i].name,
                       " is at position ", i + 1));
    }
  }
  MigrationReport report;
  report.binary_version = files.empty() ? 0 : files.back().version;
  std::string context = "connecting to the database to apply migrations";
  bool applying_file = false;
  try {
    pqxx::connection conn(connection_url);
    {
      pqxx::nontransaction session(conn);
      session.exec("SET client_min_messages = warning");  // no NOTICE spam on stderr
    }
    context = "creating table schema_migrations";
    {
      pqxx::work tx(conn);
      tx.exec_params("SELECT pg_advisory_xact_lock($1)", kMigrationLockKey);
      tx.exec(kCreateTable);
      tx.commit();
    }
    for (;;) {
      context = "reading schema_migrations";
      applying_file = false;
      pqxx::work tx(conn);
      // Held until this transaction ends: a concurrent migrator waits here and then sees what we
      // committed (READ COMMITTED takes a new snapshot per statement).
      tx.exec_params("SELECT pg_advisory_xact_lock($1)", kMigrationLockKey);
      pqxx::result rows = tx.exec("SELECT version, name FROM schema_migrations ORDER BY version");
      std::map<int, std::string> applied;
      for (const auto& row : rows) applied[row[0].as<int>()] = row[1].as<std::string>();
      const int db_version = applied.empty() ? 0 : applied.rbegin()->first;
      report.schema_version = db_version;
      if (db_version > report.binary_version) {
        return absl::FailedPreconditionError(absl::StrCat(
            "database schema version ", db_version, " is newer than this binary (knows ",
            report.binary_version, "); upgrade dpqd"));
      }
      size_t next = 0;
      for (; next < files.size(); ++next) {
        auto it = applied.find(files[next].version);
        if (it == applied.end()) break;
        if (it->second != files[next].name) {
          LogWarning(absl::StrCat("migration ", files[next].version, " was applied as ", it->second,
                                  " but the file is now ", files[next].name));
        }
      }
      if (next == files.size()) return report;  // up to date; tx rolls back (it changed nothing)

      context = absl::StrCat("applying migration ", files[next].name);
      applying_file = true;
      if (!absl::StripAsciiWhitespace(files[next].sql).empty()) tx.exec(files[next].sql);
      tx.exec_params("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
                     files[next].version, files[next].name);
      tx.commit();
      ++report.applied;
      report.schema_version = std::max(db_version, files[next].version);
      LogInfo(absl::StrCat("applied migration ", files[next].name));
    }
  } catch (const std::exception& e) {
    absl::Status status = StatusFromPqxx(e, context);
    // Whatever went wrong inside a migration file (a constraint, a deadlock, ...) is a broken
    // migration, not something the caller should retry; only a lost connection stays UNAVAILABLE.
    const absl::optional<DatabaseFailure> failure = DatabaseFailureOf(status);
    const bool connection_lost =
        failure == DatabaseFailure::kUnavailable || failure == DatabaseFailure::kCommitInDoubt;
    if (applying_file && !connection_lost) {
      return absl::InternalError(status.message());
    }
    return status;
  }
}

}  // namespace dpq::store
