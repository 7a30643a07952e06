#include "server/store/postgres/migrator.h"

#include <memory>
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/cluster_suite.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_postgres.h"

namespace dpq::store {
namespace {

using ::dpq::testing::IsOk;
using ::dpq::testing::IsOkAndHolds;
using ::dpq::testing::StatusIs;
using ::dpq::testing::TempDir;
using ::dpq::testing::TestPostgres;
using ::testing::AllOf;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::Not;

MATCHER_P3(ReportIs, applied, schema_version, binary_version, "") {
  return ExplainMatchResult(
      AllOf(Field("applied", &MigrationReport::applied, applied),
            Field("schema_version", &MigrationReport::schema_version, schema_version),
            Field("binary_version", &MigrationReport::binary_version, binary_version)),
      arg, result_listener);
}

// One cluster for the whole suite; every test works in its own fresh database.
class MigratorTest : public ::dpq::testing::ClusterSuite {
 protected:
  void SetUp() override {
    ASSERT_NE(pg_, nullptr);
    static int counter = 0;
    ASSERT_OK_AND_ASSIGN(url_, pg_->CreateDatabase(absl::StrCat("migr_", ++counter)));
    ASSERT_OK_AND_ASSIGN(dir_, TempDir::Create("dpq-migrations-"));
  }

  void Write(const std::string& name, const std::string& sql) {
    ASSERT_OK(dir_->WriteFile(name, sql));
  }

  // Three migrations that build on each other.
  void WriteThree() {
    Write("0001_create_things.sql",
          "CREATE TABLE things (id bigint PRIMARY KEY, label text NOT NULL);");
    Write("0002_add_things_weight.sql",
          "ALTER TABLE things ADD COLUMN weight double precision;\n"
          "CREATE INDEX things_label ON things (label);");
    Write("0003_create_others.sql", "CREATE TABLE others (id bigint REFERENCES things (id));");
  }

  std::string Sql(const std::string& sql) {
    auto r = TestPostgres::RunPsql(url_, sql);
    EXPECT_THAT(r, IsOk());
    return r.ok() ? *r : "";
  }

  std::string url_;
  std::unique_ptr<TempDir> dir_;
};

TEST_F(MigratorTest, FreshDatabaseAppliesAllInOrder) {
  WriteThree();
  Write("README.md", "not a migration");
  EXPECT_THAT(ApplyMigrations(url_, dir_->path()), IsOkAndHolds(ReportIs(3, 3, 3)));
  EXPECT_EQ(Sql("SELECT version, name FROM schema_migrations ORDER BY version"),
            "1|0001_create_things.sql\n2|0002_add_things_weight.sql\n3|0003_create_others.sql");
  EXPECT_EQ(Sql("SELECT count(*) FROM others"), "0");
  EXPECT_EQ(Sql("SELECT count(*) FROM schema_migrations WHERE applied_at IS NULL"), "0");
}

TEST_F(MigratorTest, SecondRunAppliesNothing) {
  WriteThree();
  ASSERT_THAT(ApplyMigrations(url_, dir_->path()), IsOkAndHolds(ReportIs(3, 3, 3)));
  EXPECT_THAT(ApplyMigrations(url_, dir_->path()), IsOkAndHolds(ReportIs(0, 3, 3)));
  EXPECT_EQ(Sql("SELECT count(*) FROM schema_migrations"), "3");
}

TEST_F(MigratorTest, AppliesOnlyNewMigrations) {
  Write("0001_create_things.sql",
        "CREATE TABLE things (id bigint PRIMARY KEY, label text NOT NULL);");
  ASSERT_THAT(ApplyMigrations(url_, dir_->path()), IsOkAndHolds(ReportIs(1, 1, 1)));
  WriteThree();
  EXPECT_THAT(ApplyMigrations(url_, dir_->path()), IsOkAndHolds(ReportIs(2, 3, 3)));
}

TEST_F(MigratorTest, RefusesDatabaseNewerThanBinary) {
  WriteThree();
  ASSERT_THAT(ApplyMigrations(url_, dir_->path()), IsOkAndHolds(ReportIs(3, 3, 3)));
  ASSERT_OK_AND_ASSIGN(auto older, TempDir::Create("dpq-migrations-"));
  ASSERT_OK(older->WriteFile("0001_create_things.sql", "CREATE TABLE things (id bigint);"));
  ASSERT_OK(older->WriteFile("0002_add_things_weight.sql", "SELECT 1;"));
  EXPECT_THAT(
      ApplyMigrations(url_, older->path()),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               "database schema version 3 is newer than this binary (knows 2); upgrade dpqd"));
}

TEST_F(MigratorTest, BrokenMigrationAppliesNothingOfItselfAndNamesTheFile) {
  Write("0001_create_things.sql", "CREATE TABLE things (id bigint PRIMARY KEY);");
  // The first statement succeeds, the second fails: the whole file must roll back.
  Write("0002_create_broken.sql", "CREATE TABLE half_done (id int);\nSELECT * FROM no_such_table;");
  Write("0003_create_others.sql", "CREATE TABLE others (id int);");
  EXPECT_THAT(
      ApplyMigrations(url_, dir_->path()),
      StatusIs(absl::StatusCode::kInternal, AllOf(HasSubstr("0002_create_broken.sql"),
                                                  HasSubstr("42P01"), HasSubstr("no_such_table"))));
  EXPECT_EQ(Sql("SELECT string_agg(name, ',' ORDER BY version) FROM schema_migrations"),
            "0001_create_things.sql");
  EXPECT_EQ(Sql("SELECT count(*) FROM pg_tables WHERE tablename IN ('half_done', 'others')"), "0");

  // Fixed, it applies on the next run.
  Write("0002_create_broken.sql", "CREATE TABLE half_done (id int);");
  EXPECT_THAT(ApplyMigrations(url_, dir_->path()), IsOkAndHolds(ReportIs(2, 3, 3)));
}

TEST_F(MigratorTest, ConcurrentMigratorsApplyEachMigrationExactlyOnce) {
  // pg_sleep widens the window in which a second migrator would otherwise apply the same file;
  // the INSERT makes a double application visible (and 0003 would fail on the duplicate table).
  Write("0001_create_log.sql",
        "CREATE TABLE applied_log (v int); INSERT INTO applied_log VALUES (1);");
  Write("0002_slow_step.sql", "SELECT pg_sleep(0.3); INSERT INTO applied_log VALUES (2);");
  Write("0003_create_more.sql", "CREATE TABLE more (id int); INSERT INTO applied_log VALUES (3);");
  Write("0004_slow_step.sql", "SELECT pg_sleep(0.2); INSERT INTO applied_log VALUES (4);");

  constexpr int kThreads = 4;
  std::vector<absl::StatusOr<MigrationReport>> results(kThreads, absl::UnknownError("not run"));
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] { results[i] = ApplyMigrations(url_, dir_->path()); });
  }
  for (auto& t : threads) t.join();

  int total_applied = 0;
  for (const auto& r : results) {
    ASSERT_THAT(r, IsOk());
    EXPECT_EQ(r->schema_version, 4);
    total_applied += r->applied;
  }
  EXPECT_EQ(total_applied, 4);
  EXPECT_EQ(Sql("SELECT string_agg(v::text, ',' ORDER BY v) FROM applied_log"), "1,2,3,4");
  EXPECT_EQ(Sql("SELECT count(*) FROM schema_migrations"), "4");
}

