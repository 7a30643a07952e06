// JOINs in DP SQL over the real store (docs/decisions.md "Joins in DP SQL"): a joined scan
// computes what PostgreSQL's own join computes on the same clamped rows; bounding applies after
// the join (a unit with many rows on both sides keeps K joined rows); a public table joins on any
// key; a join charges its population's one ledger once, and datasets of one population share
// that budget; refusals (two populations, a non-unit join of private tables, a public table
// alone) are INVALID_ARGUMENT and charge nothing.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/base/status_macros.h"
#include "server/engine/query_engine.h"
#include "server/engine/sql_execution.h"
#include "server/query/filter/type_checker.h"
#include "server/query/join_source.h"
#include "server/query/planner.h"
#include "server/store/aggregate_scanner.h"
#include "tests/db/engine_test_env.h"
#include "tests/db/store_test_env.h"
#include "tests/support/status_matchers.h"

namespace dpq::engine {
namespace {

using ::dpq::testing::EpsU;
using ::dpq::testing::IsOk;
using ::dpq::testing::StatusIs;
using query::ColumnType;
using query::DatasetSchema;
using ::testing::HasSubstr;

constexpr char kDp[] = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6, ";

class JoinTest : public ::dpq::testing::EngineTest {
 protected:
  JoinTest() : EngineTest(20261205) {}

  // patients (pid, age [0, 100], region) and visits (pid, cost [0, 50], code) share the
  // population "patients"; regions (code, income [0, 1000]) is public; other is a population of
  // its own. Units 2..10 have one patient row and 1..3 visits (costs partly outside [0, 50]);
  // unit 1 has 30 rows on each side (900 joined rows); a visit of unit 11 has no patient and one
  // visit has no unit. Regions holds 'r0' twice (a public key may repeat) and incomes outside
  // [0, 1000].
  void SetUp() override {
    EngineTest::SetUp();
    if (HasFatalFailure()) return;
    DatasetSchema patients;
    patients.name = "patients";
    patients.privacy_unit = "pid";
    patients.columns = {{"pid", ColumnType::kInteger, absl::nullopt, absl::nullopt, {}},
                        {"age", ColumnType::kInteger, 0.0, 100.0, {}},
                        {"region", ColumnType::kText, absl::nullopt, absl::nullopt, {}}};
    std::string csv = "pid,age,region\n";
    for (int i = 0; i < 30; ++i) absl::StrAppend(&csv, "1,50,r0\n");
    for (int pid = 2; pid <= 10; ++pid)
      absl::StrAppend(&csv, pid, ",", pid * 10, ",r", pid % 3, "\n");
    ASSERT_OK_AND_ASSIGN(store::CreatedDataset p, CreateFromCsv(patients, csv));
    patients_ = p.schema;

    DatasetSchema visits;
    visits.name = "visits";
    visits.population = "patients";
    visits.privacy_unit = "pid";
    visits.columns = {{"pid", ColumnType::kInteger, absl::nullopt, absl::nullopt, {}},
                      {"cost", ColumnType::kDouble, 0.0, 50.0, {}},
                      {"code", ColumnType::kText, absl::nullopt, absl::nullopt, {}}};
    csv = "pid,cost,code\n";
    for (int i = 0; i < 30; ++i) absl::StrAppend(&csv, "1,5,c\n");
    for (int pid = 2; pid <= 10; ++pid) {
      for (int j = 0; j <= pid % 3; ++j)
        absl::StrAppend(&csv, pid, ",", pid * 7 - 10 + j * 3, ",c\n");
    }
    absl::StrAppend(&csv, "11,7,c\n,9,c\n");
    ASSERT_OK_AND_ASSIGN(store::CreatedDataset v, CreateFromCsv(visits, csv));
    visits_ = v.schema;

    DatasetSchema regions;
    regions.name = "regions";
    regions.is_public = true;
    regions.columns = {{"code", ColumnType::kText, absl::nullopt, absl::nullopt, {}},
                       {"income", ColumnType::kDouble, 0.0, 1000.0, {}}};
    ASSERT_OK_AND_ASSIGN(store::CreatedDataset r,
                         CreateFromCsv(regions, "code,income\nr0,100\nr0,300\nr1,2000\nr2,-5\n"));
    regions_ = r.schema;

    ASSERT_OK_AND_ASSIGN(store::CreatedDataset o, CreateTinyDataset("other", 5));
    other_ = o.schema;
    ASSERT_EQ(visits_.population_id, patients_.population_id);
    ASSERT_NE(other_.population_id, patients_.population_id);
    ASSERT_THAT(ledger_->Set(patients_.population_id, EpsU(10), 0), IsOk());
    ASSERT_THAT(ledger_->Set(other_.population_id, EpsU(10), 0), IsOk());
    ASSERT_OK_AND_ASSIGN(admin_, CreatePrincipal("root", store::Role::kAdmin));
    ASSERT_OK_AND_ASSIGN(ann_, CreatePrincipal("ann"));
    ASSERT_OK(principals_->Grant("ann", "patients"));
    ASSERT_OK(principals_->Grant("ann", "visits"));
    ASSERT_OK(principals_->Grant("ann", "other"));
  }

