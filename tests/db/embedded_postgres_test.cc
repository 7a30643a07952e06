#include "server/store/postgres/embedded_postgres.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
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
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

EmbeddedPostgresOptions OptionsFor(const TempDir& dir, bool durable = false) {
  EmbeddedPostgresOptions o;
  o.data_dir = dir.path();  // mkdtemp 0700: Start() makes it searchable by the server user
  o.durable = durable;
  return o;
}

absl::StatusOr<std::string> Psql(const EmbeddedPostgres& pg, const std::string& sql) {
  return TestPostgres::RunPsql(pg.connection_url(), sql);
}

// True once `pid` has exited (gone, or a zombie nobody reaps).
bool ProcessGone(pid_t pid) {
  std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
  if (!stat) return true;
  std::string line;
  std::getline(stat, line);
  size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z';
}

TEST(EmbeddedPostgresTest, ConnectionUrlConnectsToTheDatabaseOverTheUnixSocketOnly) {
  ASSERT_OK_AND_ASSIGN(auto dir, TempDir::Create());
  ASSERT_OK_AND_ASSIGN(auto pg, EmbeddedPostgres::Start(OptionsFor(*dir)));
  EXPECT_EQ(pg->socket_dir(), dir->path() + "/run");
  EXPECT_THAT(pg->connection_url(),
              StartsWith(absl::StrCat("postgresql:///dpq?host=", dir->path(), "/run")));
  EXPECT_THAT(Psql(*pg, "SELECT current_database(), current_user"), IsOkAndHolds("dpq|postgres"));
  EXPECT_THAT(Psql(*pg, "SHOW listen_addresses"), IsOkAndHolds(""));
  EXPECT_THAT(
      Psql(*pg,
           "SELECT current_setting('jit'), current_setting('max_parallel_workers_per_gather'),"
           " current_setting('fsync'), pg_encoding_to_char(encoding), datcollate"
           " FROM pg_database WHERE datname = 'dpq'"),
      IsOkAndHolds("off|0|off|UTF8|C.UTF-8"));
  EXPECT_OK(pg->Stop());
  EXPECT_FALSE(pg->running());
  EXPECT_OK(pg->Stop());  // idempotent
}

// The server log never holds a row value. An error that quotes a value is not logged,
// nor is the failing statement; start-up lines still are.
TEST(EmbeddedPostgresTest, ServerLogKeepsNoValueOfAFailedStatement) {
  ASSERT_OK_AND_ASSIGN(auto dir, TempDir::Create());
  ASSERT_OK_AND_ASSIGN(auto pg, EmbeddedPostgres::Start(OptionsFor(*dir)));
  EXPECT_THAT(Psql(*pg,
                   "SELECT current_setting('log_min_messages'), "
                   "current_setting('log_min_error_statement'), "
                   "current_setting('log_error_verbosity')"),
              IsOkAndHolds("log|panic|terse"));
  EXPECT_FALSE(Psql(*pg, "SELECT 'marker_7f3q_value'::integer").ok());
  EXPECT_FALSE(Psql(*pg,
                    "CREATE TABLE t (x int); INSERT INTO t VALUES (1), (1); "
                    "CREATE UNIQUE INDEX ON t (x)")
                   .ok());
  EXPECT_OK(pg->Stop());  // flushes the log
  std::ifstream in(dir->path() + "/log/postgres.log");
  std::stringstream log;
  log << in.rdbuf();
  EXPECT_THAT(log.str(), HasSubstr("database system is ready"));
  EXPECT_THAT(log.str(), Not(HasSubstr("marker_7f3q_value")));
  EXPECT_THAT(log.str(), Not(HasSubstr("Key (x)=(1)")));
}

