#include "server/sql/analyzer.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/query/planner.h"
#include "server/sql/parser.h"

namespace dpq::sql {
namespace {

using query::AggregateKind;
using query::ColumnType;
using ::testing::HasSubstr;

query::DatasetSchema Slid() {
  query::DatasetSchema s;
  s.id = 7;
  s.name = "slid";
  s.privacy_unit = "person_id";
  s.columns = {
      {"person_id", ColumnType::kInteger, absl::nullopt, absl::nullopt, {}},
      {"wages", ColumnType::kDouble, 0.0, 100.0, {}},
      {"education", ColumnType::kDouble, absl::nullopt, absl::nullopt, {}},
      {"age", ColumnType::kInteger, 0.0, 120.0, {}},
      {"sex", ColumnType::kText, absl::nullopt, absl::nullopt, {"Female", "Male"}},
      {"language", ColumnType::kText, absl::nullopt, absl::nullopt, {}},
  };
  return s;
}

absl::StatusOr<CompiledStatement> Compile(absl::string_view sql) {
  absl::StatusOr<Script> script = Parse(sql);
  if (!script.ok()) return script.status();
  return Analyze(script->statements[0], Slid());
}

CompiledStatement Compiled(absl::string_view sql) {
  absl::StatusOr<CompiledStatement> c = Compile(sql);
  EXPECT_TRUE(c.ok()) << sql << ": " << c.status();
  return c.ok() ? *c : CompiledStatement{};
}

#define DP "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) "

TEST(SqlAnalyzerTest, CompilesAGroupedFilteredOrderedStatement) {
  CompiledStatement c = Compiled(
      "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1.0, delta = 1e-6, "
      "max_groups_contributed = 2, privacy_unit_column = person_id) "
      "language, COUNT(*) AS n, AVG(wages, contribution_bounds_per_group => (0, 50)) AS mean_wage "
      "FROM slid WHERE age >= 30 GROUP BY language ORDER BY n DESC LIMIT 10");
  ASSERT_EQ(c.parts.size(), 2u);
  EXPECT_EQ(c.parts[0].aggregate, AggregateKind::kCount);
  EXPECT_EQ(c.parts[0].max_contributions, 1);
  EXPECT_EQ(c.parts[0].max_partitions, 2);
  EXPECT_EQ(c.parts[0].where, "age >= 30");
  EXPECT_EQ(c.parts[0].epsilon, 0.5);
  EXPECT_EQ(c.parts[0].delta, 5e-7);
  EXPECT_EQ(c.parts[1].aggregate, AggregateKind::kMean);
  EXPECT_TRUE(c.parts[1].pre_aggregate);
  EXPECT_EQ(*c.parts[1].lower, 0);
  EXPECT_EQ(*c.parts[1].upper, 50);
  ASSERT_EQ(c.columns.size(), 3u);
  EXPECT_EQ(c.columns[0].name, "language");
  EXPECT_EQ(c.columns[0].type, "string");
  EXPECT_EQ(c.columns[1].name, "n");
  EXPECT_EQ(c.columns[1].type, "int64");
  EXPECT_EQ(c.columns[2].name, "mean_wage");
  ASSERT_EQ(c.order_by.size(), 1u);
  EXPECT_EQ(c.order_by[0].column, 1);
  EXPECT_TRUE(c.order_by[0].descending);
  EXPECT_EQ(*c.limit, 10);
  EXPECT_EQ(c.epsilon, 1.0);
  EXPECT_EQ(c.delta, 1e-6);
}

TEST(SqlAnalyzerTest, SameLiteralSpelledThreeWays) {
  for (const char* eps : {"1e6", "1e+06", "1000000.0"}) {
    CompiledStatement c =
        Compiled(std::string("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = ") + eps +
                 ") COUNT(*) FROM slid");
    EXPECT_EQ(c.epsilon, 1e6) << eps;
  }
}

TEST(SqlAnalyzerTest, EpsilonSplitsExactlyOverTheAggregates) {
  CompiledStatement c = Compiled(
      "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) COUNT(*), SUM(wages), AVG(age) FROM slid");
  ASSERT_EQ(c.parts.size(), 3u);
  // 1e12 units over 3: 333333333334 + 333333333333 + 333333333333.
  EXPECT_EQ(c.parts[0].epsilon, 0.333333333334);
  EXPECT_EQ(c.parts[1].epsilon, 0.333333333333);
  EXPECT_EQ(c.parts[2].epsilon, 0.333333333333);
  EXPECT_EQ(c.delta, 0);
}

TEST(SqlAnalyzerTest, CountMapsItsUpperBoundToK) {
  CompiledStatement c = Compiled(DP "COUNT(*, contribution_bounds_per_group => (0, 5)) FROM slid");
  EXPECT_EQ(c.parts[0].max_contributions, 5);
  EXPECT_FALSE(c.parts[0].pre_aggregate);
}

TEST(SqlAnalyzerTest, CountOfAColumnCountsItsNonNullRows) {
  CompiledStatement c = Compiled(DP "COUNT(wages) FROM slid WHERE age > 3");
  EXPECT_EQ(c.parts[0].where, "(age > 3) AND wages IS NOT NULL");
  EXPECT_TRUE(c.parts[0].column.empty());
}

TEST(SqlAnalyzerTest, RowClampedAggregatesKeepFiveRows) {
  CompiledStatement c =
      Compiled(DP
               "VAR_POP(wages), STDDEV_POP(wages, contribution_bounds_per_row => (0, 10)), "
               "PERCENTILE_CONT(wages, 0.5), APPROX_QUANTILES(age, 4) FROM slid");
  ASSERT_EQ(c.parts.size(), 4u);
  for (const auto& p : c.parts) EXPECT_EQ(p.max_contributions, 5);
  EXPECT_EQ(c.parts[0].aggregate, AggregateKind::kVariance);
  EXPECT_EQ(c.parts[1].aggregate, AggregateKind::kStddev);
  EXPECT_EQ(*c.parts[1].upper, 10);
  EXPECT_THAT(c.parts[2].quantiles, ::testing::ElementsAre(0.5));
  EXPECT_THAT(c.parts[3].quantiles, ::testing::ElementsAre(0, 0.25, 0.5, 0.75, 1));
  EXPECT_EQ(c.columns[3].type, "array<float64>");
}

TEST(SqlAnalyzerTest, AliasQualifiedColumnsAndPostProcessing) {
  CompiledStatement c = Compiled(
      DP
      "s.sex, 2 * COUNT(*) + 1 AS twice, SUM(s.wages) / COUNT(*) AS ratio FROM slid AS s "
      "WHERE s.sex IN ('Female') AND NOT s.age BETWEEN 1 AND 2 OR 30 < s.age GROUP BY s.sex "
      "ORDER BY 1, ratio");
  ASSERT_EQ(c.parts.size(), 3u);
  EXPECT_EQ(c.parts[0].where, "((sex IN ('Female') AND NOT (age BETWEEN 1 AND 2)) OR age > 30)");
  EXPECT_EQ(c.columns[1].expr.kind, OutputExpr::Kind::kBinary);
  EXPECT_EQ(c.columns[0].name, "sex");
  EXPECT_EQ(c.order_by[1].column, 2);
  EXPECT_EQ(c.delta, 0);  // sex has declared categories: no selection
}

// GROUP BY WIDTH_BUCKET compiles COUNT onto the flag histogram over the bucket edges.
TEST(SqlAnalyzerTest, WidthBucketIsTheHistogramOverItsEdges) {
  CompiledStatement c = Compiled(
      DP
      "WIDTH_BUCKET(age, 0, 100, 4) AS bucket, COUNT(*) AS n, COUNT(wages, "
      "contribution_bounds_per_group => (0, 3)) AS w FROM slid GROUP BY bucket ORDER BY bucket");
  ASSERT_EQ(c.parts.size(), 2u);
  EXPECT_TRUE(c.width_bucket);
  EXPECT_TRUE(c.group_by.empty());
  ASSERT_EQ(c.group_types.size(), 1u);
  EXPECT_EQ(c.group_types[0], ColumnType::kInteger);
  EXPECT_EQ(c.parts[0].aggregate, AggregateKind::kHistogram);
  EXPECT_EQ(c.parts[0].column, "age");
  EXPECT_EQ(c.parts[0].bins, (std::vector<double>{0, 25, 50, 75, 100}));
  EXPECT_EQ(c.parts[0].max_contributions, 1);
  EXPECT_EQ(c.parts[1].max_contributions, 3);
  EXPECT_EQ(c.parts[1].where, "wages IS NOT NULL");
  ASSERT_EQ(c.columns.size(), 3u);
  EXPECT_EQ(c.columns[0].type, "int64");
  EXPECT_EQ(c.columns[0].expr.kind, OutputExpr::Kind::kKey);
  EXPECT_EQ(c.columns[0].expr.index, 0);
  EXPECT_EQ(c.order_by.size(), 1u);

  // Explicit edges, with another group column: the bucket is the key's last value.
  CompiledStatement e =
      Compiled(DP
               "sex, WIDTH_BUCKET(age, (0, 18, 65, 120)) AS b, COUNT(*) FROM slid "
               "GROUP BY WIDTH_BUCKET(age, (0, 18, 65, 120)), sex");
  ASSERT_EQ(e.parts.size(), 1u);
  EXPECT_EQ(e.parts[0].bins, (std::vector<double>{0, 18, 65, 120}));
  EXPECT_EQ(e.parts[0].group_by, std::vector<std::string>{"sex"});
  EXPECT_EQ(e.group_types.size(), 2u);
  EXPECT_EQ(e.columns[1].expr.index, 1);
  EXPECT_EQ(e.columns[0].expr.index, 0);
}

TEST(SqlAnalyzerTest, DatasetOfRefusesTwoDatasets) {
  absl::StatusOr<Script> s = Parse(DP "COUNT(*) FROM slid; " DP "COUNT(*) FROM pbc");
  ASSERT_TRUE(s.ok());
  absl::StatusOr<std::string> d = DatasetOf(*s);
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(d.status().message()), HasSubstr("line 1, column 145"));
}

struct Refusal {
  const char* sql;
  absl::StatusCode code;
  const char* message;
  int line;
  int column;
};

class SqlAnalyzerRefusalTest : public ::testing::TestWithParam<Refusal> {};

TEST_P(SqlAnalyzerRefusalTest, NamesTheClauseAndItsPosition) {
  const Refusal& r = GetParam();
  absl::StatusOr<CompiledStatement> c = Compile(r.sql);
  ASSERT_FALSE(c.ok()) << r.sql;
  EXPECT_EQ(c.status().code(), r.code) << c.status();
  EXPECT_THAT(std::string(c.status().message()), HasSubstr(r.message));
  EXPECT_THAT(std::string(c.status().message()),
              HasSubstr("sql: line " + std::to_string(r.line) + ", column " +
                        std::to_string(r.column) + ":"));
}

constexpr auto kUnimpl = absl::StatusCode::kUnimplemented;
constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;
#define W "SELECT WITH DIFFERENTIAL_PRIVACY "

INSTANTIATE_TEST_SUITE_P(
    Refusals, SqlAnalyzerRefusalTest,
    ::testing::Values(
        Refusal{W "COUNT(*) FROM slid", kInvalid, "OPTIONS must give epsilon", 1, 34},
        Refusal{W "OPTIONS (delta = 0.1) COUNT(*) FROM slid", kInvalid, "must give epsilon", 1, 34},
        Refusal{W "OPTIONS (epsilon = 1, report_format = 'x') COUNT(*) FROM slid", kInvalid,
                "option report_format is not supported", 1, 56},
        Refusal{W "OPTIONS (epsilon = 1, group_selection_strategy = 'x') COUNT(*) FROM slid",
                kInvalid, "option group_selection_strategy", 1, 56},
        Refusal{W "OPTIONS (epsilon = 1, min_privacy_units_per_group = 5) COUNT(*) FROM slid",
                kInvalid, "option min_privacy_units_per_group", 1, 56},
        Refusal{W "OPTIONS (epsilon = 1, epsilon = 2) COUNT(*) FROM slid", kInvalid, "given twice",
                1, 56},
        Refusal{W "OPTIONS (epsilon = -1) COUNT(*) FROM slid", kInvalid, "epsilon must be > 0", 1,
                53},
        Refusal{W "OPTIONS (epsilon = 'a') COUNT(*) FROM slid", kInvalid, "must be a number", 1,
                53},
        Refusal{W "OPTIONS (epsilon = 2e6) COUNT(*) FROM slid", kInvalid, "epsilon", 1, 34},
        Refusal{W "OPTIONS (epsilon = 1, delta = 1e-30) COUNT(*) FROM slid GROUP BY language",
                kInvalid, "delta", 1, 34},
        Refusal{W "OPTIONS (epsilon = 1, delta = 1) COUNT(*) FROM slid", kInvalid, "delta must lie",
                1, 64},
        Refusal{W "OPTIONS (epsilon = 1, max_groups_contributed = 0.5) COUNT(*) FROM slid",
                kInvalid, "max_groups_contributed must be", 1, 81},
        Refusal{W "OPTIONS (epsilon = 1, privacy_unit_column = age) COUNT(*) FROM slid", kInvalid,
                "is not the privacy unit of slid, which is person_id", 1, 78},
        Refusal{DP "COUNT(*, epsilon => 0.5) FROM slid", kInvalid,
                "named argument epsilon is not supported by COUNT", 1, 65},
        Refusal{DP "COUNT(*, contribution_bounds_per_row => (0, 1)) FROM slid", kInvalid,
                "it takes contribution_bounds_per_group", 1, 65},
        Refusal{DP "VAR_POP(wages, contribution_bounds_per_group => (0, 1)) FROM slid", kInvalid,
                "it takes contribution_bounds_per_row", 1, 71},
        Refusal{DP "SUM(education) FROM slid", kInvalid, "education has no declared bounds", 1, 56},
        Refusal{DP "SUM(wages > 1) FROM slid", kInvalid,
                "SUM needs a numeric value; its argument is BOOL", 1, 60},
        Refusal{DP "SUM(COUNT(*)) FROM slid", kInvalid, "aggregates cannot be nested", 1, 60},
        Refusal{DP "MIN(wages) FROM slid", kUnimpl, "MIN is not supported", 1, 56},
        Refusal{DP "MAX(wages) FROM slid", kUnimpl, "MAX is not supported", 1, 56},
        Refusal{DP "ABS(wages) FROM slid", kUnimpl, "function ABS is not supported", 1, 56},
        Refusal{DP "SUM(sex) FROM slid", kInvalid, "SUM needs a numeric column; sex is text", 1,
                60},
        Refusal{DP "SUM(nope) FROM slid", kInvalid, "column nope does not exist in dataset slid", 1,
                60},
        Refusal{DP "SUM(t.wages) FROM slid", kInvalid, "unknown table t", 1, 60},
        Refusal{DP "age, COUNT(*) FROM slid", kInvalid, "age must be in GROUP BY", 1, 56},
        Refusal{DP "1 FROM slid", kInvalid, "needs at least one aggregate", 1, 1},
        Refusal{DP "* FROM slid", kUnimpl, "SELECT * is not supported", 1, 56},
        Refusal{DP "COUNT(*) FROM slid GROUP BY age + 1", kInvalid,
                "DP partition selection, which needs delta > 0", 1, 75},
        Refusal{DP "COUNT(*) FROM slid GROUP BY person_id", kInvalid, "privacy unit", 1, 84},
        Refusal{DP "COUNT(*) FROM slid GROUP BY sex, sex", kInvalid, "lists sex twice", 1, 89},
        Refusal{DP "language, COUNT(*) FROM slid GROUP BY language", kInvalid,
                "DP partition selection, which needs delta > 0", 1, 85},
        Refusal{DP "COUNT(*) FROM slid WHERE wages = NULL", kInvalid, "IS NULL", 1, 89},
        Refusal{DP "COUNT(*) FROM slid WHERE wages = sex", kInvalid, "STRING", 1, 81},
        Refusal{DP "COUNT(*) FROM slid WHERE education + 1 > 2", kInvalid, "education", 1, 81},
        Refusal{DP "COUNT(*) FROM slid WHERE COUNT(*) > 2", kInvalid,
                "WHERE cannot use an aggregate (COUNT)", 1, 81},
        Refusal{DP "COUNT(*) FROM slid WHERE sex = 3", kInvalid, "WHERE:", 1, 81},
        Refusal{DP "COUNT(*) FROM slid WHERE nope = 3", kInvalid, "column nope does not exist", 1,
                81},
        Refusal{DP "COUNT(*) AS n FROM slid ORDER BY wages", kUnimpl,
                "ORDER BY names an output column", 1, 89},
        Refusal{DP "COUNT(*) AS n FROM slid ORDER BY 2", kInvalid, "ORDER BY position", 1, 89},
        Refusal{DP "APPROX_QUANTILES(wages, 3) AS q FROM slid ORDER BY q", kInvalid, "array", 1,
                107},
        Refusal{DP "PERCENTILE_CONT(wages, 1.5) FROM slid", kInvalid, "lies in [0, 1]", 1, 79},
        Refusal{DP "APPROX_QUANTILES(wages, 0) FROM slid", kInvalid, "in [1, 99]", 1, 80},
        Refusal{DP "PERCENTILE_CONT(wages) FROM slid", kInvalid, "takes a column and a number", 1,
                56},
        Refusal{DP "SUM(wages) FROM slid GROUP BY WIDTH_BUCKET(age, 0, 100, 10)", kUnimpl,
                "SUM is not supported with a WIDTH_BUCKET group", 1, 56},
        Refusal{DP "PERCENTILE_CONT(age, 0.5) FROM slid GROUP BY WIDTH_BUCKET(age, 0, 100, 10)",
                kUnimpl, "PERCENTILE_CONT is not supported with a WIDTH_BUCKET", 1, 56},
        Refusal{DP "COUNT(*, contribution_bounds_per_group => (1, 3)) FROM slid GROUP BY "
                   "WIDTH_BUCKET(age, 0, 100, 10)",
                kUnimpl, "must start at 0", 1, 98},
        Refusal{DP "COUNT(*) FROM slid GROUP BY WIDTH_BUCKET(sex, 0, 100, 10)", kInvalid,
                "needs a numeric column; sex is text", 1, 97},
        Refusal{DP "COUNT(*) FROM slid GROUP BY WIDTH_BUCKET(person_id, 0, 100, 10)", kInvalid,
                "privacy unit", 1, 97},
        Refusal{DP "COUNT(*) FROM slid GROUP BY WIDTH_BUCKET(CAST(age AS STRING), 0, 100, 10)",
                kInvalid, "WIDTH_BUCKET needs a numeric value; this expression is STRING", 1, 97},
        Refusal{DP "COUNT(*) FROM slid GROUP BY WIDTH_BUCKET(nope, 0, 100, 10)", kInvalid,
                "column nope does not exist", 1, 97},
        Refusal{DP "COUNT(*) FROM slid GROUP BY WIDTH_BUCKET(age, 100, 0, 10)", kInvalid,
                "low must be < high", 1, 102},
        Refusal{DP "COUNT(*) FROM slid GROUP BY WIDTH_BUCKET(age, 0, 100, 0)", kInvalid,
                "number of buckets is a whole number in [1, 1000]", 1, 110},
        Refusal{DP "COUNT(*) FROM slid GROUP BY WIDTH_BUCKET(age, 0, 100, 2.5)", kInvalid,
                "number of buckets", 1, 110},
        Refusal{DP "COUNT(*) FROM slid GROUP BY WIDTH_BUCKET(age, 0, 1e16, 10)", kInvalid,
                "magnitude at most 1e15", 1, 105},
        Refusal{DP "COUNT(*) FROM slid GROUP BY WIDTH_BUCKET(age, (0, 18, 18))", kInvalid,
                "strictly increasing", 1, 110},
        Refusal{DP "COUNT(*) FROM slid GROUP BY WIDTH_BUCKET(age, 0, 100)", kInvalid,
                "WIDTH_BUCKET takes (column, low, high, buckets)", 1, 84},
        Refusal{DP "COUNT(*) FROM slid GROUP BY WIDTH_BUCKET(age, 18)", kInvalid,
                "edges are a list of numbers", 1, 102},
        Refusal{DP "WIDTH_BUCKET(age, 0, 100, 10), COUNT(*) FROM slid", kInvalid,
                "must be in GROUP BY to be selected", 1, 56},
        Refusal{DP "WIDTH_BUCKET(age, 0, 100, 5), COUNT(*) FROM slid GROUP BY "
                   "WIDTH_BUCKET(age, 0, 100, 10)",
                kInvalid, "differs from the one in GROUP BY", 1, 56},
        Refusal{DP "COUNT(*) FROM slid GROUP BY WIDTH_BUCKET(age, 0, 100, 10), "
                   "WIDTH_BUCKET(wages, 0, 100, 10)",
                kInvalid, "at most one WIDTH_BUCKET", 1, 115},
        Refusal{DP "COUNT(*) FROM slid WHERE WIDTH_BUCKET(age, 0, 100, 10) = 1", kUnimpl,
                "function WIDTH_BUCKET is not supported in a per-row expression", 1, 81},
        Refusal{DP "COUNT(*, contribution_bounds_per_group => (-1, 5)) FROM slid", kInvalid,
                "lower bound is a whole number of rows >= 0", 1, 98},
        Refusal{DP "COUNT(*, contribution_bounds_per_group => (1.5, 5)) FROM slid", kInvalid,
                "lower bound is a whole number of rows >= 0", 1, 98},
        Refusal{DP "COUNT(wages, contribution_bounds_per_group => (2, 2000000)) FROM slid",
                kInvalid, "whole number of rows in [1, 1000000]", 1, 102},
        Refusal{DP "COUNT(*, contribution_bounds_per_group => (0, 2.5)) FROM slid", kInvalid,
                "whole number of rows", 1, 98},
        Refusal{DP "SUM(wages, contribution_bounds_per_group => (5, 1)) FROM slid", kInvalid,
                "lower must be < upper", 1, 100},
        Refusal{DP "SUM(*) FROM slid", kInvalid, "SUM(*) is not defined", 1, 60},
        Refusal{DP "sex || 'x', COUNT(*) FROM slid GROUP BY sex", kInvalid,
                "unexpected character '|'", 1, 60},
        Refusal{DP "sex + 1, COUNT(*) FROM slid GROUP BY sex", kInvalid, "arithmetic needs numbers",
                1, 56},
        Refusal{DP "COUNT(*) > 1 FROM slid", kUnimpl, "the select list holds", 1, 56}));

// dpq's extensions (OPTIONS mechanism / max_rows_per_group, row-level SUM / AVG, keys stated
// by WHERE): every new refusal with its message and position.
INSTANTIATE_TEST_SUITE_P(
    ExtensionRefusals, SqlAnalyzerRefusalTest,
    ::testing::Values(
        Refusal{W "OPTIONS (epsilon = 1, mechanism = 'gaussian') COUNT(*) FROM slid", kInvalid,
                "mechanism 'gaussian' needs delta > 0", 1, 56},
        Refusal{W "OPTIONS (mechanism = gaussian, epsilon = 1, delta = 0) COUNT(*) FROM slid",
                kInvalid, "mechanism 'gaussian' needs delta > 0", 1, 43},
        Refusal{W "OPTIONS (epsilon = 1, mechanism = 'exponential') COUNT(*) FROM slid", kInvalid,
                "mechanism must be 'laplace' or 'gaussian'", 1, 68},
        Refusal{W "OPTIONS (epsilon = 1, mechanism = 1) COUNT(*) FROM slid", kInvalid,
                "mechanism must be 'laplace' or 'gaussian'", 1, 68},
        Refusal{W "OPTIONS (epsilon = 1, mechanism = t.gaussian) COUNT(*) FROM slid", kInvalid,
                "mechanism must be", 1, 68},
        Refusal{
            W "OPTIONS (epsilon = 1, mechanism = laplace, mechanism = laplace) COUNT(*) FROM slid",
            kInvalid, "option mechanism is given twice", 1, 77},
        Refusal{W "OPTIONS (epsilon = 1, max_rows_per_group = 0) VAR_POP(wages) FROM slid",
                kInvalid, "max_rows_per_group must be a whole number in [1, 1000000]", 1, 77},
        Refusal{W "OPTIONS (epsilon = 1, max_rows_per_group = 2.5) VAR_POP(wages) FROM slid",
                kInvalid, "max_rows_per_group must be a whole number", 1, 77},
        Refusal{W "OPTIONS (epsilon = 1, max_rows_per_group = 1000001) VAR_POP(wages) FROM slid",
                kInvalid, "max_rows_per_group must be a whole number", 1, 77},
        Refusal{W "OPTIONS (epsilon = 1, max_rows_per_group = '5') VAR_POP(wages) FROM slid",
                kInvalid, "max_rows_per_group must be a whole number", 1, 77},
        Refusal{W "OPTIONS (epsilon = 1, max_contributions = 5) VAR_POP(wages) FROM slid", kInvalid,
                "option max_contributions is not supported", 1, 56},
        Refusal{DP "SUM(wages, contribution_bounds_per_group => (0, 1), "
                   "contribution_bounds_per_row => (0, 1)) FROM slid",
                kInvalid,
                "SUM takes contribution_bounds_per_group (a unit's sum clamped) or "
                "contribution_bounds_per_row (rows clamped), not both",
                1, 108},
        Refusal{DP "AVG(wages, contribution_bounds_per_row => (0, 1), "
                   "contribution_bounds_per_group => (0, 1)) FROM slid",
                kInvalid, "AVG takes contribution_bounds_per_group (a unit's mean clamped) or", 1,
                106},
        Refusal{DP "AVG(wages, contribution_bounds_per_row => (0, 1), "
                   "contribution_bounds_per_row => (0, 2)) FROM slid",
                kInvalid, "contribution_bounds_per_row is given twice", 1, 106},
        Refusal{DP "SUM(wages, contribution_bounds_per_row => (5, 1)) FROM slid", kInvalid,
                "contribution_bounds_per_row: lower must be < upper", 1, 98},
        Refusal{DP "SUM(wages, max_rows_per_group => 3) FROM slid", kInvalid,
                "it takes contribution_bounds_per_group => (lower, upper) or "
                "contribution_bounds_per_row",
                1, 67},
        Refusal{W "OPTIONS (epsilon = 1, delta = 1e-6, mechanism = 'gaussian') COUNT(*), "
                  "PERCENTILE_CONT(wages, 0.5) FROM slid",
                kInvalid, "PERCENTILE_CONT uses the exponential mechanism", 1, 104},
        Refusal{W "OPTIONS (epsilon = 1, delta = 1e-6, mechanism = 'gaussian') "
                  "APPROX_QUANTILES(wages, 4) FROM slid",
                kInvalid, "mechanism 'gaussian' does not apply", 1, 94},
        Refusal{DP "language, COUNT(*) FROM slid WHERE language IN ('French', 'Other') AND "
                   "language = 'English' GROUP BY language",
                kInvalid, "WHERE admits no value of the GROUP BY column language", 1, 91},
        // Not key lists: NOT IN, OR, a float column. Partition selection then needs delta.
        Refusal{DP
                "language, COUNT(*) FROM slid WHERE language NOT IN ('French') GROUP BY language",
                kInvalid, "needs delta > 0", 1, 118},
        Refusal{
            DP
            "language, COUNT(*) FROM slid WHERE language = 'French' OR age > 3 GROUP BY language",
            kInvalid, "needs delta > 0", 1, 122},
        Refusal{DP "wages, COUNT(*) FROM slid WHERE wages IN (1, 2) GROUP BY wages", kInvalid,
                "needs delta > 0", 1, 104},
        Refusal{DP "age, COUNT(*) FROM slid WHERE age IN (30, 30.5) GROUP BY age", kInvalid,
                "needs delta > 0", 1, 104},
        Refusal{DP "age, COUNT(*) FROM slid WHERE sex = 'Female' GROUP BY age", kInvalid,
                "needs delta > 0", 1, 101}));

TEST(SqlAnalyzerTest, KeyListStatedByWhereHasThePlannersLimits) {
  std::string many = DP "age, COUNT(*) FROM slid WHERE age IN (0";
  for (int i = 1; i <= 10000; ++i) many += "," + std::to_string(i);
  many += ") GROUP BY age";
  absl::StatusOr<CompiledStatement> c = Compile(many);
  ASSERT_FALSE(c.ok());
  // 10001 keys take over 20000 tokens: the parser's limit refuses them before the analyser's
  // (kept for the planner's kMaxKeys should either limit change).
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("more than 20000 tokens"));
  const std::string long_key(257, 'x');
  c = Compile(DP "language, COUNT(*) FROM slid WHERE language = '" + long_key +
              "' GROUP BY language");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(
      std::string(c.status().message()),
      HasSubstr("sql: line 1, column 91: a key of language is at most 256 bytes without NUL"));
}