  // The joined schema of `request` as the engine resolves it, and the exact (noise-free) scan of
  // `spec` over it.
  absl::StatusOr<store::ScanResult> ScanJoined(const query::JoinRequest& request,
                                               query::QuerySpec spec, query::QueryPlan* plan_out) {
    std::vector<DatasetSchema> tables;
    for (const query::JoinRequest::Table& t : request.tables) {
      ASSIGN_OR_RETURN(DatasetSchema s, datasets_->Get(t.dataset));
      tables.push_back(std::move(s));
    }
    ASSIGN_OR_RETURN(DatasetSchema joined, query::ResolveJoin(request, tables));
    spec.dataset = joined.name;
    spec.join = std::make_shared<query::JoinRequest>(request);
    ASSIGN_OR_RETURN(query::QueryPlan plan, query::PlanQuery(spec, joined));
    absl::optional<query::filter::TypedFilter> filter;
    if (!spec.where.empty()) {
      ASSIGN_OR_RETURN(filter, query::filter::ParseAndCheckFilter(spec.where, joined));
    }
    *plan_out = plan;
    return scanner_->Scan(plan.scan, absl::InfiniteFuture(), filter ? &*filter : nullptr, "seed");
  }

  static query::JoinRequest PatientsJoin(const std::string& other, const std::string& left_column,
                                         const std::string& right_column) {
    query::JoinRequest j;
    j.tables = {{"patients", "p"}, {other, other.substr(0, 1)}};
    j.on = {{0, left_column, 1, right_column}};
    return j;
  }

  double Number(const std::string& sql) { return std::stod(Sql(sql)); }

  // The joined scan of the row-clamped SUM `spec` (K large enough to keep every joined row)
  // equals PostgreSQL's own count, sum and mean of `clamped` over patients p JOIN `joined`
  // (`... ON ... WHERE ...`); the reference reads several units' rows.
  void ExpectSumAndCountOfPostgres(const query::JoinRequest& request, query::QuerySpec spec,
                                   const std::string& clamped, const std::string& joined) {
    spec.aggregate = query::AggregateKind::kSum;
    spec.epsilon = 1;
    query::QueryPlan plan;
    ASSERT_OK_AND_ASSIGN(store::ScanResult r, ScanJoined(request, spec, &plan));
    const std::string from =
        absl::StrCat(" FROM ", store::DataTableName(patients_.id), " p JOIN ", joined);
    const double count = Number(absl::StrCat("SELECT count(*)", from));
    const double sum = Number(absl::StrCat("SELECT sum(", clamped, ")", from));
    ASSERT_GT(count, 5);
    EXPECT_EQ(r.count, count);
    const double scanned_sum = r.sum + r.count * plan.scan.center;  // r.sum is centred
    EXPECT_NEAR(scanned_sum, sum, 1e-12 * std::abs(sum));
    EXPECT_NEAR(scanned_sum / r.count, Number(absl::StrCat("SELECT avg(", clamped, ")", from)),
                1e-12 * std::abs(sum));
    EXPECT_GT(sum, 0);
  }

  absl::StatusOr<SqlOutcome> RunSql(const store::Principal& who, const std::string& text,
                                    const std::string& request_id) {
    return ExecuteSql(*engine_, who, text, request_id, SqlOptions{}, absl::InfiniteFuture());
  }
  int64_t Spent(const DatasetSchema& d) {
    absl::StatusOr<store::BudgetState> b = ledger_->Get(d.population_id);
    EXPECT_THAT(b, IsOk());
    return b.ok() ? b->epsilon_spent_units : -1;
  }
  int64_t AuditRows() { return static_cast<int64_t>(Number("SELECT count(*) FROM audit")); }

