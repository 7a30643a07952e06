// Forward-only schema migrations, applied by dpqd at start-up.
#ifndef DPQ_SERVER_STORE_POSTGRES_MIGRATOR_H_
#define DPQ_SERVER_STORE_POSTGRES_MIGRATOR_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace dpq::store {

struct MigrationReport {
  int applied = 0;         // migrations applied by this call
  int schema_version = 0;  // highest version recorded in the database afterwards
  int binary_version = 0;  // highest version among the files
};

struct MigrationFile {
  int version = 0;   // NNNN
  std::string name;  // file name, e.g. "0001_create_datasets.sql"
  std::string path;  // full path
};

// One migration with its SQL, read from a directory or built into the binary.
struct Migration {
  int version = 0;
  std::string name;
  std::string sql;
};

// Lists `migrations_dir`: every file named NNNN_verb_noun.sql (4 digits, then lowercase letters,
// digits and underscores) sorted by version. Other files (README, ...) are ignored.
// NOT_FOUND when the directory does not exist; FAILED_PRECONDITION for a *.sql file with another
// name, a duplicate version, or versions that are not contiguous from 0001.
absl::StatusOr<std::vector<MigrationFile>> ListMigrations(const std::string& migrations_dir);

// Applies the migrations of `migrations_dir` (see ListMigrations) that are not yet recorded in
// schema_migrations(version int primary key, name text, applied_at timestamptz), in order, each in
// its own transaction together with its schema_migrations row; a migration file must therefore
// not contain BEGIN/COMMIT or statements that cannot run in a transaction block (CREATE INDEX
// CONCURRENTLY, ...). Each transaction first takes pg_advisory_xact_lock(kMigrationLockKey), so
// concurrent callers (two dpqd starting together) apply every migration exactly once.
// Errors:
//   FAILED_PRECONDITION "database schema version N is newer than this binary (knows M); upgrade
//     dpqd" when the database has a version above the newest file (nothing is applied);
//   INTERNAL naming the file when a migration fails (nothing of that migration is applied;
//     earlier ones in this call stay applied);
//   UNAVAILABLE when the database cannot be reached; errors of ListMigrations.
// libpqxx exceptions never escape.
absl::StatusOr<MigrationReport> ApplyMigrations(const std::string& connection_url,
                                                const std::string& migrations_dir);

// The same, for migrations already in memory (e.g. EmbeddedMigrations()), sorted by version and
// numbered contiguously from 1 (FAILED_PRECONDITION otherwise).
absl::StatusOr<MigrationReport> ApplyMigrations(const std::string& connection_url,
                                                const std::vector<Migration>& migrations);

// Reads the migrations of `migrations_dir` (see ListMigrations) with their SQL.
absl::StatusOr<std::vector<Migration>> ReadMigrations(const std::string& migrations_dir);

// The repository's migrations/ as of the build, compiled into the binary (a generated source), so
// that an installed or copied dpqd needs no migrations directory.
const std::vector<Migration>& EmbeddedMigrations();

// Key of the transaction-scoped advisory lock that serialises migrators ("dpq_migr" in ASCII).
inline constexpr long long kMigrationLockKey = 0x6470715f6d696772LL;

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_POSTGRES_MIGRATOR_H_