TEST(SqlAnalyzerTest, GaussianMechanismSplitsDeltaOverEveryPart) {
  CompiledStatement c = Compiled(
      "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6, mechanism = gaussian) "
      "COUNT(*), SUM(wages) FROM slid");
  ASSERT_EQ(c.parts.size(), 2u);
  for (const auto& p : c.parts) {
    EXPECT_EQ(p.mechanism, query::MechanismKind::kGaussian);
    EXPECT_EQ(p.delta, 5e-7);
  }
  EXPECT_EQ(c.delta, 1e-6);  // charged, unlike Laplace without partition selection
  // Grouped by a column without categories: each part's delta is again halved by the planner
  // (selection and Gaussian noise), exactly as one `--mechanism gaussian` flag query does.
  c = Compiled(
      "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6, "
      "mechanism = 'GAUSSIAN') language, COUNT(*) FROM slid GROUP BY language");
  ASSERT_EQ(c.parts.size(), 1u);
  EXPECT_EQ(c.parts[0].delta, 1e-6);
  absl::StatusOr<query::QueryPlan> plan = query::PlanQuery(c.parts[0], Slid());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->selection.needed);
  EXPECT_EQ(plan->components[0].delta, plan->selection.delta);
  // laplace, said explicitly, is the default.
  CompiledStatement l = Compiled(
      "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, "
      "mechanism = 'laplace') COUNT(*) FROM slid");
  EXPECT_EQ(l.parts[0].mechanism, query::MechanismKind::kLaplace);
  EXPECT_EQ(l.delta, 0);
}