#ifdef DPQ_REPO_MIGRATIONS_DIR
TEST_F(MigratorTest, RepositoryMigrationsApplyToAFreshDatabaseAndAreIdempotent) {
  auto files = ListMigrations(DPQ_REPO_MIGRATIONS_DIR);
  ASSERT_THAT(files, IsOk());
  const int n = static_cast<int>(files->size());
  EXPECT_THAT(ApplyMigrations(url_, DPQ_REPO_MIGRATIONS_DIR), IsOkAndHolds(ReportIs(n, n, n)));
  EXPECT_THAT(ApplyMigrations(url_, DPQ_REPO_MIGRATIONS_DIR), IsOkAndHolds(ReportIs(0, n, n)));
}

// dpqd runs the migrations compiled into it: they must be the repository's files, byte for byte.
TEST_F(MigratorTest, EmbeddedMigrationsAreTheRepositoryFiles) {
  auto files = ReadMigrations(DPQ_REPO_MIGRATIONS_DIR);
  ASSERT_THAT(files, IsOk());
  const std::vector<Migration>& embedded = EmbeddedMigrations();
  ASSERT_EQ(embedded.size(), files->size());
  for (size_t i = 0; i < embedded.size(); ++i) {
    EXPECT_EQ(embedded[i].version, (*files)[i].version);
    EXPECT_EQ(embedded[i].name, (*files)[i].name);
    EXPECT_EQ(embedded[i].sql, (*files)[i].sql) << embedded[i].name;
  }
  const int n = static_cast<int>(embedded.size());
  EXPECT_THAT(ApplyMigrations(url_, embedded), IsOkAndHolds(ReportIs(n, n, n)));
}

TEST_F(MigratorTest, InMemoryMigrationsMustBeContiguous) {
  const std::vector<Migration> gap = {{1, "0001_a.sql", "SELECT 1"}, {3, "0003_c.sql", "SELECT 1"}};
  EXPECT_THAT(ApplyMigrations(url_, gap),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("0003_c.sql")));
}
#endif

TEST_F(MigratorTest, EmptyDirectoryIsVersionZero) {
  EXPECT_THAT(ApplyMigrations(url_, dir_->path()), IsOkAndHolds(ReportIs(0, 0, 0)));
  EXPECT_EQ(Sql("SELECT count(*) FROM schema_migrations"), "0");
}

TEST_F(MigratorTest, RejectsGapInNumbering) {
  Write("0001_create_things.sql", "CREATE TABLE things (id int);");
  Write("0003_create_others.sql", "CREATE TABLE others (id int);");
  EXPECT_THAT(ApplyMigrations(url_, dir_->path()),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("version 2 is missing")));
}

TEST_F(MigratorTest, RejectsBadlyNamedSqlFile) {
  Write("0001_Create-Things.sql", "CREATE TABLE things (id int);");
  EXPECT_THAT(ApplyMigrations(url_, dir_->path()),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("0001_Create-Things.sql")));
}

TEST_F(MigratorTest, MissingDirectoryIsNotFound) {
  EXPECT_THAT(ApplyMigrations(url_, dir_->path() + "/nope"), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(MigratorTest, UnreachableDatabaseIsUnavailable) {
  WriteThree();
  EXPECT_THAT(
      ApplyMigrations("postgresql:///dpq?host=/nonexistent-dir&user=postgres", dir_->path()),
      StatusIs(absl::StatusCode::kUnavailable));
}

}  // namespace
}  // namespace dpq::store
