// Aggregate scans on a streaming-replication hot standby (store/scan_router.h), every
// debit and audit row on the primary. One primary and one standby (pg_basebackup -R) per test
// binary, both on their own unix sockets; each test gets a fresh database on the primary, which
// the standby replays.
#include "server/store/scan_router.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/dp/testing/seeded_random.h"
#include "server/engine/query_engine.h"
#include "server/store/aggregate_scanner.h"
#include "server/store/budget_ledger.h"
#include "server/store/dataset_store.h"
#include "server/store/principal_store.h"
#include "server/store/result_cache.h"
#include "tests/db/store_test_env.h"
#include "tests/support/status_matchers.h"

namespace dpq::store {
namespace {

using ::dpq::testing::IsOk;
using ::dpq::testing::TestPostgres;

class ReadStandbyTest : public ::dpq::testing::StoreTest {
 protected:
  static void SetUpTestSuite() {
    StoreTest::SetUpTestSuite();
    if (pg_ == nullptr) return;
    auto standby = pg_->StartStandby();
    ASSERT_TRUE(standby.ok()) << standby.status();
    standby_ = std::move(standby).value().release();
  }
  static void TearDownTestSuite() {
    delete standby_;
    standby_ = nullptr;
    StoreTest::TearDownTestSuite();
  }

  void SetUp() override {
    StoreTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_NE(standby_, nullptr) << "the standby did not start";
    // This test's database on the standby: same name, the standby's socket.
    standby_url_ = standby_->ConnectionUrlFor(database());
    ASSERT_OK_AND_ASSIGN(CreatedDataset ds, CreateTinyDataset("people", kRows));
    schema_ = ds.schema;
    WaitForReplay();
  }

  // Blocks until the standby has replayed everything the primary has written so far.
  void WaitForReplay() {
    const std::string lsn = Sql("SELECT pg_current_wal_lsn()");
    const absl::Time give_up = absl::Now() + absl::Seconds(30);
    while (absl::Now() < give_up) {
      auto caught_up = TestPostgres::RunPsql(
          standby_->ConnectionUrlFor("postgres"),
          absl::StrCat("SELECT pg_last_wal_replay_lsn() >= '", lsn, "'::pg_lsn"));
      if (caught_up.ok() && *caught_up == "t") return;
      absl::SleepFor(absl::Milliseconds(20));
    }
    FAIL() << "the standby did not replay " << lsn << " within 30 s";
  }

  std::string OnStandby(const std::string& sql) {
    auto r = TestPostgres::RunPsql(standby_url_, sql);
    EXPECT_THAT(r, IsOk());
    return r.ok() ? *r : "";
  }

  // A router with its own pools (closed when it goes: their sessions flush their statistics).
  std::unique_ptr<ScanRouter> NewRouter(absl::Duration lag_wait = absl::Milliseconds(200)) {
    primary_scans_ = Database::OpenDeferred(url(), 2);
    ScanRouterOptions options;
    options.max_lag_wait = lag_wait;
    options.retry_after = absl::Milliseconds(300);
    return std::make_unique<ScanRouter>(primary_scans_.get(),
                                        Database::OpenDeferred(standby_url_, 2), options);
  }

  query::ScanPlan CountPlan(int64_t version) const {
    query::ScanPlan p;
    p.dataset_id = schema_.id;
    p.dataset_version = version;
    p.unit_column = "uid";
    p.max_contributions = 1;
    p.sum_values = false;
    return p;
  }

  // Sequential scans of the dataset's table as the server's statistics show them. Sessions flush
  // their counts when they end, so the caller closes its pools first; the poll covers the flush.
  static int64_t SeqScans(const std::string& url, int64_t dataset_id, int64_t at_least) {
    const std::string sql = absl::StrCat(
        "SELECT coalesce(sum(seq_scan), 0) FROM pg_stat_user_tables WHERE schemaname = 'dpq_data' "
        "AND relname = 'ds_",
        dataset_id, "'");
    int64_t n = -1;
    const absl::Time give_up = absl::Now() + absl::Seconds(10);
    do {
      auto r = TestPostgres::RunPsql(url, sql);
      if (!r.ok()) return -1;
      n = std::stoll(*r);
      if (n >= at_least) return n;
      absl::SleepFor(absl::Milliseconds(50));
    } while (absl::Now() < give_up);
    return n;
  }