TEST(SqlAnalyzerTest, MaxRowsPerGroupIsTheRowClampedK) {
  CompiledStatement c = Compiled(
      "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, max_rows_per_group = 3) "
      "VAR_POP(wages), PERCENTILE_CONT(age, 0.5), SUM(wages, contribution_bounds_per_row => (0, 50)), "
      "COUNT(*), SUM(wages), AVG(wages) FROM slid");
  ASSERT_EQ(c.parts.size(), 6u);
  EXPECT_EQ(c.parts[0].max_contributions, 3);
  EXPECT_EQ(c.parts[1].max_contributions, 3);
  EXPECT_EQ(c.parts[2].max_contributions, 3);
  EXPECT_FALSE(c.parts[2].pre_aggregate);
  // No effect on COUNT (its K is the per-group bound) nor on per-unit SUM / AVG (K = 1).
  EXPECT_EQ(c.parts[3].max_contributions, 1);
  EXPECT_EQ(c.parts[4].max_contributions, 1);
  EXPECT_TRUE(c.parts[4].pre_aggregate);
  EXPECT_EQ(c.parts[5].max_contributions, 1);
}

TEST(SqlAnalyzerTest, RowLevelSumAndAvgClampRows) {
  CompiledStatement c = Compiled(DP
                                 "SUM(wages, contribution_bounds_per_row => (0, 50)), "
                                 "AVG(age, contribution_bounds_per_row => (18, 65)) FROM slid");
  ASSERT_EQ(c.parts.size(), 2u);
  EXPECT_EQ(c.parts[0].aggregate, AggregateKind::kSum);
  EXPECT_FALSE(c.parts[0].pre_aggregate);
  EXPECT_EQ(c.parts[0].max_contributions, 5);
  EXPECT_EQ(*c.parts[0].lower, 0);
  EXPECT_EQ(*c.parts[0].upper, 50);
  EXPECT_EQ(c.parts[1].aggregate, AggregateKind::kMean);
  EXPECT_FALSE(c.parts[1].pre_aggregate);
  EXPECT_EQ(*c.parts[1].lower, 18);
  // Without a bounds argument SUM / AVG stay per unit with the declared bounds.
  c = Compiled(DP "SUM(wages), AVG(wages) FROM slid");
  EXPECT_TRUE(c.parts[0].pre_aggregate);
  EXPECT_TRUE(c.parts[1].pre_aggregate);
}

