// Least privilege in the database (docs/database-roles.md): the statements that read raw
// rows run under dpq_scan, which can read the dataset tables and nothing else.
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/store/aggregate_scanner.h"
#include "server/store/budget_ledger.h"
#include "tests/db/store_test_env.h"
#include "tests/support/status_matchers.h"

namespace dpq::store {
namespace {

using ::dpq::testing::IsOk;
using ::testing::HasSubstr;

class ScanRoleTest : public ::dpq::testing::StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    ASSERT_OK_AND_ASSIGN(CreatedDataset created, CreateTinyDataset("tiny", 5));
    id_ = created.schema.id;
    table_ = DataTableName(id_);
    BudgetLedger ledger(db());
    ASSERT_THAT(ledger.Set(created.schema.population_id, ::dpq::testing::EpsU(1), 0), IsOk());
  }

  // Runs `sql` as dpq_scan; the error message when the database refuses it, else "".
  std::string RefusalAsScanRole(const std::string& sql) {
    absl::StatusOr<std::string> r = TrySql(absl::StrCat("SET ROLE ", kScanRole, "; ", sql));
    return r.ok() ? "" : std::string(r.status().message());
  }

  query::ScanPlan CountPlan() const {
    query::ScanPlan p;
    p.dataset_id = id_;
    p.unit_column = "uid";
    p.max_contributions = 1;
    return p;
  }

  int64_t id_ = 0;
  std::string table_;
};

TEST_F(ScanRoleTest, ScanRoleCannotUpdateTheLedgerNorWriteTheAuditTrail) {
  const std::string before = Sql("SELECT epsilon_total_units, epsilon_spent_units FROM ledgers");
  EXPECT_THAT(RefusalAsScanRole("UPDATE ledgers SET epsilon_spent_units = 0"),
              HasSubstr("permission denied for table ledgers"));
  EXPECT_THAT(RefusalAsScanRole("UPDATE ledgers SET epsilon_total_units = epsilon_total_units * 2"),
              HasSubstr("permission denied"));
  EXPECT_THAT(RefusalAsScanRole("DELETE FROM releases"), HasSubstr("permission denied"));
  EXPECT_THAT(RefusalAsScanRole("INSERT INTO grants (principal_id, dataset_id) VALUES (1, 1)"),
              HasSubstr("permission denied"));
  EXPECT_EQ(Sql("SELECT epsilon_total_units, epsilon_spent_units FROM ledgers"), before);
}

TEST_F(ScanRoleTest, ScanRoleCannotReadLedgersAuditTokensOrGrants) {
  for (const char* table : {"ledgers", "audit", "releases", "principals", "grants", "admin_log",
                            "datasets", "schema_migrations"}) {
    EXPECT_THAT(RefusalAsScanRole(absl::StrCat("SELECT count(*) FROM ", table)),
                HasSubstr("permission denied"))
        << table;
  }
}

TEST_F(ScanRoleTest, ScanRoleReadsButCannotChangeTheRawRows) {
  EXPECT_EQ(RefusalAsScanRole(absl::StrCat("SELECT count(*) FROM ", table_)), "")
      << "a dataset created after migration 0010 is readable by default privileges";
  EXPECT_THAT(RefusalAsScanRole(absl::StrCat("UPDATE ", table_, " SET x = 0")),
              HasSubstr("permission denied"));
  EXPECT_THAT(RefusalAsScanRole(absl::StrCat("DELETE FROM ", table_)),
              HasSubstr("permission denied"));
}

TEST_F(ScanRoleTest, EveryAggregateScanRunsUnderTheScanRole) {
  AggregateScanner scanner(db());
  ASSERT_OK_AND_ASSIGN(ScanResult ok, scanner.Scan(CountPlan()));
  EXPECT_EQ(ok.count, 5);
  // Take the scan role's right to read this table: the scan fails, though dpqd's own login role
  // (the table's owner) still could read it. So the scan did not run as that role.
  Sql(absl::StrCat("REVOKE SELECT ON ", table_, " FROM ", kScanRole));
  absl::StatusOr<ScanResult> refused = scanner.Scan(CountPlan());
  EXPECT_FALSE(refused.ok());
  Sql(absl::StrCat("GRANT SELECT ON ", table_, " TO ", kScanRole));
  EXPECT_THAT(scanner.Scan(CountPlan()).status(), IsOk());
}

TEST_F(ScanRoleTest, TheScanRoleCannotLogIn) {
  EXPECT_EQ(Sql(absl::StrCat(
                "SELECT rolcanlogin, rolsuper, rolcreaterole FROM pg_roles WHERE rolname = '",
                kScanRole, "'")),
            "f|f|f");
}

}  // namespace
}  // namespace dpq::store
