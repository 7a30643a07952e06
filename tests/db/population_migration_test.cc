// Migration 0014 (populations) over a database written before it: every dataset becomes a
// population of its own with the same id and name, its ledger keeps every spent figure, its audit
// chain verifies unchanged under the population, and each grant's cap and spend move to the
// population's caps.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/base/sha256.h"
#include "server/store/audit_chain.h"
#include "server/store/budget_ledger.h"
#include "server/store/database.h"
#include "server/store/population_store.h"
#include "server/store/postgres/migrator.h"
#include "tests/support/cluster_suite.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_postgres.h"

namespace dpq::store {
namespace {

using ::dpq::testing::IsOk;
using ::dpq::testing::TestPostgres;
using ::testing::ElementsAre;

constexpr int64_t kEpsilonUnit = 1000000000000;  // epsilon 1 (privacy_units.h)

class PopulationMigrationTest : public ::dpq::testing::ClusterSuite {
 protected:
  std::string Sql(const std::string& url, const std::string& sql) {
    auto r = TestPostgres::RunPsql(url, sql);
    EXPECT_THAT(r, IsOk()) << sql;
    return r.ok() ? *r : "";
  }
};

// `rows` debits of epsilon 0.25 on dataset `id`, hash-chained as dpqd wrote them before 0014.
std::string AuditRowsBefore(int64_t id, int rows, std::string* head) {
  std::string sql;
  std::string prev = GenesisHash();
  for (int seq = 1; seq <= rows; ++seq) {
    Allocation a;
    a.seq = seq;
    a.request_id = absl::StrCat("r", seq);
    a.principal_id = 2;
    a.analyst = "alice";
    a.fingerprint = absl::StrCat("f", seq);
    a.aggregate = "count";
    a.column = "";
    a.mechanism = "laplace";
    a.epsilon_units = kEpsilonUnit / 4;
    a.sensitivity = 1;
    a.noise_scale = 4;
    a.max_contributions = 1;
    a.events = "pure:epsilon=0.25";
    a.dataset_version = 1;
    a.result = "{}";
    a.prev_hash = prev;
    a.hash = ChainHash(prev, id, a);
    absl::StrAppend(
        &sql,
        "INSERT INTO audit (dataset_id, seq, request_id, principal_id, analyst, fingerprint, "
        "aggregate, column_name, mechanism, epsilon_units, delta_units, sensitivity, noise_scale, "
        "count_noise_scale, value, confidence, ci_lower, ci_upper, max_contributions, prev_hash, "
        "hash, events, dataset_version, result) VALUES (",
        id, ", ", seq, ", '", a.request_id, "', 2, 'alice', '", a.fingerprint,
        "', 'count', '', 'laplace', ", a.epsilon_units, ", 0, 1, 4, 0, 0, 0, 0, 0, 1, '\\x",
        ToHex(a.prev_hash), "', '\\x", ToHex(a.hash), "', '", a.events, "', 1, '{}');\n");
    prev = a.hash;
  }
  *head = prev;
  return sql;
}

TEST_F(PopulationMigrationTest,
       ExistingLedgersBecomePopulationsWithEverySpentFigureAndAnIntactChain) {
  ASSERT_OK_AND_ASSIGN(const std::string url, pg_->CreateDatabase("before_populations"));
  const std::vector<Migration>& all = EmbeddedMigrations();
  ASSERT_GE(all.size(), 14u);
  ASSERT_EQ(all[13].name, "0014_add_populations.sql");
  const std::vector<Migration> before(all.begin(), all.begin() + 13);
  ASSERT_THAT(ApplyMigrations(url, before), IsOk());

  // Two datasets as dpqd wrote them before populations: ids 1 and 2, the second with a chain of
  // three debits, a budget, an analyst's cap and spend.
  std::string head;
  const std::string audit = AuditRowsBefore(2, 3, &head);
  Sql(url, absl::StrCat(
               "INSERT INTO principals (name, role, token_sha256) VALUES "
               "('root', 'admin', '\\x",
               std::string(64, 'a'), "'), ('alice', 'analyst', '\\x", std::string(64, 'b'), "');\n",
               "INSERT INTO datasets (name, privacy_unit, epsilon_preset) VALUES "
               "('first', 'uid', NULL), ('visits', 'pid', 'census');\n",
               "INSERT INTO dataset_columns (dataset_id, position, name, type) VALUES "
               "(1, 0, 'uid', 'integer'), (2, 0, 'pid', 'text');\n",
               "INSERT INTO ledgers (dataset_id) VALUES (1);\n",
               "INSERT INTO ledgers (dataset_id, epsilon_total_units, epsilon_spent_units, "
               "audit_head_seq, audit_head_hash) VALUES (2, ",
               2 * kEpsilonUnit, ", ", 3 * kEpsilonUnit / 4, ", 3, '\\x", ToHex(head), "');\n",
               "INSERT INTO grants (principal_id, dataset_id, epsilon_cap_units, "
               "epsilon_spent_units) VALUES (2, 2, ",
               kEpsilonUnit, ", ", 3 * kEpsilonUnit / 4, ");\n", audit));

  ASSERT_THAT(ApplyMigrations(url, all), IsOk());

  EXPECT_EQ(Sql(url,
                "SELECT string_agg(id || ':' || name || ':' || unit_type, ',' ORDER BY id) "
                "FROM populations"),
            "1:first:integer,2:visits:text");
  EXPECT_EQ(
      Sql(url, "SELECT string_agg(id || ':' || population_id, ',' ORDER BY id) FROM datasets"),
      "1:1,2:2");
  EXPECT_EQ(Sql(url,
                "SELECT principal_id || ':' || population_id || ':' || epsilon_cap_units || "
                "':' || epsilon_spent_units FROM population_caps"),
            absl::StrCat("2:2:", kEpsilonUnit, ":", 3 * kEpsilonUnit / 4));

  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Database> db, Database::Open(url, 2));
  BudgetLedger ledger(db.get());
  ASSERT_OK_AND_ASSIGN(BudgetState visits, ledger.Get(2));
  EXPECT_EQ(visits.population, "visits");
  EXPECT_EQ(visits.epsilon_total_units, 2 * kEpsilonUnit);
  EXPECT_EQ(visits.epsilon_spent_units, 3 * kEpsilonUnit / 4);
  EXPECT_EQ(visits.epsilon_preset, "census");
  ASSERT_OK_AND_ASSIGN(BudgetLedger::Verification v, ledger.Verify(2));
  EXPECT_TRUE(v.ok) << v.reason;
  EXPECT_EQ(v.entries, 3);
  EXPECT_EQ(v.epsilon_spent_recomputed_units, 3 * kEpsilonUnit / 4);

  // A new population takes an id after every existing one, and a debit extends the old chain.
  PopulationStore populations(db.get());
  ASSERT_OK_AND_ASSIGN(Population fresh, populations.Create("clinic", query::ColumnType::kInteger));
  EXPECT_EQ(fresh.id, 3);
  Allocation next;
  next.request_id = "after";
  next.principal_id = 2;
  next.analyst = "alice";
  next.fingerprint = "f-after";
  next.aggregate = "count";
  next.mechanism = "laplace";
  next.epsilon_units = kEpsilonUnit / 4;
  next.datasets = "visits";
  ASSERT_THAT(ledger.Debit(2, next), IsOk());
  ASSERT_OK_AND_ASSIGN(v, ledger.Verify(2));
  EXPECT_TRUE(v.ok) << v.reason;
  EXPECT_EQ(v.entries, 4);
  ASSERT_OK_AND_ASSIGN(std::vector<Allocation> rows, ledger.ListAllocations(2));
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].datasets, "");
  EXPECT_EQ(rows[3].datasets, "visits");
}

}  // namespace
}  // namespace dpq::store