TEST(EmbeddedPostgresTest, DurableByDefaultAndAppliesExtraSettings) {
  ASSERT_OK_AND_ASSIGN(auto dir, TempDir::Create());
  EmbeddedPostgresOptions o = OptionsFor(*dir, /*durable=*/true);
  o.settings = {{"work_mem", "8MB"}, {"application_name", "it's quoted"}};
  ASSERT_OK_AND_ASSIGN(auto pg, EmbeddedPostgres::Start(o));
  EXPECT_THAT(Psql(*pg,
                   "SELECT current_setting('fsync'), current_setting('synchronous_commit'),"
                   " current_setting('work_mem')"),
              IsOkAndHolds("on|on|8MB"));
}

TEST(EmbeddedPostgresTest, RestartOnSameDataDirKeepsData) {
  ASSERT_OK_AND_ASSIGN(auto dir, TempDir::Create());
  {
    ASSERT_OK_AND_ASSIGN(auto pg, EmbeddedPostgres::Start(OptionsFor(*dir)));
    ASSERT_OK(Psql(*pg, "CREATE TABLE kept (v int); INSERT INTO kept VALUES (7), (8)").status());
    ASSERT_OK(pg->Stop());
  }
  {
    ASSERT_OK_AND_ASSIGN(auto pg, EmbeddedPostgres::Start(OptionsFor(*dir)));
    EXPECT_THAT(Psql(*pg, "SELECT sum(v) FROM kept"), IsOkAndHolds("15"));
    // The destructor stops it.
  }
  ASSERT_OK_AND_ASSIGN(auto pg, EmbeddedPostgres::Start(OptionsFor(*dir)));
  EXPECT_THAT(Psql(*pg, "SELECT count(*) FROM kept"), IsOkAndHolds("2"));
}

TEST(EmbeddedPostgresTest, StartsAfterPostmasterWasKilled) {
  ASSERT_OK_AND_ASSIGN(auto dir, TempDir::Create());
  std::unique_ptr<EmbeddedPostgres> pg;
  ASSERT_OK_AND_ASSIGN(pg, EmbeddedPostgres::Start(OptionsFor(*dir)));
  // Non-durable cluster (fsync off) for speed; a synchronous commit still hands the WAL to the
  // kernel, which is all a process kill needs.
  ASSERT_OK(Psql(*pg,
                 "SET synchronous_commit = on; CREATE TABLE survived (v int);"
                 " INSERT INTO survived VALUES (42)")
                .status());
  ASSERT_OK_AND_ASSIGN(pid_t pid, pg->postmaster_pid());
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  for (int i = 0; i < 100 && !ProcessGone(pid); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(ProcessGone(pid));
  std::ifstream pid_file(pg->pg_data_dir() + "/postmaster.pid");
  ASSERT_TRUE(pid_file.good()) << "a killed postmaster leaves its pid file behind";
  EXPECT_OK(pg->Stop());  // nothing to stop; must not hang or fail
  pg.reset();

  ASSERT_OK_AND_ASSIGN(pg, EmbeddedPostgres::Start(OptionsFor(*dir)));
  EXPECT_THAT(Psql(*pg, "SELECT v FROM survived"), IsOkAndHolds("42"));
  ASSERT_OK_AND_ASSIGN(pid_t new_pid, pg->postmaster_pid());
  EXPECT_NE(new_pid, pid);
}

TEST(EmbeddedPostgresTest, IgnoresPidFileNamingAnUnrelatedLiveProcess) {
  // After a container restart the pid in a stale postmaster.pid often belongs to some other live
  // process; plain postgres would refuse to start ("lock file already exists").
  ASSERT_OK_AND_ASSIGN(auto dir, TempDir::Create());
  std::string pg_dir;
  {
    ASSERT_OK_AND_ASSIGN(auto pg, EmbeddedPostgres::Start(OptionsFor(*dir)));
    pg_dir = pg->pg_data_dir();
  }
  {
    std::ofstream pid_file(pg_dir + "/postmaster.pid");
    pid_file << getpid() << "\n" << pg_dir << "\n";
  }
  ASSERT_OK_AND_ASSIGN(auto pg, EmbeddedPostgres::Start(OptionsFor(*dir)));
  EXPECT_THAT(Psql(*pg, "SELECT 1"), IsOkAndHolds("1"));
}

TEST(EmbeddedPostgresTest, TakesOverAPostmasterLeftRunning) {
  // dpqd killed with -9 leaves its postmaster running; the next start must still succeed.
  ASSERT_OK_AND_ASSIGN(auto dir, TempDir::Create());
  ASSERT_OK_AND_ASSIGN(auto first, EmbeddedPostgres::Start(OptionsFor(*dir)));
  ASSERT_OK(Psql(*first, "CREATE TABLE t (v int); INSERT INTO t VALUES (1)").status());
  ASSERT_OK_AND_ASSIGN(auto second, EmbeddedPostgres::Start(OptionsFor(*dir)));
  EXPECT_THAT(Psql(*second, "SELECT v FROM t"), IsOkAndHolds("1"));
}

TEST(EmbeddedPostgresTest, StartFailureQuotesTheServerLog) {
  ASSERT_OK_AND_ASSIGN(auto dir, TempDir::Create());
  EmbeddedPostgresOptions o = OptionsFor(*dir);
  o.settings = {{"shared_buffers", "banana"}};
  EXPECT_THAT(EmbeddedPostgres::Start(o),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("failed to start"), HasSubstr("shared_buffers"))));
}