TEST(SqlAnalyzerTest, WhereStatesTheKeyListOfTheGroupColumn) {
  // No delta: the keys are the query's, nothing is selected from the data.
  CompiledStatement c = Compiled(
      DP
      "language, COUNT(*) FROM slid WHERE age > 3 AND language IN ('French', 'Other', 'French') "
      "GROUP BY language");
  ASSERT_EQ(c.parts.size(), 1u);
  EXPECT_THAT(c.parts[0].keys, ::testing::ElementsAre("French", "Other"));
  EXPECT_EQ(c.parts[0].delta, 0);
  EXPECT_EQ(c.delta, 0);
  // `literal = column`, a qualified column, and the intersection of two lists.
  c = Compiled(DP
               "s.language, COUNT(*) FROM slid s WHERE 'English' = s.language AND "
               "language IN ('English', 'French') GROUP BY language");
  EXPECT_THAT(c.parts[0].keys, ::testing::ElementsAre("English"));
  // An integer column: whole numbers, written as PostgreSQL prints them.
  c = Compiled(DP "age, COUNT(*) FROM slid WHERE age IN (30, 4e1, -0, 31.0) GROUP BY age");
  EXPECT_THAT(c.parts[0].keys, ::testing::ElementsAre("30", "40", "0", "31"));
  // A column with declared categories: the list replaces them, as --keys does.
  c = Compiled(DP "sex, COUNT(*) FROM slid WHERE sex = 'Female' GROUP BY sex");
  EXPECT_THAT(c.parts[0].keys, ::testing::ElementsAre("Female"));
  // Two group columns: no key list (the flag --keys takes one column), categories as before.
  c = Compiled(
      "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6) sex, language, "
      "COUNT(*) FROM slid WHERE language = 'French' GROUP BY sex, language");
  EXPECT_TRUE(c.parts[0].keys.empty());
  EXPECT_EQ(c.parts[0].delta, 1e-6);
  // Under OR or NOT the list is not a domain.
  absl::StatusOr<CompiledStatement> r =
      Compile(DP "language, COUNT(*) FROM slid WHERE NOT language IN ('a') GROUP BY language");
  EXPECT_FALSE(r.ok());
  // Every part of the statement carries the list.
  c = Compiled(
      DP "language, COUNT(*), SUM(wages) FROM slid WHERE language = 'French' GROUP BY language");
  ASSERT_EQ(c.parts.size(), 2u);
  EXPECT_THAT(c.parts[1].keys, ::testing::ElementsAre("French"));
}

// Where a flag query and a SQL statement mean the same thing, both give the same plan: the same
// sensitivity, K, M, noise components (each epsilon, delta and sensitivity), the same charge in
// ledger units and the same bounding of the scan.
struct Equivalence {
  const char* sql;
  query::QuerySpec flags;
};

query::QuerySpec Flags(AggregateKind agg, const char* column, int k, double eps,
                       absl::optional<double> lo = absl::nullopt,
                       absl::optional<double> hi = absl::nullopt) {
  query::QuerySpec s;
  s.dataset = "slid";
  s.aggregate = agg;
  s.column = column;
  s.max_contributions = k;
  s.epsilon = eps;
  s.lower = lo;
  s.upper = hi;
  return s;
}

class FlagSqlPlanTest : public ::testing::TestWithParam<Equivalence> {};

TEST_P(FlagSqlPlanTest, SamePlan) {
  const Equivalence& e = GetParam();
  CompiledStatement c = Compiled(e.sql);
  ASSERT_EQ(c.parts.size(), 1u);
  absl::StatusOr<query::QueryPlan> sql = query::PlanQuery(c.parts[0], Slid());
  absl::StatusOr<query::QueryPlan> flag = query::PlanQuery(e.flags, Slid());
  ASSERT_TRUE(sql.ok()) << sql.status();
  ASSERT_TRUE(flag.ok()) << flag.status();
  EXPECT_EQ(sql->epsilon_units, flag->epsilon_units);
  EXPECT_EQ(sql->delta_units, flag->delta_units);
  EXPECT_EQ(sql->scan.max_contributions, flag->scan.max_contributions);
  EXPECT_EQ(sql->scan.max_partitions, flag->scan.max_partitions);
  EXPECT_EQ(sql->scan.clamp_lower, flag->scan.clamp_lower);
  EXPECT_EQ(sql->scan.clamp_upper, flag->scan.clamp_upper);
  EXPECT_EQ(sql->selection.needed, flag->selection.needed);
  EXPECT_EQ(sql->selection.epsilon, flag->selection.epsilon);
  EXPECT_EQ(sql->quantile_epsilon, flag->quantile_epsilon);
  EXPECT_EQ(sql->selection.delta, flag->selection.delta);
  EXPECT_EQ(sql->spec.mechanism, flag->spec.mechanism);
  EXPECT_EQ(sql->declared_keys, flag->declared_keys);
  EXPECT_EQ(sql->scan.group_domains, flag->scan.group_domains);
  ASSERT_EQ(sql->components.size(), flag->components.size());
  for (size_t i = 0; i < sql->components.size(); ++i) {
    EXPECT_EQ(sql->components[i].statistic, flag->components[i].statistic);
    EXPECT_EQ(sql->components[i].epsilon, flag->components[i].epsilon);
    EXPECT_EQ(sql->components[i].delta, flag->components[i].delta);
    EXPECT_EQ(sql->components[i].sensitivity, flag->components[i].sensitivity);
  }
  // The fingerprints differ only by the per-unit pre-aggregation marker when the flag twin
  // omits --per-unit (never for the row-level aggregates), so a flag answer and its SQL twin
  // share the result cache.
  if (!c.parts[0].pre_aggregate || e.flags.pre_aggregate) {
    EXPECT_EQ(sql->fingerprint, flag->fingerprint);
  }
  // (Rows whose flag twin is the row-level K = 1 aggregate differ in the scan's reduction only.)
  if (e.flags.pre_aggregate) {
    EXPECT_EQ(sql->scan.pre_aggregate, flag->scan.pre_aggregate);
  }
  EXPECT_EQ(sql->scan.pre_aggregate_count, flag->scan.pre_aggregate_count);
  EXPECT_EQ(sql->scan.bucket_edges, flag->scan.bucket_edges);
  EXPECT_EQ(sql->spec.where, flag->spec.where);
}

query::QuerySpec Gaussian(query::QuerySpec s, double delta) {
  s.mechanism = query::MechanismKind::kGaussian;
  s.delta = delta;
  return s;
}

query::QuerySpec Keys(query::QuerySpec s, std::string by, std::vector<std::string> keys) {
  s.group_by = {std::move(by)};
  s.keys = std::move(keys);
  return s;
}

// The flag query with --per-unit (QueryRequest.per_unit).
query::QuerySpec PerUnit(query::QuerySpec s) {
  s.pre_aggregate = true;
  return s;
}

query::QuerySpec Bins(query::QuerySpec s, std::vector<double> edges) {
  s.bins = std::move(edges);
  return s;
}

query::QuerySpec Where(query::QuerySpec s, const char* where) {
  s.where = where;
  return s;
}

query::QuerySpec Grouped(query::QuerySpec s, std::vector<std::string> by, int m, double delta = 0) {
  s.group_by = std::move(by);
  s.max_partitions = m;
  s.delta = delta;
  return s;
}

query::QuerySpec Quantiles(query::QuerySpec s, std::vector<double> q) {
  s.quantiles = std::move(q);
  return s;
}

