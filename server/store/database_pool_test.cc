// store::Database, the connection pool every store class runs its SQL through: what a caller may
// rely on about the session its work runs on after errors and broken connections.
#include "server/store/database.h"

#include <pqxx/pqxx>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/store/one_trip_transaction.h"
#include "tests/db/store_test_env.h"
#include "tests/support/status_matchers.h"

namespace dpq::store {
namespace {

using ::dpq::testing::IsOk;
using ::dpq::testing::StatusIs;
using ::dpq::testing::TestPostgres;
using ::testing::HasSubstr;

class DatabasePoolTest : public ::dpq::testing::StoreTest {
 protected:
  // A pool of one, so every call gets the same connection unless it was discarded.
  void SetUp() override {
    StoreTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_OK_AND_ASSIGN(single_, Database::Open(url(), 1));
  }

  // The backend pid of the session `db` (by default the pool of one) hands out next, read in a
  // read-only transaction (started with "BEGIN; SET TRANSACTION READ ONLY", as
  // PrincipalStore::FindByTokenHash's is).
  absl::StatusOr<int> NextSessionPid(Database* db = nullptr) {
    int pid = 0;
    absl::Status s = (db != nullptr ? db : single_.get())->Run("pid", [&](pqxx::connection& c) {
      pqxx::read_transaction tx(c);
      pid = tx.exec1("SELECT pg_backend_pid()")[0].as<int>();
      return absl::OkStatus();
    });
    if (!s.ok()) return s;
    return pid;
  }

  std::unique_ptr<Database> single_;
};

// libpqxx can hand back a connection whose session is still inside a failed transaction block
// (its transaction_base::Begin abandons a transaction without ROLLBACK when the start command
// throws after BEGIN took effect). Here the work leaves exactly that state behind on purpose and
// throws; the next caller must get a fresh session, not "current transaction is aborted" (25P02).
TEST_F(DatabasePoolTest, AConnectionWhoseWorkThrewIsNeverReused) {
  ASSERT_OK_AND_ASSIGN(const int before, NextSessionPid());
  ASSERT_OK_AND_ASSIGN(const int same, NextSessionPid());
  ASSERT_EQ(same, before) << "a pool of one reuses its connection after successful work";

  absl::Status failed = single_->Run("abandon", [&](pqxx::connection& c) -> absl::Status {
    pqxx::nontransaction raw(c);  // no ROLLBACK on destruction: the block stays open and failed
    raw.exec("BEGIN");
    raw.exec("SELECT 1 / 0");  // throws pqxx::data_exception (22012)
    return absl::OkStatus();
  });
  EXPECT_THAT(failed, StatusIs(absl::StatusCode::kInternal, HasSubstr("22012")));

  ASSERT_OK_AND_ASSIGN(const int after, NextSessionPid());
  EXPECT_NE(after, before) << "the session left in a failed transaction block was pooled";

  const PoolStats stats = single_->Stats();
  EXPECT_EQ(stats.opened, 2);
  EXPECT_EQ(stats.closed_after_error, 1);
  EXPECT_EQ(stats.closed_by_server, 0);
  EXPECT_EQ(stats.connect_failures, 0);
  EXPECT_EQ(stats.idle, 1);
  EXPECT_EQ(stats.in_use, 0);
}

// An error returned as a Status (no exception) keeps the connection: the transaction objects'
// destructors rolled back, so the session is clean, and reconnecting would only cost time.
TEST_F(DatabasePoolTest, AnErrorReturnedWithoutThrowingKeepsTheConnection) {
  ASSERT_OK_AND_ASSIGN(const int before, NextSessionPid());
  absl::Status refused = single_->Run("refuse", [&](pqxx::connection& c) -> absl::Status {
    pqxx::work tx(c);
    tx.exec0("CREATE TEMP TABLE scratch (x int)");
    return absl::FailedPreconditionError("refused after a statement");
  });
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kFailedPrecondition));
  ASSERT_OK_AND_ASSIGN(const int after, NextSessionPid());
  EXPECT_EQ(after, before);
  // And the refused work was rolled back: its temp table does not exist in that session.
  absl::Status probe = single_->Run("probe", [&](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    EXPECT_TRUE(tx.exec1("SELECT to_regclass('pg_temp.scratch') IS NULL")[0].as<bool>());
    return absl::OkStatus();
  });
  EXPECT_THAT(probe, IsOk());
  EXPECT_EQ(single_->Stats().opened, 1);
  EXPECT_EQ(single_->Stats().closed_after_error, 0);
}

