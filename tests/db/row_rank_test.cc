// The stored per-unit row rank (`_dpq_rank`, store/row_ranker.h) and the scanner's rank filter
// (store/bounding_sql.h) against a real PostgreSQL: ranks are 1..n per unit in load order, appends
// continue them, the rank filter keeps exactly what the random window keeps in count, and the
// reserved column name is refused.
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/query/dataset_schema.h"
#include "server/query/planner.h"
#include "server/store/aggregate_scanner.h"
#include "server/store/dataset_store.h"
#include "tests/db/store_test_env.h"
#include "tests/support/status_matchers.h"

namespace dpq::store {
namespace {

using ::dpq::testing::IsOk;
using ::dpq::testing::IsOkAndHolds;
using ::dpq::testing::StatusIs;
using query::ColumnSchema;
using query::ColumnType;
using query::DatasetSchema;
using query::ScanPlan;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

ColumnSchema Int(const std::string& name) {
  return {name, ColumnType::kInteger, absl::nullopt, absl::nullopt, {}};
}
ColumnSchema Dbl(const std::string& name, double lo, double hi) {
  return {name, ColumnType::kDouble, lo, hi, {}};
}
ColumnSchema Txt(const std::string& name) {
  return {name, ColumnType::kText, absl::nullopt, absl::nullopt, {}};
}

// Visits: unit "u" (integer), a value "v" in [0, 10], a free-text "note".
DatasetSchema VisitsSchema(const std::string& name = "visits") {
  DatasetSchema s;
  s.name = name;
  s.privacy_unit = "u";
  s.columns = {Int("u"), Dbl("v", 0, 10), Txt("note")};
  return s;
}

// Units whose ranks are not exactly 1..n (n = the unit's row count): must be 0.
std::string BadRankedUnitsSql(const std::string& table, const std::string& unit) {
  return absl::StrCat("SELECT count(*) FROM (SELECT ", unit,
                      ", count(*) AS n, min(_dpq_rank) AS lo, ",
                      "max(_dpq_rank) AS hi, count(DISTINCT _dpq_rank) AS d FROM ", table,
                      " GROUP BY ", unit, ") s WHERE NOT (lo = 1 AND hi = n AND d = n)");
}

class RowRankTest : public ::dpq::testing::StoreTest {
 protected:
  absl::StatusOr<int64_t> AppendCsv(const DatasetSchema& schema, const std::string& csv,
                                    size_t chunk_bytes = 16) {
    return AppendFromCsv(schema, csv, chunk_bytes);
  }

  ScanResult Scan(const ScanPlan& plan) {
    AggregateScanner scanner(db());
    auto r = scanner.Scan(plan);
    EXPECT_THAT(r, IsOk());
    return r.ok() ? *r : ScanResult{};
  }