INSTANTIATE_TEST_SUITE_P(
    Table, FlagSqlPlanTest,
    ::testing::Values(
        Equivalence{DP "COUNT(*) FROM slid", Flags(AggregateKind::kCount, "", 1, 1)},
        Equivalence{DP "COUNT(*, contribution_bounds_per_group => (0, 5)) FROM slid",
                    Flags(AggregateKind::kCount, "", 5, 1)},
        Equivalence{DP "VAR_POP(wages) FROM slid", Flags(AggregateKind::kVariance, "wages", 5, 1)},
        Equivalence{DP "STDDEV_POP(wages, contribution_bounds_per_row => (10, 20)) FROM slid",
                    Flags(AggregateKind::kStddev, "wages", 5, 1, 10.0, 20.0)},
        Equivalence{DP "PERCENTILE_CONT(age, 0.5) FROM slid",
                    Quantiles(Flags(AggregateKind::kQuantile, "age", 5, 1), {0.5})},
        Equivalence{DP "APPROX_QUANTILES(age, 2) FROM slid",
                    Quantiles(Flags(AggregateKind::kQuantile, "age", 5, 1), {0, 0.5, 1})},
        // One row per unit and group: a pre-aggregated sum / mean is the row-level one with K = 1.
        Equivalence{DP "SUM(wages) FROM slid", Flags(AggregateKind::kSum, "wages", 1, 1)},
        Equivalence{DP "AVG(wages, contribution_bounds_per_group => (0, 50)) FROM slid",
                    Flags(AggregateKind::kMean, "wages", 1, 1, 0.0, 50.0)},
        Equivalence{
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 2, max_groups_contributed = 2) "
            "sex, COUNT(*) FROM slid GROUP BY sex",
            Grouped(Flags(AggregateKind::kCount, "", 1, 2), {"sex"}, 2)},
        Equivalence{"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6) "
                    "language, COUNT(*, contribution_bounds_per_group => (0, 3)) FROM slid "
                    "GROUP BY language",
                    Grouped(Flags(AggregateKind::kCount, "", 3, 1), {"language"}, 1, 1e-6)},
        Equivalence{
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6, "
            "max_groups_contributed = 3) language, VAR_POP(wages) FROM slid GROUP BY language",
            Grouped(Flags(AggregateKind::kVariance, "wages", 5, 1), {"language"}, 3, 1e-6)},
        // COUNT with a lower bound above 0: the per-unit count, `--per-unit --lower L --upper U`.
        Equivalence{DP "COUNT(*, contribution_bounds_per_group => (1, 5)) FROM slid",
                    PerUnit(Flags(AggregateKind::kCount, "", 1, 1, 1.0, 5.0))},
        Equivalence{
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, max_groups_contributed = 2) "
            "sex, COUNT(wages, contribution_bounds_per_group => (2, 3)) FROM slid GROUP BY sex",
            Where(Grouped(PerUnit(Flags(AggregateKind::kCount, "", 1, 1, 2.0, 3.0)), {"sex"}, 2),
                  "wages IS NOT NULL")},
        // GROUP BY WIDTH_BUCKET: the flag histogram over the same edges (--bins), K = COUNT's U.
        Equivalence{
            DP "WIDTH_BUCKET(age, 0, 120, 6) AS b, COUNT(*) FROM slid GROUP BY b",
            Bins(Flags(AggregateKind::kHistogram, "age", 1, 1), {0, 20, 40, 60, 80, 100, 120})},
        Equivalence{
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 2, max_groups_contributed = 2) "
            "sex, COUNT(*, contribution_bounds_per_group => (0, 3)) FROM slid "
            "GROUP BY sex, WIDTH_BUCKET(wages, (0, 10, 50, 100))",
            Grouped(Bins(Flags(AggregateKind::kHistogram, "wages", 3, 2), {0, 10, 50, 100}),
                    {"sex"}, 2)},
        Equivalence{"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-5) "
                    "language, COUNT(*) FROM slid GROUP BY language, WIDTH_BUCKET(age, 0, 100, 2)",
                    Grouped(Bins(Flags(AggregateKind::kHistogram, "age", 1, 1), {0, 50, 100}),
                            {"language"}, 1, 1e-5)},
        // Lower bound 0 with --per-unit is the row-level count with K = U: one plan, one fingerprint.
        Equivalence{DP "COUNT(*, contribution_bounds_per_group => (0, 4)) FROM slid",
                    PerUnit(Flags(AggregateKind::kCount, "", 1, 1, 0.0, 4.0))},
        // max_rows_contributed = K (ZetaSQL: K rows per unit in the whole statement) is the flag
        // histogram's bound: over a text column's categories (declared, or selected with delta),
        // over WIDTH_BUCKET's bins, or an ungrouped count with K rows.
        Equivalence{
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, max_rows_contributed = 3) "
            "sex, COUNT(*) AS n FROM slid GROUP BY sex",
            Flags(AggregateKind::kHistogram, "sex", 3, 1)},
        Equivalence{"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-5, "
                    "max_rows_contributed = 2) language, COUNT(*) FROM slid GROUP BY language",
                    Grouped(Flags(AggregateKind::kHistogram, "language", 2, 1), {}, 1, 1e-5)},
        Equivalence{
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, max_rows_contributed = 4) "
            "WIDTH_BUCKET(age, 0, 100, 2) AS b, COUNT(*) FROM slid GROUP BY b",
            Bins(Flags(AggregateKind::kHistogram, "age", 4, 1), {0, 50, 100})},
        Equivalence{
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, max_rows_contributed = 2) "
            "COUNT(*) FROM slid",
            Flags(AggregateKind::kCount, "", 2, 1)},
        // PERCENTILE_CONTs of one column and bounds are one quantile part: --quantiles q1,q2,q3.
        Equivalence{
            DP "PERCENTILE_CONT(age, 0.1) AS p10, PERCENTILE_CONT(age, 0.5), "
               "PERCENTILE_CONT(age, 0.9) FROM slid",
            Quantiles(Flags(AggregateKind::kQuantile, "age", 5, 1, 0.0, 120.0), {0.1, 0.5, 0.9})}));

TEST(SqlAnalyzerTest, PercentilesOfOneColumnShareAPartAndReadTheirOwnLevel) {
  CompiledStatement c =
      Compiled(DP
               "PERCENTILE_CONT(age, 0.9), PERCENTILE_CONT(age, 0.1), PERCENTILE_CONT(age, 0.9), "
               "PERCENTILE_CONT(wages, 0.5), "
               "PERCENTILE_CONT(age, 0.5, contribution_bounds_per_row => (0, 60)) FROM slid");
  // age [declared bounds] with 0.9 and 0.1 (0.9 asked twice: one level); wages; age on [0, 60].
  ASSERT_EQ(c.parts.size(), 3u);
  EXPECT_EQ(c.parts[0].quantiles, (std::vector<double>{0.9, 0.1}));
  EXPECT_EQ(c.parts[1].column, "wages");
  EXPECT_EQ(c.parts[2].quantiles, (std::vector<double>{0.5}));
  ASSERT_EQ(c.columns.size(), 5u);
  const std::vector<std::pair<int, int>> read = {{0, 0}, {0, 1}, {0, 0}, {1, 0}, {2, 0}};
  for (size_t i = 0; i < read.size(); ++i) {
    EXPECT_EQ(c.columns[i].expr.kind, OutputExpr::Kind::kPart) << i;
    EXPECT_EQ(c.columns[i].expr.index, read[i].first) << i;
    EXPECT_EQ(c.columns[i].expr.level, read[i].second) << i;
  }
  // Three parts share epsilon 1 (the statement's charge), not five.
  EXPECT_NEAR(c.parts[0].epsilon + c.parts[1].epsilon + c.parts[2].epsilon, 1, 1e-12);
}

INSTANTIATE_TEST_SUITE_P(
    MaxRowsContributedRefusals, SqlAnalyzerRefusalTest,
    ::testing::Values(
        Refusal{W "OPTIONS (epsilon = 1, max_rows_contributed = 0) COUNT(*) FROM slid", kInvalid,
                "max_rows_contributed must be a whole number", 1, 79},
        Refusal{W "OPTIONS (epsilon = 1, max_rows_contributed = 2, max_groups_contributed = 1) "
                  "COUNT(*) FROM slid",
                kInvalid, "give max_groups_contributed or max_rows_contributed, not both", 1, 56},
        Refusal{W "OPTIONS (epsilon = 1, max_rows_contributed = 2) SUM(age) FROM slid", kUnimpl,
                "SUM is not supported with max_rows_contributed", 1, 82},
        Refusal{W "OPTIONS (epsilon = 1, max_rows_contributed = 2) "
                  "COUNT(*, contribution_bounds_per_group => (0, 3)) FROM slid",
                kInvalid, "COUNT takes no contribution_bounds_per_group", 1, 124},
        Refusal{
            W
            "OPTIONS (epsilon = 1, max_rows_contributed = 2) age, COUNT(*) FROM slid GROUP BY age",
            kUnimpl, "GROUP BY one text column", 1, 106},
        Refusal{W "OPTIONS (epsilon = 1, max_rows_contributed = 2) sex, COUNT(*) FROM slid "
                  "WHERE sex = 'Female' GROUP BY sex",
                kUnimpl, "no key list in WHERE", 1, 127},
        Refusal{W "OPTIONS (epsilon = 1, max_rows_contributed = 2) sex, COUNT(*) FROM slid "
                  "GROUP BY sex, WIDTH_BUCKET(age, 0, 100, 2)",
                kUnimpl, "WIDTH_BUCKET group must be the only GROUP BY item", 1, 106}));

#define DPX(OPTS) "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (" OPTS ") "

// dpq's extensions and their flag twins: `query --mechanism gaussian --delta D`,
// `--max-contributions K`, row-level `--aggregate sum|mean --lower --upper`, `--keys`.
INSTANTIATE_TEST_SUITE_P(
    Extensions, FlagSqlPlanTest,
    ::testing::Values(
        Equivalence{DPX("epsilon = 1, delta = 1e-6, mechanism = 'gaussian'") "COUNT(*) FROM slid",
                    Gaussian(Flags(AggregateKind::kCount, "", 1, 1), 1e-6)},
        Equivalence{
            DPX("epsilon = 2, delta = 1e-5, mechanism = gaussian") "VAR_POP(wages) FROM slid",
            Gaussian(Flags(AggregateKind::kVariance, "wages", 5, 2), 1e-5)},
        Equivalence{
            DPX("epsilon = 1, delta = 1e-6, mechanism = gaussian") "SUM(wages, contribution_bounds_per_group => (0, 80)) FROM slid",
            Gaussian(PerUnit(Flags(AggregateKind::kSum, "wages", 1, 1, 0.0, 80.0)), 1e-6)},
        Equivalence{
            DPX("epsilon = 1, delta = 1e-6, mechanism = 'gaussian', max_groups_contributed = 2") "language, COUNT(*) FROM slid GROUP BY language",
            Gaussian(Grouped(Flags(AggregateKind::kCount, "", 1, 1), {"language"}, 2), 1e-6)},
        Equivalence{
            DPX("epsilon = 1, delta = 1e-6, mechanism = 'gaussian', max_groups_contributed = 2") "sex, AVG(age, contribution_bounds_per_row => (18, 65)) FROM slid GROUP BY sex",
            Gaussian(Grouped(Flags(AggregateKind::kMean, "age", 5, 1, 18.0, 65.0), {"sex"}, 2),
                     1e-6)},
        Equivalence{DPX("epsilon = 1, max_rows_per_group = 3") "VAR_POP(wages) FROM slid",
                    Flags(AggregateKind::kVariance, "wages", 3, 1)},
        Equivalence{DPX("epsilon = 1, max_rows_per_group = 1") "STDDEV_POP(age) FROM slid",
                    Flags(AggregateKind::kStddev, "age", 1, 1)},
        Equivalence{
            DPX("epsilon = 1, max_rows_per_group = 12") "PERCENTILE_CONT(age, 0.25) FROM slid",
            Quantiles(Flags(AggregateKind::kQuantile, "age", 12, 1), {0.25})},
        Equivalence{
            DPX("epsilon = 1, max_rows_per_group = 7") "COUNT(*, contribution_bounds_per_group => (0, 2)) FROM slid",
            Flags(AggregateKind::kCount, "", 2, 1)},
        Equivalence{DP "SUM(wages, contribution_bounds_per_row => (0, 50)) FROM slid",
                    Flags(AggregateKind::kSum, "wages", 5, 1, 0.0, 50.0)},
        Equivalence{
            DPX("epsilon = 3, max_rows_per_group = 2") "AVG(wages, contribution_bounds_per_row => (10, 90)) FROM slid",
            Flags(AggregateKind::kMean, "wages", 2, 3, 10.0, 90.0)},
        Equivalence{
            DPX("epsilon = 1, delta = 1e-6, max_groups_contributed = 2") "language, SUM(age, contribution_bounds_per_row => (0, 100)) FROM slid "
                                                                         "GROUP BY language",
            Grouped(Flags(AggregateKind::kSum, "age", 5, 1, 0.0, 100.0), {"language"}, 2, 1e-6)},
        Equivalence{
            DP "language, COUNT(*) FROM slid WHERE language IN ('French', 'Other') "
               "GROUP BY language",
            Where(Keys(Flags(AggregateKind::kCount, "", 1, 1), "language", {"French", "Other"}),
                  "language IN ('French', 'Other')")},
        Equivalence{
            DPX("epsilon = 1, max_groups_contributed = 2") "age, VAR_POP(wages) FROM slid WHERE age IN (30, 40) GROUP BY age",
            Where(Grouped(Keys(Flags(AggregateKind::kVariance, "wages", 5, 1), "age", {"30", "40"}),
                          {"age"}, 2),
                  "age IN (30, 40)")},
        Equivalence{DP "sex, COUNT(*) FROM slid WHERE sex = 'Female' GROUP BY sex",
                    Where(Keys(Flags(AggregateKind::kCount, "", 1, 1), "sex", {"Female"}),
                          "sex = 'Female'")},
        // Keys and Gaussian: no selection, all of delta for the noise.
        Equivalence{
            DPX("epsilon = 1, delta = 1e-6, mechanism = gaussian") "language, COUNT(*) FROM slid WHERE language = 'French' GROUP BY language",
            Where(Gaussian(Keys(Flags(AggregateKind::kCount, "", 1, 1), "language", {"French"}),
                           1e-6),
                  "language = 'French'")}));

