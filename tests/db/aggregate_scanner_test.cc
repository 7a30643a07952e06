// Push-down correctness of AggregateScanner on real data (the public colon and SLID data sets of
// deploy/demo-data), checked against aggregates computed independently in SQL.
#include "server/store/aggregate_scanner.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/db/store_test_env.h"
#include "tests/support/status_matchers.h"

namespace dpq::store {
namespace {

using ::dpq::testing::IsOk;
using query::ColumnSchema;
using query::ColumnType;
using query::DatasetSchema;
using query::ScanPlan;

ColumnSchema Int(const std::string& name) {
  return {name, ColumnType::kInteger, absl::nullopt, absl::nullopt, {}};
}
ColumnSchema Dbl(const std::string& name) {
  return {name, ColumnType::kDouble, absl::nullopt, absl::nullopt, {}};
}
ColumnSchema Txt(const std::string& name) {
  return {name, ColumnType::kText, absl::nullopt, absl::nullopt, {}};
}

// slid.csv (carData::SLID): one row per person, wages missing for 3,278 of 7,425.
DatasetSchema SlidSchema() {
  DatasetSchema s;
  s.name = "slid";
  s.privacy_unit = "person_id";
  s.columns = {Int("person_id"), Dbl("wages"), Dbl("education"),
               Int("age"),       Txt("sex"),   Txt("language")};
  return s;
}

class AggregateScannerTest : public ::dpq::testing::StoreTest {
 protected:
  // Loads demo file `file` as `schema`; skips the test when the data is not available.
  void Load(const DatasetSchema& schema, const std::string& file) {
    absl::optional<std::string> csv = ::dpq::testing::ReadDemoData(file);
    if (!csv.has_value())
      GTEST_FAIL() << file << " not found in deploy/demo-data (or $DPQ_TEST_DATA_DIR)";
    ASSERT_OK_AND_ASSIGN(CreatedDataset created, CreateFromCsv(schema, *csv, 64 * 1024));
    id_ = created.schema.id;
    table_ = DataTableName(id_);
    rows_ = created.rows_loaded;
  }

  ScanPlan Plan(const std::string& unit, const std::string& column, double lo, double hi, int k,
                double center = 0) const {
    ScanPlan p;
    p.dataset_id = id_;
    p.unit_column = unit;
    p.value_column = column;
    p.clamp_lower = lo;
    p.clamp_upper = hi;
    p.center = center;
    p.max_contributions = k;
    return p;
  }

  ScanResult Scan(const ScanPlan& plan) {
    AggregateScanner scanner(db());
    auto r = scanner.Scan(plan);
    EXPECT_THAT(r, IsOk());
    if (r.ok()) return *r;
    ScanResult failed;
    failed.count = -1;
    failed.sum = -1;
    return failed;
  }

  double SqlNumber(const std::string& sql) {
    double v = -1;
    std::string text = Sql(sql);
    EXPECT_TRUE(absl::SimpleAtod(text, &v)) << sql << " -> " << text;
    return v;
  }