  DatasetSchema patients_, visits_, regions_, other_;
  store::Principal admin_, ann_;
};

// Units 2..10 join at most 3 rows each, under K = 5: bounding keeps every joined row, so the scan
// equals PostgreSQL's own join, clamp and aggregate on the same rows.
TEST_F(JoinTest, JoinedScanEqualsPostgresOnTheSameClampedRows) {
  query::QuerySpec spec;
  spec.column = "v__cost";
  spec.max_contributions = 5;
  spec.where = "p__pid >= 2 AND p__age > 30";
  ExpectSumAndCountOfPostgres(PatientsJoin("visits", "pid", "pid"), spec,
                              "LEAST(GREATEST(v.cost, 0), 50)",
                              absl::StrCat(store::DataTableName(visits_.id),
                                           " v ON v.pid = p.pid WHERE p.pid >= 2 AND "
                                           "p.age > 30"));
}

TEST_F(JoinTest, AUnitWithManyRowsOnBothSidesKeepsKJoinedRows) {
  for (int k : {1, 4, 7}) {
    query::QuerySpec spec;
    spec.aggregate = query::AggregateKind::kCount;
    spec.epsilon = 1;
    spec.max_contributions = k;
    spec.where = "p__pid = 1";
    query::QueryPlan plan;
    ASSERT_OK_AND_ASSIGN(store::ScanResult r,
                         ScanJoined(PatientsJoin("visits", "pid", "pid"), spec, &plan));
    EXPECT_EQ(Number(absl::StrCat("SELECT count(*) FROM ", store::DataTableName(patients_.id),
                                  " p JOIN ", store::DataTableName(visits_.id),
                                  " v ON v.pid = p.pid WHERE p.pid = 1")),
              900);
    EXPECT_EQ(r.count, k) << "unit 1's 900 joined rows are bounded to K after the join";
  }
}

// regions joins on p.region = r.code (no unit): the repeated key 'r0' doubles its rows, which
// bounding then limits per unit (at most 2 here, so all are kept); incomes are clamped to
// [0, 1000] like any private value.
TEST_F(JoinTest, APublicTableJoinsOnANonUnitKeyAndIsClamped) {
  query::QuerySpec spec;
  spec.column = "r__income";
  spec.max_contributions = 2;
  spec.where = "p__pid >= 2";
  ExpectSumAndCountOfPostgres(
      PatientsJoin("regions", "region", "code"), spec, "LEAST(GREATEST(r.income, 0), 1000)",
      absl::StrCat(store::DataTableName(regions_.id), " r ON r.code = p.region WHERE p.pid >= 2"));
}

TEST_F(JoinTest, AJoinChargesItsPopulationOnceAndItsDatasetsShareOneBudget) {
  ASSERT_OK_AND_ASSIGN(SqlOutcome joined,
                       RunSql(ann_,
                              "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) COUNT(*) "
                              "FROM patients p JOIN visits v USING (pid)",
                              "j1"));
  EXPECT_EQ(Spent(patients_), EpsU(1));
  EXPECT_EQ(AuditRows(), 1);
  ASSERT_OK_AND_ASSIGN(SqlOutcome alone,
                       RunSql(ann_,
                              "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 2) "
                              "COUNT(*) FROM visits",
                              "v1"));
  EXPECT_EQ(Spent(visits_), EpsU(3));
  EXPECT_EQ(Spent(patients_), EpsU(3)) << "one ledger for the population";
  EXPECT_EQ(Spent(other_), 0);
  // 7 remain: patients takes 6, then neither visits (1.5) nor the join (2) fits in what is left
  // (new questions: a repeated one would be answered from the cache at no charge).
  ASSERT_THAT(RunSql(ann_,
                     "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 6) COUNT(*) "
                     "FROM patients",
                     "p1"),
              IsOk());
  EXPECT_THAT(RunSql(ann_,
                     "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1.5) COUNT(*) "
                     "FROM visits",
                     "v2"),
              StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(RunSql(ann_,
                     "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 2) COUNT(*) "
                     "FROM patients p JOIN visits v USING (pid)",
                     "j2"),
              StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(Spent(patients_), EpsU(9));
}

TEST_F(JoinTest, RefusedJoinsAndPublicTablesAloneChargeNothing) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"COUNT(*) FROM patients p JOIN other o ON p.pid = o.uid", "a query may read one population"},
      {"COUNT(*) FROM patients p JOIN visits v ON p.region = v.code",
       "must be on their privacy units"},
      {"COUNT(*) FROM regions", "dataset regions is a public table: it is only ever joined"},
      {"SUM(income) FROM regions", "dataset regions is a public table: it is only ever joined"},
  };
  for (const store::Principal& who : {admin_, ann_}) {
    int i = 0;
    for (const auto& [body, want] : cases) {
      EXPECT_THAT(RunSql(who, absl::StrCat(kDp, "max_groups_contributed = 1) ", body),
                         absl::StrCat(who.name, "-", i++)),
                  StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(want)))
          << who.name << ": " << body;
    }
    query::QuerySpec flag;
    flag.dataset = "regions";
    flag.aggregate = query::AggregateKind::kCount;
    flag.epsilon = 1;
    EXPECT_THAT(engine_->Run(who, flag, absl::StrCat(who.name, "-flag")),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("dataset regions is a public table: it is only ever joined")))
        << who.name;
    EXPECT_THAT(engine_->RunBatch(who, "regions", {flag, flag}, 0, absl::StrCat(who.name, "-b")),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("public table")))
        << who.name;
  }
  EXPECT_EQ(Spent(patients_), 0);
  EXPECT_EQ(Spent(other_), 0);
  EXPECT_EQ(AuditRows(), 0);
  // A public table needs no grant to be joined; ann has none on regions.
  EXPECT_THAT(RunSql(ann_,
                     absl::StrCat(kDp,
                                  "max_groups_contributed = 1) COUNT(*) FROM patients p "
                                  "JOIN regions r ON p.region = r.code"),
                     "ok"),
              IsOk());
  EXPECT_EQ(Spent(patients_), EpsU(1));
}