// The statistics dpqd exports: an idle session the server closed is counted as closed by the
// server when the pool notices it, a work in progress holds its session as in use, and a failed
// connection attempt is counted as such.
TEST_F(DatabasePoolTest, StatsCountSessionsTheServerClosedAndFailedConnects) {
  ASSERT_OK_AND_ASSIGN(const int pid, NextSessionPid());
  Sql(absl::StrCat("SELECT pg_terminate_backend(", pid, ", 10000)"));
  absl::Status s = single_->Run("in use", [&](pqxx::connection& c) {
    const PoolStats during = single_->Stats();
    EXPECT_EQ(during.in_use, 1);
    EXPECT_EQ(during.idle, 0);
    pqxx::read_transaction tx(c);
    EXPECT_NE(tx.exec1("SELECT pg_backend_pid()")[0].as<int>(), pid);
    return absl::OkStatus();
  });
  ASSERT_THAT(s, IsOk());
  PoolStats stats = single_->Stats();
  EXPECT_EQ(stats.opened, 2);
  EXPECT_EQ(stats.closed_by_server, 1);
  EXPECT_EQ(stats.closed_after_error, 0);

  // A second pool whose database stops accepting connections: its idle session is killed, so
  // the next call must connect, and that attempt fails (UNAVAILABLE) and is counted.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Database> other, Database::Open(url(), 1));
  ASSERT_OK_AND_ASSIGN(const int other_pid, NextSessionPid(other.get()));
  const std::string name = Sql("SELECT current_database()");
  const std::string admin_url = pg_->connection_url();  // another database: this one refuses us
  ASSERT_THAT(
      TestPostgres::RunPsql(admin_url, "ALTER DATABASE " + name + " ALLOW_CONNECTIONS false"),
      IsOk());
  ASSERT_THAT(TestPostgres::RunPsql(
                  admin_url, absl::StrCat("SELECT pg_terminate_backend(", other_pid, ", 10000)")),
              IsOk());
  EXPECT_THAT(other->Run("refused", [](pqxx::connection&) { return absl::OkStatus(); }),
              StatusIs(absl::StatusCode::kUnavailable));
  ASSERT_THAT(
      TestPostgres::RunPsql(admin_url, "ALTER DATABASE " + name + " ALLOW_CONNECTIONS true"),
      IsOk());
  stats = other->Stats();
  EXPECT_EQ(stats.opened, 1);
  EXPECT_EQ(stats.closed_by_server, 1);
  EXPECT_EQ(stats.connect_failures, 1);
  EXPECT_EQ(stats.idle + stats.in_use, 0);
}

// libpqxx 6.4 would silently open a new session when a broken connection is used again, so work
// that went on after a break (a retry loop inside `fn`, say) would run its later statements on
// another session, outside the transaction its earlier ones began. The pool inhibits that: once the
// session is gone every further statement of the same work fails, and the call reports
// UNAVAILABLE; the next call gets a new session.
TEST_F(DatabasePoolTest, ABrokenSessionIsNeverReopenedBehindTheCallersBack) {
  int first = 0, second = 0;
  bool reused_after_break = false;
  absl::Status s = single_->Run("work", [&](pqxx::connection& c) -> absl::Status {
    {
      pqxx::work tx(c);
      first = tx.exec1("SELECT pg_backend_pid()")[0].as<int>();
      Sql(absl::StrCat("SELECT pg_terminate_backend(", first, ", 10000)"));
      try {
        tx.exec0("SELECT 1");
      } catch (const pqxx::broken_connection&) {
        // expected: the session is gone; a careless fn might go on
      }
    }
    pqxx::work again(c);  // must throw: no new session behind the pool's back
    second = again.exec1("SELECT pg_backend_pid()")[0].as<int>();
    reused_after_break = true;
    return absl::OkStatus();
  });
  EXPECT_FALSE(reused_after_break) << "statements ran on a new session " << second << " after "
                                   << first << " broke, inside the same unit of work";
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kUnavailable));
  ASSERT_OK_AND_ASSIGN(const int next, NextSessionPid());
  EXPECT_NE(next, first);
}