  int64_t id_ = 0;
  std::string table_;
  int64_t rows_ = 0;
};

TEST_F(AggregateScannerTest, ColonCountKeepsAtMostKRowsPerPatient) {
  Load(::dpq::testing::ColonDemoSchema(), "colon.csv");
  if (IsSkipped() || HasFatalFailure()) return;
  ASSERT_EQ(rows_, 1858);
  ASSERT_EQ(Sql(absl::StrCat("SELECT count(DISTINCT patient_id) FROM ", table_)), "929");

  EXPECT_EQ(Scan(Plan("patient_id", "", 0, 0, 1)).count, 929);
  EXPECT_EQ(Scan(Plan("patient_id", "", 0, 0, 2)).count, 1858);
  EXPECT_EQ(Scan(Plan("patient_id", "", 0, 0, 1000)).count, 1858);
  EXPECT_EQ(Scan(Plan("patient_id", "", 0, 0, 1)).sum, 0);
  // Bounding by another column: 'study' is 1 for every row, so K rows in total survive.
  EXPECT_EQ(Scan(Plan("study", "", 0, 0, 3)).count, 3);
}

TEST_F(AggregateScannerTest, ColonClampedSumMatchesSqlAndSkipsNulls) {
  Load(::dpq::testing::ColonDemoSchema(), "colon.csv");
  if (IsSkipped() || HasFatalFailure()) return;
  // nodes is missing on 36 rows; K=2 keeps every non-NULL row of every patient.
  const double expected_sum = SqlNumber(absl::StrCat(
      "SELECT sum(least(greatest(nodes, 0), 10)) FROM ", table_, " WHERE nodes IS NOT NULL"));
  const std::string expected_count = Sql(absl::StrCat("SELECT count(nodes) FROM ", table_));
  ASSERT_EQ(expected_count, "1822");
  // Clamping really bites at 10 (some patients have more than 10 positive nodes).
  ASSERT_LT(expected_sum, SqlNumber(absl::StrCat("SELECT sum(nodes) FROM ", table_)));

  ScanResult r = Scan(Plan("patient_id", "nodes", 0, 10, 2));
  EXPECT_EQ(r.count, 1822);
  EXPECT_EQ(r.sum, expected_sum);

  // A clamp range above every value: each row contributes the lower bound.
  ScanResult floor = Scan(Plan("patient_id", "nodes", 100, 200, 2));
  EXPECT_EQ(floor.sum, 100.0 * 1822);
  // K=1 keeps one non-NULL row per patient that has any.
  EXPECT_EQ(Scan(Plan("patient_id", "nodes", 0, 10, 1)).count,
            std::stoll(Sql(absl::StrCat("SELECT count(DISTINCT patient_id) FROM ", table_,
                                        " WHERE nodes IS NOT NULL"))));
}

TEST_F(AggregateScannerTest, CenterIsSubtractedFromEveryKeptClampedValue) {
  Load(::dpq::testing::ColonDemoSchema(), "colon.csv");
  if (IsSkipped() || HasFatalFailure()) return;
  const ScanResult plain = Scan(Plan("patient_id", "nodes", 0, 10, 2));
  const ScanResult centred = Scan(Plan("patient_id", "nodes", 0, 10, 2, /*center=*/5));
  EXPECT_EQ(centred.count, plain.count);
  EXPECT_EQ(centred.sum, plain.sum - 5.0 * plain.count);
  const double expected = SqlNumber(absl::StrCat(
      "SELECT sum(least(greatest(age, 18), 80) - 49) FROM ", table_, " WHERE age IS NOT NULL"));
  EXPECT_EQ(Scan(Plan("patient_id", "age", 18, 80, 2, /*center=*/49)).sum, expected);
  // A non-integer centre (the midpoint of [0, 7]).
  const double half =
      SqlNumber(absl::StrCat("SELECT sum(least(greatest(nodes, 0), 7)::float8 - 3.5) FROM ", table_,
                             " WHERE nodes IS NOT NULL"));
  EXPECT_DOUBLE_EQ(Scan(Plan("patient_id", "nodes", 0, 7, 2, /*center=*/3.5)).sum, half);
}

TEST_F(AggregateScannerTest, ColonSumWithOneRowPerPatientLiesBetweenTheExtremeChoices) {
  Load(::dpq::testing::ColonDemoSchema(), "colon.csv");
  if (IsSkipped() || HasFatalFailure()) return;
  // time differs between a patient's two rows, so the K=1 choice matters.
  const std::string per_patient = absl::StrCat(
      "SELECT min(least(greatest(time, 0), 3000)) AS lo, max(least(greatest(time, 0), 3000)) AS hi "
      "FROM ",
      table_, " WHERE time IS NOT NULL GROUP BY patient_id");
  const double min_sum = SqlNumber(absl::StrCat("SELECT sum(lo) FROM (", per_patient, ") p"));
  const double max_sum = SqlNumber(absl::StrCat("SELECT sum(hi) FROM (", per_patient, ") p"));
  ASSERT_LT(min_sum, max_sum);

  std::vector<double> sums;
  for (int i = 0; i < 5; ++i) {
    ScanResult r = Scan(Plan("patient_id", "time", 0, 3000, 1));
    EXPECT_EQ(r.count, 929);
    EXPECT_GE(r.sum, min_sum);
    EXPECT_LE(r.sum, max_sum);
    sums.push_back(r.sum);
  }
  // The rows kept are chosen at random per scan (not always the first or the smallest): five
  // equal sums would mean a fixed choice (probability of a false alarm is negligible).
  EXPECT_FALSE(std::all_of(sums.begin(), sums.end(), [&](double s) { return s == sums[0]; }))
      << "K=1 sums never varied: " << sums[0];
  EXPECT_NE(sums[0], min_sum);
  EXPECT_NE(sums[0], max_sum);
}

TEST_F(AggregateScannerTest, SlidCountOfNonMissingWages) {
  Load(SlidSchema(), "slid.csv");
  if (IsSkipped() || HasFatalFailure()) return;
  ASSERT_EQ(rows_, 7425);
  EXPECT_EQ(Scan(Plan("person_id", "", 0, 0, 1)).count, 7425);
  const ScanResult wages = Scan(Plan("person_id", "wages", 0, 50, 1));
  EXPECT_EQ(wages.count, 7425 - 3278);
  EXPECT_NEAR(wages.sum,
              SqlNumber(absl::StrCat("SELECT sum(least(greatest(wages, 0), 50)) FROM ", table_)),
              1e-6);
}

// NULL group keys (ScanPlan::null_group_columns): slid's language is missing for 121 persons. With
// keys selected from the data they form one group of their own, keyed query::NullGroupKey();
// otherwise (a declared domain, or null_group_columns 0) those rows are dropped.
TEST_F(AggregateScannerTest, NullGroupValuesFormOneGroupWhenAsked) {
  Load(SlidSchema(), "slid.csv");
  if (IsSkipped() || HasFatalFailure()) return;
  const int64_t nulls =
      std::stoll(Sql(absl::StrCat("SELECT count(*) FROM ", table_, " WHERE language IS NULL")));
  ASSERT_GT(nulls, 0);
  ScanPlan plan = Plan("person_id", "", 0, 0, 1);
  plan.group_columns = {"language"};
  plan.group_domains = {{}};
  plan.count_units = true;
  const ScanResult dropped = Scan(plan);
  EXPECT_EQ(dropped.groups.size(), 3u);
  for (const GroupStats& g : dropped.groups) EXPECT_FALSE(query::IsNullGroupKey(g.key[0]));

  plan.null_group_columns = 1;
  const ScanResult kept = Scan(plan);
  ASSERT_EQ(kept.groups.size(), 4u);
  int64_t total = 0;
  const GroupStats* null_group = nullptr;
  for (const GroupStats& g : kept.groups) {
    total += g.count;
    if (query::IsNullGroupKey(g.key[0])) null_group = &g;
  }
  ASSERT_NE(null_group, nullptr);
  EXPECT_EQ(null_group->count, nulls);
  EXPECT_EQ(null_group->units, nulls);  // one row per person
  EXPECT_EQ(total, rows_);

  // Pre-aggregated, and with a second group column that drops NULL (beyond null_group_columns).
  ScanPlan per_unit = plan;
  per_unit.pre_aggregate = true;
  per_unit.pre_aggregate_count = true;
  per_unit.clamp_lower = 1;
  per_unit.clamp_upper = 2;
  const ScanResult p = Scan(per_unit);
  ASSERT_EQ(p.groups.size(), 4u);
  for (const GroupStats& g : p.groups) {
    if (query::IsNullGroupKey(g.key[0])) {
      EXPECT_DOUBLE_EQ(g.sum, static_cast<double>(nulls));
    }
  }
  ScanPlan two = plan;
  two.group_columns = {"language", "sex"};
  two.group_domains = {{}, {}};
  int64_t two_total = 0;
  for (const GroupStats& g : Scan(two).groups) two_total += g.count;
  EXPECT_EQ(two_total, rows_);  // sex is never NULL in slid
}

TEST_F(AggregateScannerTest, RowsWithNullUnitFormOneUnit) {
  DatasetSchema s;
  s.name = "null_units";
  s.privacy_unit = "uid";
  s.columns = {Int("uid"), Dbl("v")};
  ASSERT_OK_AND_ASSIGN(CreatedDataset created,
                       CreateFromCsv(s, "uid,v\n1,1\n1,2\n2,4\n,8\n,16\n,32\n3,\n"));
  id_ = created.schema.id;
  // Units: 1 (2 rows), 2 (1), NULL (3), 3 (1 row, value NULL).
  EXPECT_EQ(Scan(Plan("uid", "", 0, 0, 1)).count, 4);
  EXPECT_EQ(Scan(Plan("uid", "", 0, 0, 2)).count, 6);
  const ScanResult k1 = Scan(Plan("uid", "v", 0, 100, 1));
  EXPECT_EQ(k1.count, 3);  // unit 3 has no value left after dropping NULLs
  EXPECT_GE(k1.sum, 1 + 4 + 8);
  EXPECT_LE(k1.sum, 2 + 4 + 32);
  const ScanResult all = Scan(Plan("uid", "v", 0, 100, 3));
  EXPECT_EQ(all.count, 6);
  EXPECT_EQ(all.sum, 63);
  // An empty selection sums to 0, not NULL.
  DatasetSchema e = s;
  e.name = "empty";
  ASSERT_OK_AND_ASSIGN(CreatedDataset empty, CreateFromCsv(e, "uid,v\n1,\n"));
  id_ = empty.schema.id;
  const ScanResult none = Scan(Plan("uid", "v", 0, 1, 1));
  EXPECT_EQ(none.count, 0);
  EXPECT_EQ(none.sum, 0);
}

TEST_F(AggregateScannerTest, UnknownDatasetTableIsAnError) {
  ScanPlan p;
  p.dataset_id = 424242;
  p.unit_column = "uid";
  AggregateScanner scanner(db());
  EXPECT_THAT(scanner.Scan(p), ::testing::Not(IsOk()));
}

// Per-unit pre-aggregation (ScanPlan::pre_aggregate, the SQL front end's SUM and AVG): each
// patient's non-NULL values of a group are summed (averaged) first and that one value is clamped;
// each patient is then one row of the group.
TEST_F(AggregateScannerTest, PreAggregatedSumAndMeanClampEachUnitsTotal) {
  Load(::dpq::testing::ColonDemoSchema(), "colon.csv");
  if (IsSkipped() || HasFatalFailure()) return;
  const std::string per_unit =
      absl::StrCat("(SELECT patient_id, rx, sum(nodes) s, avg(nodes::float8) m FROM ", table_,
                   " WHERE nodes IS NOT NULL GROUP BY 1, 2) u");
  const double want_sum =
      SqlNumber(absl::StrCat("SELECT sum(least(greatest(s, 0), 15)) FROM ", per_unit));
  const double want_mean_sum =
      SqlNumber(absl::StrCat("SELECT sum(least(greatest(m, 0), 15)) FROM ", per_unit));
  const std::string units = Sql(absl::StrCat("SELECT count(*) FROM ", per_unit));
  // The totals of two rows exceed 15 where one row does not: pre-aggregation is not a row clamp.
  ASSERT_GT(SqlNumber(absl::StrCat("SELECT sum(least(greatest(nodes, 0), 15)) FROM ", table_)),
            want_sum);

  ScanPlan sum = Plan("patient_id", "nodes", 0, 15, 1);
  sum.pre_aggregate = true;
  ScanResult r = Scan(sum);
  EXPECT_EQ(r.count, std::stoll(units));
  EXPECT_DOUBLE_EQ(r.sum, want_sum);

  ScanPlan mean = sum;
  mean.pre_aggregate_mean = true;
  mean.center = 7.5;
  ScanResult m = Scan(mean);
  EXPECT_EQ(m.count, std::stoll(units));
  EXPECT_NEAR(m.sum, want_mean_sum - 7.5 * m.count, 1e-6);

  // Grouped by rx (one rx per patient, so M = 1 keeps every patient): per group the same.
  ScanPlan grouped = sum;
  grouped.group_columns = {"rx"};
  grouped.group_domains = {{}};
  ScanResult g = Scan(grouped);
  ASSERT_EQ(g.groups.size(), 3u);
  for (const GroupStats& group : g.groups) {
    EXPECT_DOUBLE_EQ(group.sum,
                     SqlNumber(absl::StrCat("SELECT sum(least(greatest(s, 0), 15)) FROM ", per_unit,
                                            " WHERE rx = '", group.key[0], "'")))
        << group.key[0];
  }
}

// A per-unit count (ScanPlan::pre_aggregate_count, SQL's COUNT with contribution_bounds_per_group
// => (L, U), L > 0): each patient's rows of a group are counted and that count is clamped to
// [L, U]; `sum` is the total of the clamped counts, `count` the number of patients. The colon
// data holds two rows per patient (etype 1 and 2), so a lower bound of 3 lifts every patient's
// count: the answer is no count of kept rows.
TEST_F(AggregateScannerTest, PreAggregatedCountClampsEachUnitsRowCount) {
  Load(::dpq::testing::ColonDemoSchema(), "colon.csv");
  if (IsSkipped() || HasFatalFailure()) return;
  const std::string per_unit =
      absl::StrCat("(SELECT patient_id, rx, count(*) n FROM ", table_, " GROUP BY 1, 2) u");
  const std::string units = Sql(absl::StrCat("SELECT count(*) FROM ", per_unit));
  const double lifted =
      SqlNumber(absl::StrCat("SELECT sum(least(greatest(n, 3), 5)) FROM ", per_unit));
  ASSERT_GT(lifted, SqlNumber(absl::StrCat("SELECT count(*) FROM ", table_)));

  ScanPlan count = Plan("patient_id", "", 3, 5, 1);
  count.pre_aggregate = true;
  count.pre_aggregate_count = true;
  ScanResult r = Scan(count);
  EXPECT_EQ(r.count, std::stoll(units));
  EXPECT_DOUBLE_EQ(r.sum, lifted);

  // An upper bound below the rows a patient holds cuts the count: [1, 1.5] gives 1.5 each.
  ScanPlan cut = Plan("patient_id", "", 1, 1.5, 1);
  cut.pre_aggregate = true;
  cut.pre_aggregate_count = true;
  EXPECT_DOUBLE_EQ(Scan(cut).sum, 1.5 * std::stod(units));

  // Grouped by rx: per group the sum of that group's clamped counts.
  ScanPlan grouped = count;
  grouped.group_columns = {"rx"};
  grouped.group_domains = {{}};
  ScanResult g = Scan(grouped);
  ASSERT_EQ(g.groups.size(), 3u);
  for (const GroupStats& group : g.groups) {
    EXPECT_DOUBLE_EQ(group.sum,
                     SqlNumber(absl::StrCat("SELECT sum(least(greatest(n, 3), 5)) FROM ", per_unit,
                                            " WHERE rx = '", group.key[0], "'")))
        << group.key[0];
  }
}

}  // namespace
}  // namespace dpq::store