  static constexpr int kRows = 40;
  static TestPostgres* standby_;
  std::string standby_url_;
  query::DatasetSchema schema_;
  std::unique_ptr<Database> primary_scans_;
};

TestPostgres* ReadStandbyTest::standby_ = nullptr;

TEST_F(ReadStandbyTest, ScansRunOnTheStandbyWhenItHasReplayedTheDataset) {
  const int64_t primary_before = SeqScans(url(), schema_.id, 0);
  auto router = NewRouter();
  AggregateScanner scanner(router.get());
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK_AND_ASSIGN(ScanResult r, scanner.Scan(CountPlan(schema_.version)));
    EXPECT_EQ(r.count, kRows);
  }
  const ScanRouteStats stats = router->Stats();
  EXPECT_EQ(stats.scans_on_standby, 3);
  EXPECT_EQ(stats.scans_on_primary, 0);
  EXPECT_TRUE(stats.standby_up);
  router.reset();
  primary_scans_.reset();
  // The server-side evidence: the standby's own statistics count the three scans of the table; the
  // primary's count did not move.
  EXPECT_GE(SeqScans(standby_url_, schema_.id, 3), 3);
  EXPECT_EQ(SeqScans(url(), schema_.id, 0), primary_before);
  EXPECT_EQ(OnStandby("SELECT pg_is_in_recovery()"), "t");
}

TEST_F(ReadStandbyTest, RowsAppendedAMomentAgoAreNeverMissedWhileTheStandbyLags) {
  // Replay paused: the standby keeps the dataset's first version while the primary appends.
  ASSERT_EQ(OnStandby("SELECT pg_wal_replay_pause()"), "");
  std::string csv = "uid,x\n";
  for (int i = kRows + 1; i <= kRows + 10; ++i) absl::StrAppend(&csv, i, ",1.5\n");
  ASSERT_OK_AND_ASSIGN(int64_t appended, AppendFromCsv(schema_, csv));
  ASSERT_EQ(appended, 10);
  ASSERT_OK_AND_ASSIGN(query::DatasetSchema now, DatasetStore(db()).Get("people"));
  const int64_t version = now.version;
  ASSERT_GT(version, schema_.version);

  auto router = NewRouter(absl::Milliseconds(100));
  AggregateScanner scanner(router.get());
  ASSERT_OK_AND_ASSIGN(ScanResult lagging, scanner.Scan(CountPlan(version)));
  EXPECT_EQ(lagging.count, kRows + 10) << "the scan saw the appended rows (on the primary)";
  EXPECT_EQ(router->Stats().fallbacks_lagging, 1);
  EXPECT_EQ(router->Stats().scans_on_primary, 1);
  EXPECT_EQ(OnStandby(absl::StrCat("SELECT count(*) FROM dpq_data.ds_", schema_.id)),
            absl::StrCat(kRows))
      << "the standby really was behind";

  // Replay resumed: the router waits for the new version and serves it from the standby.
  ASSERT_EQ(OnStandby("SELECT pg_wal_replay_resume()"), "");
  ASSERT_EQ(OnStandby("SELECT pg_get_wal_replay_pause_state()"), "not paused");
  auto patient = NewRouter(absl::Seconds(20));
  AggregateScanner caught_up(patient.get());
  ASSERT_OK_AND_ASSIGN(ScanResult fresh, caught_up.Scan(CountPlan(version)));
  EXPECT_EQ(fresh.count, kRows + 10);
  EXPECT_EQ(patient->Stats().scans_on_standby, 1);
  EXPECT_EQ(patient->Stats().fallbacks_lagging, 0);
}

// Through the engine: a query paid for on the primary is answered from the primary when the
// standby is down, charged exactly once, with its audit row; the standby is retried later.
TEST_F(ReadStandbyTest, StandbyDownFallsBackToThePrimaryAndChargesOnce) {
  DatasetStore datasets(db());
  PrincipalStore principals(db());
  BudgetLedger ledger(db());
  ResultCache cache(db());
  ASSERT_THAT(ledger.Set(schema_.population_id, ::dpq::testing::EpsU(10), 0), IsOk());
  ASSERT_OK_AND_ASSIGN(Principal ann, CreatePrincipal("ann"));
  ASSERT_OK(principals.Grant("ann", "people"));
  auto router = NewRouter();
  AggregateScanner scanner(router.get());
  dp::SeededRandom rng(7);
  engine::QueryEngine engine({&datasets, &principals, &ledger, &scanner, &cache}, &rng);
  query::QuerySpec count;
  count.dataset = "people";
  count.aggregate = query::AggregateKind::kCount;
  count.epsilon = 1;

  ASSERT_OK(standby_->server().Stop(PostgresStopMode::kFast));
  ASSERT_OK_AND_ASSIGN(engine::QueryOutcome answered, engine.Run(ann, count, "down-1"));
  EXPECT_FALSE(answered.cached);
  ASSERT_OK_AND_ASSIGN(BudgetState after, ledger.Get(schema_.population_id));
  EXPECT_EQ(after.epsilon_spent_units, ::dpq::testing::EpsU(1)) << "charged once";
  EXPECT_EQ(
      Sql(absl::StrCat("SELECT count(*) FROM audit WHERE population_id = ", schema_.population_id,
                       " AND request_id = 'down-1' AND result IS NOT NULL")),
      "1")
      << "the audit row holds the released answer";
  ScanRouteStats stats = router->Stats();
  EXPECT_EQ(stats.fallbacks_unavailable, 1);
  EXPECT_EQ(stats.scans_on_primary, 1);
  EXPECT_FALSE(stats.standby_up);

  // Within retry_after the standby is not tried again: no second failed connection.
  count.epsilon = 0.5;
  ASSERT_OK(engine.Run(ann, count, "down-2").status());
  EXPECT_EQ(router->Stats().fallbacks_unavailable, 1);
  EXPECT_EQ(router->Stats().scans_on_primary, 2);

  // Back up, and past retry_after: scans return to the standby.
  ASSERT_OK(standby_->Restart());
  WaitForReplay();
  absl::SleepFor(absl::Milliseconds(350));
  count.epsilon = 0.25;
  ASSERT_OK(engine.Run(ann, count, "up-1").status());
  EXPECT_EQ(router->Stats().scans_on_standby, 1);
  EXPECT_TRUE(router->Stats().standby_up);
}

TEST_F(ReadStandbyTest, WritesAreRefusedOnTheStandbySoNoDebitCanLandThere) {
  auto refused = TestPostgres::RunPsql(standby_url_, "UPDATE ledgers SET epsilon_spent_units = 0");
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()),
              ::testing::HasSubstr("cannot execute UPDATE in a read-only transaction"));
}

}  // namespace
}  // namespace dpq::store