// ---- Per-row expressions in WHERE and GROUP BY (analyzer_expressions.cc) ----

// The refusal's code, a part of its message and its SQL position.
void ExpectRefused(absl::string_view sql, absl::StatusCode code, absl::string_view message,
                   int column) {
  absl::StatusOr<CompiledStatement> c = Compile(sql);
  ASSERT_FALSE(c.ok()) << sql;
  EXPECT_EQ(c.status().code(), code) << sql << ": " << c.status();
  EXPECT_THAT(std::string(c.status().message()), HasSubstr(std::string(message))) << sql;
  EXPECT_THAT(std::string(c.status().message()),
              HasSubstr("sql: line 1, column " + std::to_string(column) + ":"))
      << sql << ": " << c.status();
}

#define DPD "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6) "

TEST(SqlAnalyzerExpressionTest, WhereInTheFilterLanguageStaysAFilter) {
  CompiledStatement c =
      Compiled(DP "COUNT(*), SUM(wages) FROM slid WHERE age >= 30 AND sex = 'Male'");
  for (const auto& p : c.parts) {
    EXPECT_EQ(p.where, "(age >= 30 AND sex = 'Male')");
    EXPECT_EQ(p.row_condition, nullptr);
  }
}

TEST(SqlAnalyzerExpressionTest, WhereOutsideTheFilterLanguageIsTheRowConditionOfEveryPart) {
  CompiledStatement c =
      Compiled(DP
               "COUNT(*), SUM(wages) FROM slid WHERE wages > age AND CASE WHEN sex = 'Male' THEN 1 "
               "ELSE 0 END = 1");
  ASSERT_EQ(c.parts.size(), 2u);
  for (const auto& p : c.parts) {
    EXPECT_EQ(p.where, "");
    ASSERT_NE(p.row_condition, nullptr);
    EXPECT_EQ(p.row_condition->kind, query::expression::Expr::Kind::kBinary);
    EXPECT_EQ(p.row_condition->op, query::expression::Op::kAnd);
    EXPECT_EQ(p.row_condition->children[0].children[1].name, "age");
  }
  EXPECT_EQ(c.parts[0].row_condition, c.parts[1].row_condition);  // one tree, shared
  // COUNT(col) still adds its IS NOT NULL to the filter, beside the row condition.
  CompiledStatement n = Compiled(DP "COUNT(wages) FROM slid WHERE ABS(wages - 50) < age");
  EXPECT_EQ(n.parts[0].where, "wages IS NOT NULL");
  EXPECT_NE(n.parts[0].row_condition, nullptr);
}

TEST(SqlAnalyzerExpressionTest, KeyListsStatedByWhereKeepWorkingBesideARowCondition) {
  CompiledStatement c = Compiled(
      DP
      "language, COUNT(*) FROM slid WHERE language IN ('French', 'English') AND wages > age "
      "GROUP BY language");
  EXPECT_THAT(c.parts[0].keys, ::testing::ElementsAre("French", "English"));
  EXPECT_NE(c.parts[0].row_condition, nullptr);
  EXPECT_EQ(c.delta, 0);  // public keys: no partition selection
}

TEST(SqlAnalyzerExpressionTest, WhereRefusalsNameTheirPosition) {
  const auto invalid = absl::StatusCode::kInvalidArgument;
  ExpectRefused(DP "COUNT(*) FROM slid WHERE age + 1", invalid,
                "WHERE needs a condition (BOOL), not a value of type INT64", 81);
  ExpectRefused(DP "COUNT(*) FROM slid WHERE wages > nope", invalid, "column nope does not exist",
                89);
  ExpectRefused(DP "COUNT(*) FROM slid s WHERE t.wages > age", invalid, "unknown table t", 83);
  ExpectRefused(DP "COUNT(*) FROM slid WHERE wages / (age - 30) > 1", invalid,
                "division by \"(age - 30)\"", 81);
  ExpectRefused(DP "COUNT(*) FROM slid WHERE age > 1 AND SUM(wages) > 2", invalid,
                "WHERE cannot use an aggregate (SUM)", 93);
  ExpectRefused(DP "COUNT(*) FROM slid WHERE UPPER(sex) = 'MALE'", absl::StatusCode::kUnimplemented,
                "function UPPER is not supported in a per-row expression", 81);
  // Still the filter language's own refusal, not a row condition.
  ExpectRefused(DP "COUNT(*) FROM slid WHERE wages = NULL OR wages > age", invalid,
                "comparison with NULL is never true", 89);
}

TEST(SqlAnalyzerExpressionTest, GroupByAnExpressionIsAKeyLabelledByItsCanonicalText) {
  CompiledStatement c =
      Compiled(DPD "age  +  1, COUNT(*) AS n FROM slid GROUP BY (age + 1) ORDER BY 1");
  ASSERT_EQ(c.group_by.size(), 1u);
  EXPECT_EQ(c.group_by[0], "(age + 1)");
  EXPECT_EQ(c.group_types[0], ColumnType::kInteger);
  ASSERT_EQ(c.parts.size(), 1u);
  EXPECT_EQ(c.parts[0].group_by, c.group_by);
  ASSERT_EQ(c.parts[0].group_expressions.size(), 1u);
  ASSERT_NE(c.parts[0].group_expressions[0], nullptr);
  EXPECT_EQ(c.parts[0].group_expressions[0]->op, query::expression::Op::kAdd);
  EXPECT_TRUE(c.parts[0].keys.empty());
  EXPECT_EQ(c.delta, 1e-6);  // keys selected from the data
  ASSERT_EQ(c.columns.size(), 2u);
  EXPECT_EQ(c.columns[0].name, "f0_");
  EXPECT_EQ(c.columns[0].type, "int64");
  EXPECT_EQ(c.columns[0].expr.kind, OutputExpr::Kind::kKey);
  EXPECT_EQ(c.columns[0].expr.index, 0);
}

TEST(SqlAnalyzerExpressionTest, GroupByTheAliasOfACaseOfLiteralsReleasesItsPublicKeys) {
  CompiledStatement c = Compiled(
      DP
      "CASE WHEN age < 30 THEN 'young' WHEN age < 60 THEN 'middle' ELSE 'old' END AS band, "
      "COUNT(*) AS n, AVG(wages) FROM slid GROUP BY band ORDER BY band");
  ASSERT_EQ(c.group_by.size(), 1u);
  EXPECT_EQ(c.group_by[0], "band");
  EXPECT_EQ(c.group_types[0], ColumnType::kText);
  ASSERT_EQ(c.parts.size(), 2u);
  for (const auto& p : c.parts) {
    EXPECT_THAT(p.keys, ::testing::ElementsAre("young", "middle", "old"));
    ASSERT_EQ(p.group_expressions.size(), 1u);
    EXPECT_EQ(p.group_expressions[0]->kind, query::expression::Expr::Kind::kCase);
    EXPECT_EQ(p.delta, 0);
  }
  EXPECT_EQ(c.delta, 0);  // no partition selection, so epsilon alone suffices
  EXPECT_EQ(c.columns[0].name, "band");
  EXPECT_EQ(c.columns[0].type, "string");
  EXPECT_EQ(c.columns[0].expr.kind, OutputExpr::Kind::kKey);
  ASSERT_EQ(c.order_by.size(), 1u);
  EXPECT_EQ(c.order_by[0].column, 0);
}

TEST(SqlAnalyzerExpressionTest, TheExpressionWrittenInGroupByTakesTheSelectedAlias) {
  CompiledStatement c = Compiled(DPD "wages / 2 AS half, COUNT(*) FROM slid GROUP BY sex, wages/2");
  EXPECT_THAT(c.group_by, ::testing::ElementsAre("sex", "half"));
  EXPECT_THAT(c.group_types, ::testing::ElementsAre(ColumnType::kText, ColumnType::kDouble));
  ASSERT_EQ(c.parts[0].group_expressions.size(), 2u);
  EXPECT_EQ(c.parts[0].group_expressions[0], nullptr);  // sex: a column
  EXPECT_NE(c.parts[0].group_expressions[1], nullptr);
  EXPECT_EQ(c.columns[0].type, "float64");
  EXPECT_EQ(c.columns[0].expr.index, 1);
}

TEST(SqlAnalyzerExpressionTest, SeveralKeysWithDeclaredDomainsNeedNoDelta) {
  CompiledStatement c = Compiled(DP
                                 "sex, IF(age >= 65, 'retired', 'working') AS status, COUNT(*) "
                                 "FROM slid GROUP BY sex, status");
  EXPECT_THAT(c.group_by, ::testing::ElementsAre("sex", "status"));
  EXPECT_TRUE(c.parts[0].keys.empty());  // the planner crosses the domains (categories, results)
  EXPECT_EQ(c.delta, 0);
  EXPECT_EQ(c.columns[1].expr.index, 1);
  // A comparison has no literal results: its keys are selected, which needs delta.
  ExpectRefused(DP "COUNT(*) FROM slid GROUP BY sex, age > 30", absl::StatusCode::kInvalidArgument,
                "needs delta > 0", 75);
  CompiledStatement b = Compiled(DPD "age > 30, COUNT(*) FROM slid GROUP BY age > 30");
  EXPECT_THAT(b.group_by, ::testing::ElementsAre("(age > 30)"));
  EXPECT_EQ(b.columns[0].type, "string");  // a BOOL key is released as text
  EXPECT_EQ(b.columns[0].expr.kind, OutputExpr::Kind::kKey);
}

