// The scan pool's sessions (scan_session.h): they hold the scan role and read-only mode from their
// start, a deadline reaches a scan as the session's statement_timeout, and a later scan without one
// is not cut by what an earlier scan left behind.
#include "server/store/scan_session.h"

#include <pqxx/pqxx>
#include <string>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/store/scan_router.h"
#include "tests/db/store_test_env.h"
#include "tests/support/status_matchers.h"

namespace dpq::store {
namespace {

using ::dpq::testing::IsOk;
using ::dpq::testing::StatusIs;
using ::testing::HasSubstr;

class ScanSessionTest : public ::dpq::testing::StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_OK_AND_ASSIGN(single_, Database::Open(url(), 1));
    router_ = std::make_unique<ScanRouter>(single_.get());
  }

  // Runs `fn` on the router's scan pool (of one session, as `single_`).
  absl::Status OnScanSession(const std::function<absl::Status(pqxx::connection&)>& fn) {
    return router_->Run("scan session", 0, 0, absl::InfiniteFuture(), fn);
  }

  std::unique_ptr<Database> single_;
  std::unique_ptr<ScanRouter> router_;
};

TEST_F(ScanSessionTest, ScanSessionsReadAsTheScanRoleInReadOnlyTransactions) {
  const absl::Status s = OnScanSession([&](pqxx::connection& c) -> absl::Status {
    pqxx::nontransaction tx(c);
    const pqxx::row r = tx.exec1(
        "SELECT current_user, current_setting('transaction_read_only'), "
        "current_setting('statement_timeout')");
    EXPECT_EQ(r[0].as<std::string>(), kScanRole);
    EXPECT_EQ(r[1].as<std::string>(), "on");
    EXPECT_EQ(r[2].as<std::string>(), "0");
    return absl::OkStatus();
  });
  EXPECT_THAT(s, IsOk());
  // A write is refused by the mode, whatever the role could do: a table of its own in pg_temp.
  const absl::Status write = OnScanSession([&](pqxx::connection& c) -> absl::Status {
    pqxx::nontransaction tx(c);
    tx.exec0("CREATE TEMP TABLE t (x int)");
    return absl::OkStatus();
  });
  EXPECT_THAT(write, StatusIs(absl::StatusCode::kInternal, HasSubstr("25006")))
      << "read_only_sql_transaction";
  // dpqd's own pool is untouched: its sessions are still dpqd's role.
  const absl::Status own = single_->Run("own", [&](pqxx::connection& c) -> absl::Status {
    pqxx::nontransaction tx(c);
    EXPECT_NE(tx.exec1("SELECT current_user")[0].as<std::string>(), kScanRole);
    return absl::OkStatus();
  });
  EXPECT_THAT(own, IsOk());
}

TEST_F(ScanSessionTest, ADeadlineCancelsTheScanAndALaterScanWithoutOneIsNotCut) {
  int pid = 0;
  const absl::Status s = OnScanSession([&](pqxx::connection& c) -> absl::Status {
    pid = c.backendpid();
    EXPECT_THAT(ApplyScanDeadline(c, absl::Now() + absl::Milliseconds(300), "scan"), IsOk());
    const absl::Time start = absl::Now();
    pqxx::nontransaction tx(c);
    std::string state = "none";
    try {
      tx.exec1("SELECT pg_sleep(30)");
    } catch (const pqxx::sql_error& e) {
      state = e.sqlstate();
    }
    EXPECT_EQ(state, "57014") << "query_canceled by statement_timeout";
    // Cancelled at the deadline plus at most the allowance (1 s for a short deadline), not at 30 s.
    EXPECT_LT(absl::Now() - start, absl::Seconds(10));
    return absl::OkStatus();
  });
  EXPECT_THAT(s, IsOk());
  // The same session (nothing threw out of the work): no deadline now, so a scan longer than the
  // earlier timeout runs to its end.
  const absl::Status later = OnScanSession([&](pqxx::connection& c) -> absl::Status {
    EXPECT_EQ(c.backendpid(), pid);
    EXPECT_THAT(ApplyScanDeadline(c, absl::InfiniteFuture(), "scan"), IsOk());
    pqxx::nontransaction tx(c);
    tx.exec1("SELECT pg_sleep(2)");
    EXPECT_EQ(tx.exec1("SHOW statement_timeout")[0].as<std::string>(), "0");
    return absl::OkStatus();
  });
  EXPECT_THAT(later, IsOk());
}

TEST_F(ScanSessionTest, APassedDeadlineIsRefusedBeforeTheScan) {
  const absl::Status s = OnScanSession([&](pqxx::connection& c) -> absl::Status {
    return ApplyScanDeadline(c, absl::Now() - absl::Seconds(1), "aggregate scan");
  });
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("already passed")));
}

}  // namespace
}  // namespace dpq::store