TEST(EmbeddedPostgresTest, RejectsBadOptions) {
  EXPECT_THAT(EmbeddedPostgres::Start(EmbeddedPostgresOptions{}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("data_dir")));
  ASSERT_OK_AND_ASSIGN(auto dir, TempDir::Create());
  EmbeddedPostgresOptions o = OptionsFor(*dir);
  o.data_dir = dir->path() + "/" + std::string(100, 'x');
  EXPECT_THAT(EmbeddedPostgres::Start(o),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("too long")));
  o = OptionsFor(*dir);
  o.settings = {{"work_mem; x", "1"}};
  EXPECT_THAT(EmbeddedPostgres::Start(o), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(EmbeddedPostgresTest, AsRootRefusesDataDirTheServerUserCannotReach) {
  if (geteuid() != 0) GTEST_SKIP() << "only meaningful as root";
  ASSERT_OK_AND_ASSIGN(auto dir, TempDir::Create());  // mkdtemp: 0700 root
  ASSERT_EQ(chmod(dir->path().c_str(), 0700), 0);
  EmbeddedPostgresOptions o;
  o.data_dir = dir->path() + "/inner/data";
  ASSERT_EQ(mkdir((dir->path() + "/inner").c_str(), 0700), 0);
  EXPECT_THAT(
      EmbeddedPostgres::Start(o),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               AllOf(HasSubstr("not reachable by system user postgres"), HasSubstr(dir->path()))));
}

TEST(TestPostgresTest, CreatesDatabasesAndRemovesItsDirectory) {
  std::string data_dir;
  {
    ASSERT_OK_AND_ASSIGN(auto pg, TestPostgres::Start());
    data_dir = pg->data_dir();
    ASSERT_OK_AND_ASSIGN(std::string url, pg->CreateDatabase("other_db"));
    EXPECT_THAT(TestPostgres::RunPsql(url, "SELECT current_database()"), IsOkAndHolds("other_db"));
    EXPECT_THAT(pg->Query("SELECT current_database()"), IsOkAndHolds("dpq"));
    EXPECT_THAT(pg->Query("SELECT nope"), StatusIs(absl::StatusCode::kInternal, HasSubstr("nope")));
    ASSERT_OK(pg->Query("CREATE TABLE t (v int); INSERT INTO t VALUES (3)").status());
    ASSERT_OK(pg->Restart());
    EXPECT_THAT(pg->Query("SELECT v FROM t"), IsOkAndHolds("3"));
  }
  struct stat st;
  EXPECT_NE(stat(data_dir.c_str(), &st), 0) << data_dir << " still exists";
}

}  // namespace
}  // namespace dpq::store