// Explain states who pays, what is joined and how it is bounded, with the written names, and
// charges nothing; an analyzer refusal names the written column too.
TEST_F(JoinTest, ExplainStatesThePopulationTheJoinAndWrittenNames) {
  ASSERT_OK_AND_ASSIGN(
      SqlExplanation e,
      ExplainSql(*engine_, ann_,
                 absl::StrCat(kDp,
                              "max_groups_contributed = 1) r.code, SUM(v.cost) "
                              "FROM visits v JOIN patients p USING (pid) JOIN regions r ON "
                              "p.region = r.code WHERE p.age > 30 GROUP BY r.code"),
                 SqlOptions{}));
  EXPECT_EQ(e.dataset, "visits");
  EXPECT_EQ(e.population, "patients");
  ASSERT_TRUE(e.join.present);
  ASSERT_EQ(e.join.tables.size(), 3u);
  EXPECT_EQ(e.join.tables[2].dataset, "regions");
  EXPECT_TRUE(e.join.tables[2].is_public);
  EXPECT_EQ(e.join.conditions, (std::vector<std::string>{"p.pid = v.pid", "r.code = p.region"}));
  EXPECT_EQ(e.join.privacy_unit, "v.pid");
  EXPECT_THAT(e.join.bounding, HasSubstr("after the join"));
  ASSERT_FALSE(e.parts.empty());
  for (const SqlPlanPart& part : e.parts) {
    EXPECT_EQ(part.spec.where.find("__"), std::string::npos) << part.spec.where;
    EXPECT_EQ(part.spec.column.find("__"), std::string::npos) << part.spec.column;
    for (const std::string& key : part.spec.group_by) EXPECT_EQ(key, "r.code");
  }
  EXPECT_EQ(e.parts.back().spec.column, "v.cost");
  EXPECT_GT(e.parts.back().accuracy.sensitivity, 0);
  ASSERT_OK_AND_ASSIGN(
      SqlExplanation alone,
      ExplainSql(*engine_, ann_,
                 absl::StrCat(kDp, "max_groups_contributed = 1) COUNT(*) FROM other"),
                 SqlOptions{}));
  EXPECT_EQ(alone.population, "other");
  EXPECT_FALSE(alone.join.present);
  EXPECT_THAT(RunSql(ann_,
                     absl::StrCat(kDp,
                                  "max_groups_contributed = 1) SUM(p.region) "
                                  "FROM patients p JOIN visits v USING (pid)"),
                     "named"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("p.region")));
  EXPECT_EQ(Spent(patients_), 0);
  EXPECT_EQ(AuditRows(), 0);
}

}  // namespace
}  // namespace dpq::engine