  ScanPlan CountPlan(int64_t id, const std::string& unit, int k, bool stored_rank) {
    ScanPlan p;
    p.dataset_id = id;
    p.unit_column = unit;
    p.max_contributions = k;
    p.bound_by_row_rank = stored_rank;
    return p;
  }
};

TEST_F(RowRankTest, RanksAreOneToNPerUnitInLoadOrder) {
  // Units 1..3 with 3, 1 and 2 rows, interleaved; "007" and "+7" are both unit 7; two NULL units.
  const std::string csv =
      "u,v,note\n1,1,a\n2,2,b\n1,3,c\n3,4,d\n007,5,e\n1,6,f\n3,7,g\n+7,8,h\n,9,i\n,1,j\n";
  ASSERT_OK_AND_ASSIGN(CreatedDataset created,
                       CreateFromCsv(VisitsSchema(), csv, /*chunk_bytes=*/5));
  EXPECT_TRUE(created.schema.has_row_rank);
  const std::string table = DataTableName(created.schema.id);
  EXPECT_EQ(Sql(absl::StrCat("SELECT string_agg(note || ':' || coalesce(u::text, 'NULL') || ':' || "
                             "_dpq_rank, ' ' ORDER BY note) FROM ",
                             table)),
            "a:1:1 b:2:1 c:1:2 d:3:1 e:7:1 f:1:3 g:3:2 h:7:2 i:NULL:1 j:NULL:2");
  EXPECT_EQ(Sql(BadRankedUnitsSql(table, "u")), "0");
  // The column is hidden from the schema, recorded on the dataset, and NOT NULL.
  ASSERT_OK_AND_ASSIGN(DatasetSchema got, DatasetStore(db()).Get("visits"));
  EXPECT_TRUE(got.has_row_rank);
  EXPECT_EQ(got.columns.size(), 3u);
  EXPECT_EQ(
      Sql(absl::StrCat("SELECT is_nullable || ':' || data_type FROM information_schema.columns "
                       "WHERE table_schema = 'dpq_data' AND table_name = 'ds_",
                       got.id, "' AND column_name = '_dpq_rank'")),
      "NO:integer");
}

TEST_F(RowRankTest, RankColumnSitsBeforeTheFirstTextColumn) {
  // After the fixed-width prefix (cheap to deform up to, no alignment padding), else first.
  ASSERT_OK_AND_ASSIGN(CreatedDataset visits, CreateFromCsv(VisitsSchema(), "u,v,note\n1,1,a\n"));
  DatasetSchema texts;
  texts.name = "texts";
  texts.privacy_unit = "who";
  texts.columns = {Txt("who"), Dbl("v", 0, 10)};
  ASSERT_OK_AND_ASSIGN(CreatedDataset t, CreateFromCsv(texts, "who,v\nann,1\n"));
  DatasetSchema numbers;
  numbers.name = "numbers";
  numbers.privacy_unit = "u";
  numbers.columns = {Int("u"), Dbl("v", 0, 10)};
  ASSERT_OK_AND_ASSIGN(CreatedDataset n, CreateFromCsv(numbers, "u,v\n1,1\n"));
  const auto columns = [&](int64_t id) {
    return Sql(
        absl::StrCat("SELECT string_agg(column_name, ',' ORDER BY ordinal_position) FROM "
                     "information_schema.columns WHERE table_schema = 'dpq_data' AND "
                     "table_name = 'ds_",
                     id, "'"));
  };
  EXPECT_EQ(columns(visits.schema.id), "u,v,_dpq_rank,note");
  EXPECT_EQ(columns(t.schema.id), "_dpq_rank,who,v");
  EXPECT_EQ(columns(n.schema.id), "u,v,_dpq_rank");
}

TEST_F(RowRankTest, ColonRanksAreOneToNPerPatient) {
  absl::optional<std::string> csv = ::dpq::testing::ReadDemoData("colon.csv");
  if (!csv.has_value())
    GTEST_FAIL() << "colon.csv not found in deploy/demo-data (or $DPQ_TEST_DATA_DIR)";
  ASSERT_OK_AND_ASSIGN(CreatedDataset created,
                       CreateFromCsv(::dpq::testing::ColonDemoSchema(), *csv, 64 * 1024));
  const std::string table = DataTableName(created.schema.id);
  EXPECT_EQ(Sql(BadRankedUnitsSql(table, "patient_id")), "0");
  EXPECT_EQ(Sql(absl::StrCat("SELECT max(_dpq_rank) FROM ", table)), "2");
}

TEST_F(RowRankTest, AppendContinuesEachUnitsRanks) {
  ASSERT_OK_AND_ASSIGN(CreatedDataset created,
                       CreateFromCsv(VisitsSchema(), "u,v,note\n1,1,a\n2,2,b\n1,3,c\n,4,d\n"));
  ASSERT_OK_AND_ASSIGN(DatasetSchema schema, DatasetStore(db()).Get("visits"));
  EXPECT_THAT(AppendCsv(schema, "u,v,note\n2,5,e\n1,6,f\n3,7,g\n,8,h\n01,9,i\n"), IsOkAndHolds(5));
  const std::string table = DataTableName(created.schema.id);
  EXPECT_EQ(Sql(absl::StrCat("SELECT string_agg(note || ':' || _dpq_rank, ' ' ORDER BY note) FROM ",
                             table)),
            "a:1 b:1 c:2 d:1 e:2 f:3 g:1 h:2 i:4");
  EXPECT_EQ(Sql(BadRankedUnitsSql(table, "u")), "0");
  // A second append continues again, text units included.
  DatasetSchema texts;
  texts.name = "texts";
  texts.privacy_unit = "who";
  texts.columns = {Txt("who"), Dbl("v", 0, 10)};
  ASSERT_OK_AND_ASSIGN(CreatedDataset t, CreateFromCsv(texts, "who,v\nann,1\nbob\\x,2\nann,3\n"));
  ASSERT_OK_AND_ASSIGN(DatasetSchema texts_schema, DatasetStore(db()).Get("texts"));
  EXPECT_THAT(AppendCsv(texts_schema, "who,v\nbob\\x,4\nann,5\n"), IsOkAndHolds(2));
  EXPECT_THAT(AppendCsv(texts_schema, "who,v\nann,6\n"), IsOkAndHolds(1));
  EXPECT_EQ(Sql(absl::StrCat("SELECT string_agg(who || ':' || _dpq_rank, ' ' ORDER BY v) FROM ",
                             DataTableName(t.schema.id))),
            "ann:1 bob\\x:1 ann:2 bob\\x:2 ann:3 ann:4");
}

TEST_F(RowRankTest, LoadingANullChangesNoPlanChoice) {
  // Regression: the bounding method once depended on whether a load had seen a NULL, so one
  // person's NULL switched every other person's kept rows. The choice is now a fact of the table.
  ASSERT_OK_AND_ASSIGN(CreatedDataset created, CreateFromCsv(VisitsSchema(), "u,v,note\n1,1,a\n"));
  ASSERT_OK_AND_ASSIGN(DatasetSchema before, DatasetStore(db()).Get("visits"));
  EXPECT_TRUE(before.CanBoundByRowRank());
  EXPECT_THAT(AppendCsv(before, "u,v,note\n1,,b\n"), IsOkAndHolds(1));
  ASSERT_OK_AND_ASSIGN(DatasetSchema after, DatasetStore(db()).Get("visits"));
  EXPECT_TRUE(after.CanBoundByRowRank());
  after.version = before.version;  // bumped by the load: public, and not part of the plan
  query::QuerySpec spec;
  spec.dataset = "visits";
  spec.aggregate = query::AggregateKind::kSum;
  spec.column = "v";
  spec.epsilon = 1;
  ASSERT_OK_AND_ASSIGN(query::QueryPlan p_before, query::PlanQuery(spec, before));
  ASSERT_OK_AND_ASSIGN(query::QueryPlan p_after, query::PlanQuery(spec, after));
  EXPECT_TRUE(p_before.scan.bound_by_row_rank);
  EXPECT_EQ(p_before.scan.bound_by_row_rank, p_after.scan.bound_by_row_rank);
  EXPECT_EQ(p_before.fingerprint, p_after.fingerprint);
}

TEST_F(RowRankTest, StoredRankDropsNullValuesInsideTheKeptRows) {
  // Unit 1 loads [NULL, 5, 7]: with K = 2 the rank path keeps its first two rows and drops the NULL
  // among them (sum 5), whatever any other unit holds; unit 2 loads [3] (sum 3).
  ASSERT_OK_AND_ASSIGN(CreatedDataset created,
                       CreateFromCsv(VisitsSchema(), "u,v,note\n1,,a\n1,5,b\n1,7,c\n2,3,d\n"));
  ScanPlan sum = CountPlan(created.schema.id, "u", 2, /*stored_rank=*/true);
  sum.value_column = "v";
  sum.clamp_lower = 0;
  sum.clamp_upper = 10;
  for (int i = 0; i < 5; ++i) {  // deterministic: the same kept rows at every query
    const ScanResult r = Scan(sum);
    EXPECT_EQ(r.count, 2);
    EXPECT_DOUBLE_EQ(r.sum, 8);
  }
}

TEST_F(RowRankTest, PlannerChoosesTheRankFromTheTableAlone) {
  // "v" has no NULL in "clean" and one in "holes": the same choice on both.
  ASSERT_OK_AND_ASSIGN(CreatedDataset clean,
                       CreateFromCsv(VisitsSchema("clean"), "u,v,note\n1,1,a\n1,2,\n2,3,b\n"));
  ASSERT_OK_AND_ASSIGN(CreatedDataset holes,
                       CreateFromCsv(VisitsSchema("holes"), "u,v,note\n1,1,a\n1,,c\n2,3,b\n"));
  const auto plan = [&](const std::string& dataset, query::AggregateKind aggregate,
                        const std::string& column, bool legacy = false) {
    absl::StatusOr<DatasetSchema> schema = DatasetStore(db()).Get(dataset);
    EXPECT_THAT(schema, IsOk());
    if (legacy) schema->has_row_rank = false;
    query::QuerySpec spec;
    spec.dataset = dataset;
    spec.epsilon = 1;
    spec.max_contributions = 1;
    spec.aggregate = aggregate;
    spec.column = column;
    absl::StatusOr<query::QueryPlan> p = query::PlanQuery(spec, *schema);
    EXPECT_THAT(p, IsOk());
    return p.ok() && p->scan.bound_by_row_rank;
  };
  EXPECT_TRUE(plan("clean", query::AggregateKind::kSum, "v"));
  EXPECT_TRUE(plan("clean", query::AggregateKind::kMean, "v"));
  EXPECT_TRUE(plan("clean", query::AggregateKind::kCount, ""));
  EXPECT_TRUE(plan("holes", query::AggregateKind::kSum, "v"));  // a NULL changes nothing
  EXPECT_TRUE(plan("holes", query::AggregateKind::kCount, ""));
  EXPECT_FALSE(plan("clean", query::AggregateKind::kCount, "", /*legacy=*/true));
}

TEST_F(RowRankTest, ColonFastPathCountEqualsPatientsAndTheWindowPath) {
  absl::optional<std::string> csv = ::dpq::testing::ReadDemoData("colon.csv");
  if (!csv.has_value())
    GTEST_FAIL() << "colon.csv not found in deploy/demo-data (or $DPQ_TEST_DATA_DIR)";
  ASSERT_OK_AND_ASSIGN(CreatedDataset created,
                       CreateFromCsv(::dpq::testing::ColonDemoSchema(), *csv, 64 * 1024));
  const int64_t id = created.schema.id;
  const std::string table = DataTableName(id);
  ASSERT_EQ(Sql(absl::StrCat("SELECT count(DISTINCT patient_id) FROM ", table)), "929");
  for (int k : {1, 2, 5}) {
    SCOPED_TRACE(k);
    const ScanResult fast = Scan(CountPlan(id, "patient_id", k, /*stored_rank=*/true));
    const ScanResult window = Scan(CountPlan(id, "patient_id", k, /*stored_rank=*/false));
    EXPECT_EQ(fast.count, k == 1 ? 929 : 1858);
    EXPECT_EQ(fast.count, window.count);
  }
  // A sum over the rank filter equals the same sum computed independently over the first row of
  // each patient in load order.
  ScanPlan sum = CountPlan(id, "patient_id", 1, /*stored_rank=*/true);
  sum.value_column = "time";
  sum.clamp_lower = 0;
  sum.clamp_upper = 2000;
  double want = -1;
  ASSERT_TRUE(absl::SimpleAtod(Sql(absl::StrCat("SELECT sum(least(greatest(time, 0), 2000)) FROM ",
                                                table, " WHERE _dpq_rank = 1")),
                               &want));
  EXPECT_DOUBLE_EQ(Scan(sum).sum, want);

  // The scanner really reads the stored rank: move one patient's rows out of the first K and the
  // fast path loses that patient, while the window path (and grouped or filtered scans) do not.
  Sql(absl::StrCat("UPDATE ", table, " SET _dpq_rank = _dpq_rank + 10 WHERE patient_id = 1"));
  EXPECT_EQ(Scan(CountPlan(id, "patient_id", 1, /*stored_rank=*/true)).count, 928);
  EXPECT_EQ(Scan(CountPlan(id, "patient_id", 1, /*stored_rank=*/false)).count, 929);
  ScanPlan grouped = CountPlan(id, "patient_id", 1, /*stored_rank=*/true);
  grouped.group_columns = {"etype"};
  grouped.group_domains = {{}};
  grouped.max_partitions = 2;
  const ScanResult g = Scan(grouped);
  ASSERT_EQ(g.groups.size(), 2u);
  EXPECT_EQ(g.groups[0].count + g.groups[1].count, 1858);
}

TEST_F(RowRankTest, LegacyTableWithoutRanksStillLoadsAndScans) {
  // A dataset from before migration 0006: no rank column, has_row_rank false.
  ASSERT_OK_AND_ASSIGN(CreatedDataset created,
                       CreateFromCsv(VisitsSchema(), "u,v,note\n1,1,a\n1,2,b\n"));
  const std::string table = DataTableName(created.schema.id);
  Sql(absl::StrCat("ALTER TABLE ", table, " DROP COLUMN _dpq_rank"));
  Sql(absl::StrCat("UPDATE datasets SET has_row_rank = false WHERE id = ", created.schema.id));
  ASSERT_OK_AND_ASSIGN(DatasetSchema schema, DatasetStore(db()).Get("visits"));
  EXPECT_FALSE(schema.has_row_rank);
  EXPECT_FALSE(schema.CanBoundByRowRank());
  EXPECT_THAT(AppendCsv(schema, "u,v,note\n2,3,c\n"), IsOkAndHolds(1));
  EXPECT_EQ(Scan(CountPlan(created.schema.id, "u", 1, /*stored_rank=*/false)).count, 2);
}

TEST_F(RowRankTest, DatabaseErrorMidCopyLeavesNothingBehind) {
  // The lines are written by a separate thread: a value PostgreSQL refuses half-way (the ranker
  // only reads the unit) must still fail the load as a whole and leave no dataset behind.
  int batch = 0;
  CopyLineSource source = [&](std::string* lines) -> absl::StatusOr<bool> {
    for (int i = 0; i < 1000; ++i) absl::StrAppend(lines, batch * 1000 + i, "\t1.5\tok\n");
    if (batch == 25) lines->append("7\tnot-a-number\tbad\n");
    return ++batch < 50;
  };
  DatasetStore datasets(db());
  EXPECT_FALSE(datasets.Create(VisitsSchema("broken"), source).ok());
  EXPECT_THAT(datasets.Get("broken"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_EQ(Sql("SELECT count(*) FROM pg_tables WHERE schemaname = 'dpq_data'"), "0");
  // The store still works afterwards.
  EXPECT_THAT(CreateFromCsv(VisitsSchema("fine"), "u,v,note\n1,1,a\n"), IsOk());
}

TEST_F(RowRankTest, UserColumnsMayNotUseTheReservedPrefix) {
  DatasetSchema s = VisitsSchema();
  s.columns.push_back(Int("_dpq_rank"));
  EXPECT_THAT(query::ValidateNewDataset(s),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("_dpq_rank")));
  s = VisitsSchema();
  s.columns[2].name = "_dpqx";
  EXPECT_THAT(query::ValidateNewDataset(s),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("_dpqx")));
  s = VisitsSchema();
  s.columns[2].name = "_dp";  // only the prefix is reserved
  EXPECT_THAT(query::ValidateNewDataset(s), IsOk());
}

}  // namespace
}  // namespace dpq::store