TEST(SqlAnalyzerExpressionTest, AColumnOfTheAliasNameWinsOverTheAlias) {
  // GROUP BY sex reads the column sex, so the CASE aliased sex is no key.
  ExpectRefused(DP "CASE WHEN age < 30 THEN 1 ELSE 2 END AS sex, COUNT(*) FROM slid GROUP BY sex",
                absl::StatusCode::kUnimplemented, "the select list holds group keys", 56);
  // GROUP BY a (no column a) reads the aliased column.
  CompiledStatement c = Compiled(DP "sex AS a, COUNT(*) FROM slid GROUP BY a");
  EXPECT_THAT(c.group_by, ::testing::ElementsAre("sex"));
  EXPECT_TRUE(c.parts[0].group_expressions.empty());
}

TEST(SqlAnalyzerExpressionTest, GroupByRefusalsNameTheirPosition) {
  const auto invalid = absl::StatusCode::kInvalidArgument;
  ExpectRefused(DPD "COUNT(*) FROM slid GROUP BY age + 1, (age+1)", invalid,
                "GROUP BY lists (age + 1) twice", 108);
  ExpectRefused(DPD "COUNT(*) AS n FROM slid GROUP BY n", invalid, "GROUP BY n names an aggregate",
                103);
  ExpectRefused(DPD "COUNT(*) FROM slid GROUP BY COUNT(*) + 1", invalid,
                "GROUP BY cannot use an aggregate (COUNT)", 98);
  ExpectRefused(DPD "COUNT(*) FROM slid GROUP BY education * 2", invalid, "education", 98);
  ExpectRefused(DPD "COUNT(*) FROM slid GROUP BY LOWER(sex)", absl::StatusCode::kUnimplemented,
                "function LOWER", 98);
  ExpectRefused(DPD "COUNT(*) FROM slid GROUP BY sex, age + 1, age + 2, age + 3", invalid,
                "at most 3 columns", 121);
  ExpectRefused(DPD "age + 2, COUNT(*) FROM slid GROUP BY age + 1",
                absl::StatusCode::kInvalidArgument, "column age must be in GROUP BY", 70);
}

TEST(SqlAnalyzerExpressionTest, GroupByAPositionOrAConstantIsRefused) {
  ExpectRefused(DPD "sex, COUNT(*) FROM slid GROUP BY 1", absl::StatusCode::kUnimplemented,
                "GROUP BY a select-list position is not supported", 103);
  ExpectRefused(DPD "COUNT(*) FROM slid GROUP BY 'a' || 'b'", absl::StatusCode::kInvalidArgument,
                "unexpected character", 102);
  ExpectRefused(DPD "COUNT(*) FROM slid GROUP BY IF(TRUE, 'a', 'b')",
                absl::StatusCode::kInvalidArgument, "GROUP BY a constant makes one group", 98);
  ExpectRefused(
      "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, max_rows_contributed = 2) "
      "COUNT(*) FROM slid GROUP BY CASE WHEN age < 30 THEN 'y' ELSE 'o' END",
      absl::StatusCode::kUnimplemented,
      "max_rows_contributed is not supported with "
      "GROUP BY an expression",
      110);
}

TEST(SqlAnalyzerExpressionTest, WidthBucketOverAnExpressionIsItsHistogram) {
  CompiledStatement c =
      Compiled(DP "WIDTH_BUCKET(wages + age, 0, 220, 4) AS b, COUNT(*) FROM slid GROUP BY b");
  EXPECT_TRUE(c.width_bucket);
  ASSERT_EQ(c.parts.size(), 1u);
  EXPECT_EQ(c.parts[0].aggregate, AggregateKind::kHistogram);
  EXPECT_EQ(c.parts[0].column, "");
  ASSERT_NE(c.parts[0].value_expression, nullptr);
  EXPECT_EQ(c.parts[0].value_expression->op, query::expression::Op::kAdd);
  EXPECT_THAT(c.parts[0].bins, ::testing::ElementsAre(0, 55, 110, 165, 220));
  EXPECT_EQ(c.columns[0].expr.kind, OutputExpr::Kind::kKey);
  ExpectRefused(DP
                "WIDTH_BUCKET(wages + 1, 0, 220, 4), COUNT(*) FROM slid GROUP BY "
                "WIDTH_BUCKET(wages + age, 0, 220, 4)",
                absl::StatusCode::kInvalidArgument, "differs from the one in GROUP BY", 56);
}

// The planner takes every part these statements compile to (it checks the expressions again).
TEST(SqlAnalyzerExpressionTest, ThePartsPlan) {
  const char* statements[] = {
      DP "COUNT(*), AVG(wages) FROM slid WHERE wages > age OR sex IS NULL",
      DP "CASE WHEN age < 30 THEN 'young' ELSE 'old' END AS band, COUNT(*) FROM slid GROUP BY band",
      DPD "sex, age + 1, SUM(wages) FROM slid WHERE wages * 2 > age GROUP BY sex, age + 1",
      DP "WIDTH_BUCKET(wages + age, 0, 220, 4) AS b, COUNT(*) FROM slid GROUP BY b",
  };
  for (const char* sql : statements) {
    CompiledStatement c = Compiled(sql);
    for (const query::QuerySpec& part : c.parts) {
      absl::StatusOr<query::QueryPlan> plan = query::PlanQuery(part, Slid());
      ASSERT_TRUE(plan.ok()) << sql << ": " << plan.status();
    }
  }
  CompiledStatement band = Compiled(
      DP
      "CASE WHEN age < 30 THEN 'young' ELSE 'old' END AS band, COUNT(*) FROM slid GROUP BY band");
  absl::StatusOr<query::QueryPlan> plan = query::PlanQuery(band.parts[0], Slid());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->selection.needed);
  EXPECT_EQ(plan->declared_keys, (std::vector<std::vector<std::string>>{{"young"}, {"old"}}));
}

// Aggregates over per-row expressions: the part reads QuerySpec::value_expression (column empty),
// clamped to the bounds derived from the declared ones ("age" in [0, 120], "wages" in [0, 100]).
// The clamp range the planner gives a part (derived bounds are left to it: the analyzer writes
// none, so explain can say they were derived).
std::pair<double, double> PlannedClamp(const query::QuerySpec& part) {
  absl::StatusOr<query::QueryPlan> plan = query::PlanQuery(part, Slid());
  EXPECT_TRUE(plan.ok()) << plan.status();
  if (!plan.ok()) return {0, 0};
  return {plan->scan.clamp_lower, plan->scan.clamp_upper};
}

TEST(SqlAnalyzerTest, AggregatesOverExpressionsReadTheExpressionWithDerivedBounds) {
  CompiledStatement c =
      Compiled(DP
               "SUM(age + 1) * 1 AS s, AVG(age * 2), VAR_POP(wages - age), STDDEV_POP(-age) "
               "FROM slid");
  ASSERT_EQ(c.parts.size(), 4u);
  for (const query::QuerySpec& part : c.parts) {
    EXPECT_NE(part.value_expression, nullptr);
    EXPECT_EQ(part.column, "");
  }
  // SUM: a unit's total is not bounded by the row bounds, so rows are clamped, K of them per unit.
  EXPECT_EQ(c.parts[0].aggregate, AggregateKind::kSum);
  EXPECT_FALSE(c.parts[0].pre_aggregate);
  EXPECT_EQ(c.parts[0].max_contributions, kRowClampedMaxContributions);
  EXPECT_FALSE(c.parts[0].lower.has_value());
  EXPECT_EQ(PlannedClamp(c.parts[0]), std::make_pair(1.0, 121.0));
  // AVG: a unit's mean of values in [0, 240] lies in [0, 240]: per-unit, as AVG of a column.
  EXPECT_EQ(c.parts[1].aggregate, AggregateKind::kMean);
  EXPECT_TRUE(c.parts[1].pre_aggregate);
  EXPECT_EQ(c.parts[1].max_contributions, 1);
  EXPECT_FALSE(c.parts[1].lower.has_value());
  EXPECT_EQ(PlannedClamp(c.parts[1]), std::make_pair(0.0, 240.0));
  EXPECT_FALSE(c.parts[2].lower.has_value());
  EXPECT_EQ(PlannedClamp(c.parts[2]), std::make_pair(-120.0, 100.0));
  EXPECT_FALSE(c.parts[2].pre_aggregate);
  EXPECT_FALSE(c.parts[3].lower.has_value());
  EXPECT_EQ(PlannedClamp(c.parts[3]), std::make_pair(-120.0, 0.0));
  // `SUM(...) * 1` is post-processing of the part.
  EXPECT_EQ(c.columns[0].expr.kind, OutputExpr::Kind::kBinary);
  EXPECT_EQ(c.columns[0].expr.children[0].kind, OutputExpr::Kind::kPart);
  EXPECT_EQ(c.columns[0].type, "float64");
}

TEST(SqlAnalyzerTest, ExplicitBoundsOfAnExpressionAggregateAreUsedAsForAColumn) {
  CompiledStatement c = Compiled(
      DPX("epsilon = 1, max_rows_per_group = 3") "SUM(wages * 2, contribution_bounds_per_group => "
                                                 "(0, 50)), AVG(age + 1, "
                                                 "contribution_bounds_per_row => (10, 20)), "
                                                 "PERCENTILE_CONT(age / 2, 0.5, "
                                                 "contribution_bounds_per_row => (0, 30)) "
                                                 "FROM slid");
  ASSERT_EQ(c.parts.size(), 3u);
  EXPECT_TRUE(c.parts[0].pre_aggregate);  // each unit's total clamped to [0, 50]
  EXPECT_EQ(c.parts[0].max_contributions, 1);
  EXPECT_EQ(*c.parts[0].lower, 0);
  EXPECT_EQ(*c.parts[0].upper, 50);
  EXPECT_FALSE(c.parts[1].pre_aggregate);  // rows clamped to [10, 20], K = 3
  EXPECT_EQ(c.parts[1].max_contributions, 3);
  EXPECT_EQ(*c.parts[1].lower, 10);
  EXPECT_EQ(*c.parts[1].upper, 20);
  EXPECT_EQ(c.parts[2].aggregate, AggregateKind::kQuantile);
  EXPECT_EQ(c.parts[2].quantiles, (std::vector<double>{0.5}));
  EXPECT_EQ(*c.parts[2].upper, 30);
  EXPECT_NE(c.parts[2].value_expression, nullptr);
}