// Results depend on session settings (how doubles print, hence how group keys compare as text;
// time zones; name resolution). Whatever the URL (or the server, or ALTER ROLE ... SET) asks for,
// every session the pool opens runs with dpq's own values.
TEST_F(DatabasePoolTest, SessionSettingsArePinnedWhateverTheUrlAsks) {
  const std::string hostile = absl::StrCat(
      url(), url().find('?') == std::string::npos ? "?" : "&",
      "options=-c%20extra_float_digits%3D-15%20-c%20TimeZone%3DAsia/Tokyo%20-c%20"
      "search_path%3Dpg_temp%20-c%20standard_conforming_strings%3Doff%20-c%20statement_timeout%3D1");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Database> db, Database::Open(hostile, 1));
  std::string got;
  ASSERT_THAT(
      db->Run("settings",
              [&](pqxx::connection& c) {
                pqxx::read_transaction tx(c);
                got = tx.exec1(
                            "SELECT current_setting('extra_float_digits') || ' ' || "
                            "current_setting('TimeZone') || ' ' || current_setting('search_path') "
                            "|| ' ' || current_setting('standard_conforming_strings') || ' ' || "
                            "current_setting('statement_timeout') || ' ' || (0.1::float8 + "
                            "0.2::float8)::text")[0]
                          .as<std::string>();
                return absl::OkStatus();
              }),
      IsOk());
  EXPECT_EQ(got, "3 UTC public on 0 0.30000000000000004");
}

// OneTripTransaction (one_trip_transaction.h) sends BEGIN and its SET LOCALs in one round trip. Its
// settings hold inside the block only, and a caller that leaves without Commit() (an early return
// with an error status) must not hand the pool a session still inside the block.
TEST_F(DatabasePoolTest, OneTripTransactionAppliesItsSettingsAndNeverLeavesABlockOpen) {
  ASSERT_OK_AND_ASSIGN(const int pid, NextSessionPid());
  absl::Status early = single_->Run("early return", [&](pqxx::connection& c) -> absl::Status {
    OneTripTransaction t(c, OneTripTransaction::Mode::kReadOnly,
                         "SET LOCAL statement_timeout = 4321");
    EXPECT_EQ(t.tx().exec1("SHOW statement_timeout")[0].as<std::string>(), "4321ms");
    EXPECT_EQ(t.tx().exec1("SHOW transaction_read_only")[0].as<std::string>(), "on");
    return absl::FailedPreconditionError("left without Commit");
  });
  EXPECT_THAT(early, StatusIs(absl::StatusCode::kFailedPrecondition));
  // The same session (nothing threw), outside any block: the SET LOCAL ended with it.
  absl::Status after = single_->Run("after", [&](pqxx::connection& c) -> absl::Status {
    pqxx::nontransaction tx(c);
    EXPECT_EQ(tx.exec1("SELECT pg_backend_pid()")[0].as<int>(), pid);
    EXPECT_EQ(tx.exec1("SHOW statement_timeout")[0].as<std::string>(), "0");
    EXPECT_EQ(tx.exec1("SELECT now() = statement_timestamp()")[0].as<bool>(), true)
        << "a statement outside a block is its own transaction";
    return absl::OkStatus();
  });
  EXPECT_THAT(after, IsOk());
  // Committed read-write work is visible to the next session's work.
  ASSERT_THAT(single_->Run("commit",
                           [&](pqxx::connection& c) -> absl::Status {
                             OneTripTransaction t(c, OneTripTransaction::Mode::kReadWrite, "");
                             t.tx().exec0("CREATE TABLE one_trip_probe (x int)");
                             t.tx().exec0("INSERT INTO one_trip_probe VALUES (7)");
                             t.Commit();
                             return absl::OkStatus();
                           }),
              IsOk());
  int64_t seen = 0;
  ASSERT_THAT(single_->Run("read",
                           [&](pqxx::connection& c) -> absl::Status {
                             pqxx::read_transaction tx(c);
                             seen = tx.exec1("SELECT sum(x) FROM one_trip_probe")[0].as<int64_t>();
                             return absl::OkStatus();
                           }),
              IsOk());
  EXPECT_EQ(seen, 7);
}

}  // namespace
}  // namespace dpq::store