// Quantiles of one expression share a part as quantiles of one column do; of a different
// expression, or of the bare column, they do not.
TEST(SqlAnalyzerTest, PercentilesOfOneExpressionShareAPart) {
  CompiledStatement c = Compiled(
      DP
      "PERCENTILE_CONT(age + 1, 0.5), PERCENTILE_CONT(age + 1, 0.9), PERCENTILE_CONT(age, 0.5), "
      "PERCENTILE_CONT(age + 2, 0.5), APPROX_QUANTILES(age - 1, 4) FROM slid");
  ASSERT_EQ(c.parts.size(), 4u);
  EXPECT_EQ(c.parts[0].quantiles, (std::vector<double>{0.5, 0.9}));
  EXPECT_EQ(c.parts[1].column, "age");
  EXPECT_EQ(c.parts[1].value_expression, nullptr);
  EXPECT_NE(c.parts[2].value_expression, nullptr);
  EXPECT_EQ(PlannedClamp(c.parts[2]).second, 122);
  EXPECT_EQ(c.parts[3].quantiles, (std::vector<double>{0, 0.25, 0.5, 0.75, 1}));
  EXPECT_EQ(PlannedClamp(c.parts[3]).first, -1);
  EXPECT_EQ(c.columns[1].expr.index, 0);
  EXPECT_EQ(c.columns[1].expr.level, 1);
  EXPECT_EQ(c.columns[4].type, "array<float64>");
}

// No declared bounds below the expression: refused at analysis, naming the column, before
// anything is charged; explicit bounds do not lift it (a raw value is clamped to its column's
// declared bounds before any arithmetic, whatever the clamp of the result).
TEST(SqlAnalyzerTest, AnExpressionOverAnUnboundedColumnIsRefused) {
  for (const char* sql :
       {DP "SUM(education + 1) FROM slid", DP "SUM(IF(age > 1, education, 0)) FROM slid",
        DP "SUM(IF(age > 1, education, 0), contribution_bounds_per_row => (0, 20)) FROM slid",
        DP "COUNT(education * 2) FROM slid"}) {
    absl::StatusOr<CompiledStatement> c = Compile(sql);
    ASSERT_FALSE(c.ok()) << sql;
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << sql;
    EXPECT_THAT(std::string(c.status().message()), HasSubstr("sql: line 1, column ")) << sql;
    EXPECT_THAT(std::string(c.status().message()), HasSubstr("column education has no declared "
                                                             "bounds"))
        << sql;
  }
}

// COUNT(expr) counts the rows where expr is not NULL: value_expression with kCount, no bounds.
TEST(SqlAnalyzerTest, CountOfAnExpressionCountsRowsWhereItIsNotNull) {
  CompiledStatement c =
      Compiled(DP
               "COUNT(IF(age > 90, 1, NULL)) AS old, COUNT(language), "
               "COUNT(age + 1, contribution_bounds_per_group => (0, 3)) FROM slid");
  ASSERT_EQ(c.parts.size(), 3u);
  EXPECT_EQ(c.parts[0].aggregate, AggregateKind::kCount);
  EXPECT_NE(c.parts[0].value_expression, nullptr);
  EXPECT_EQ(c.parts[0].where, "");  // the expression's NULLs, not a filter, decide the rows
  EXPECT_EQ(c.parts[0].max_contributions, 1);
  EXPECT_FALSE(c.parts[0].lower.has_value());
  EXPECT_EQ(c.columns[0].type, "int64");
  // A bare column keeps the flag form (a filter), so its plan matches the flag query.
  EXPECT_EQ(c.parts[1].value_expression, nullptr);
  EXPECT_EQ(c.parts[1].where, "language IS NOT NULL");
  EXPECT_EQ(c.parts[2].max_contributions, 3);
}

// COUNT(DISTINCT unit) is the count with one row per unit and group: the same part as
// COUNT(*) with contribution bounds (0, 1), so the same plan and charge.
TEST(SqlAnalyzerTest, CountDistinctUnitIsTheCountWithOneRowPerUnit) {
  const std::string options = DPX("epsilon = 1, max_groups_contributed = 2");
  CompiledStatement distinct =
      Compiled(options + "sex, COUNT(DISTINCT person_id) AS units FROM slid GROUP BY sex");
  CompiledStatement count =
      Compiled(options +
               "sex, COUNT(*, contribution_bounds_per_group => (0, 1)) FROM slid "
               "GROUP BY sex");
  ASSERT_EQ(distinct.parts.size(), 1u);
  ASSERT_EQ(count.parts.size(), 1u);
  const query::QuerySpec& d = distinct.parts[0];
  const query::QuerySpec& k = count.parts[0];
  EXPECT_EQ(d.aggregate, AggregateKind::kCount);
  EXPECT_EQ(d.max_contributions, 1);
  EXPECT_EQ(d.max_contributions, k.max_contributions);
  EXPECT_EQ(d.max_partitions, 2);
  EXPECT_EQ(d.max_partitions, k.max_partitions);
  EXPECT_EQ(d.pre_aggregate, k.pre_aggregate);
  EXPECT_EQ(d.where, k.where);
  EXPECT_EQ(d.group_by, k.group_by);
  EXPECT_EQ(d.value_expression, nullptr);
  EXPECT_EQ(d.epsilon, k.epsilon);
  EXPECT_EQ(distinct.columns[1].type, "int64");
}

// GROUP BY without aggregates releases the keys only: one keys_only part charged the whole
// statement, its output columns the keys.
TEST(SqlAnalyzerTest, KeyOnlySelectIsOnePartReleasingTheKeys) {
  CompiledStatement c = Compiled(
      DPX("epsilon = 1, delta = 1e-6, max_groups_contributed = 3") "language AS l FROM slid "
                                                                   "GROUP BY language");
  ASSERT_EQ(c.parts.size(), 1u);
  EXPECT_TRUE(c.parts[0].keys_only);
  EXPECT_EQ(c.parts[0].aggregate, AggregateKind::kCount);
  EXPECT_EQ(c.parts[0].group_by, (std::vector<std::string>{"language"}));
  EXPECT_EQ(c.parts[0].max_partitions, 3);
  EXPECT_EQ(c.parts[0].epsilon, 1);
  EXPECT_EQ(c.parts[0].delta, 1e-6);
  EXPECT_EQ(c.delta, 1e-6);
  ASSERT_EQ(c.columns.size(), 1u);
  EXPECT_EQ(c.columns[0].name, "l");
  EXPECT_EQ(c.columns[0].type, "string");
  EXPECT_EQ(c.columns[0].expr.kind, OutputExpr::Kind::kKey);
}

// Declared keys (categories, or a key list in WHERE) are public: no selection, no delta, and
// still one part charged the statement's epsilon.
TEST(SqlAnalyzerTest, KeyOnlySelectOfDeclaredKeysIsStillOneChargedPart) {
  CompiledStatement categories = Compiled(DP "sex FROM slid GROUP BY sex");
  ASSERT_EQ(categories.parts.size(), 1u);
  EXPECT_TRUE(categories.parts[0].keys_only);
  EXPECT_EQ(categories.parts[0].epsilon, 1);
  EXPECT_EQ(categories.parts[0].delta, 0);
  EXPECT_EQ(categories.delta, 0);
  CompiledStatement listed =
      Compiled(DP "language FROM slid WHERE language IN ('French', 'Other') GROUP BY language");
  ASSERT_EQ(listed.parts.size(), 1u);
  EXPECT_TRUE(listed.parts[0].keys_only);
  EXPECT_EQ(listed.parts[0].keys, (std::vector<std::string>{"French", "Other"}));
  EXPECT_EQ(listed.parts[0].where, "language IN ('French', 'Other')");
  EXPECT_EQ(listed.parts[0].delta, 0);
}

// A statement with an aggregate has no keys_only part.
TEST(SqlAnalyzerTest, AStatementWithAnAggregateReleasesNoKeysOnlyPart) {
  CompiledStatement c = Compiled(DP "sex, COUNT(*) FROM slid GROUP BY sex");
  ASSERT_EQ(c.parts.size(), 1u);
  EXPECT_FALSE(c.parts[0].keys_only);
}

INSTANTIATE_TEST_SUITE_P(
    ExpressionAggregateRefusals, SqlAnalyzerRefusalTest,
    ::testing::Values(
        Refusal{DP "SUM(COUNT(*) + 1) FROM slid", kInvalid, "aggregates cannot be nested", 1, 60},
        Refusal{DP "AVG(IF(age > 1, 'a', 'b')) FROM slid", kInvalid,
                "AVG needs a numeric value; its argument is STRING", 1, 60},
        Refusal{
            DP "COUNT(age + 1) FROM slid GROUP BY WIDTH_BUCKET(age, 0, 100, 10)", kUnimpl,
            "COUNT of an expression is not supported with max_rows_contributed or a WIDTH_BUCKET group",
            1, 62},
        Refusal{DP "COUNT(DISTINCT language) FROM slid", kUnimpl,
                "needs a sketch dpq does not have; COUNT(DISTINCT person_id) counts units", 1, 71},
        Refusal{DP "COUNT(DISTINCT age + 1) FROM slid", kUnimpl,
                "takes the privacy unit column (person_id) only", 1, 71},
        Refusal{DP "SUM(DISTINCT wages) FROM slid", kUnimpl, "SUM(DISTINCT ...) is not supported",
                1, 56},
        Refusal{DP "COUNT(DISTINCT person_id, contribution_bounds_per_group => (0, 2)) FROM slid",
                kInvalid, "counts each unit once", 1, 115},
        Refusal{DP "COUNT(DISTINCT person_id) FROM slid GROUP BY WIDTH_BUCKET(age, 0, 100, 10)",
                kUnimpl, "not supported with max_rows_contributed or a WIDTH_BUCKET group", 1, 56},
        Refusal{
            DP "language FROM slid GROUP BY language", kInvalid,
            "selecting keys without aggregates releases the groups DP partition selection keeps, which needs delta > 0",
            1, 75},
        Refusal{DP "age FROM slid", kInvalid, "age must be in GROUP BY", 1, 56},
        Refusal{DP "2 AS two FROM slid", kInvalid, "or GROUP BY to release only the group keys", 1,
                1},
        Refusal{DP "WIDTH_BUCKET(age, 0, 100, 10) AS b FROM slid GROUP BY b", kUnimpl,
                "a WIDTH_BUCKET group's buckets are public", 1, 101}));

}  // namespace
}  // namespace dpq::sql
