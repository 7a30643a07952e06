// Dates in DP SQL: DATE / TIMESTAMP literals in WHERE rendered to the --where language, GROUP BY
// DATE_TRUNC as the --group-by calendar bucket, and the refusals of every other use of a date.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/query/calendar.h"
#include "server/query/planner.h"
#include "server/sql/analyzer.h"
#include "server/sql/parser.h"

namespace dpq::sql {
namespace {

using query::ColumnType;
using ::testing::HasSubstr;

query::DatasetSchema Visits() {
  query::DatasetSchema s;
  s.id = 9;
  s.name = "visits";
  s.privacy_unit = "user_id";
  query::ColumnSchema unit{"user_id", ColumnType::kInteger, absl::nullopt, absl::nullopt, {}};
  query::ColumnSchema day{"day", ColumnType::kDate, absl::nullopt, absl::nullopt, {}};
  day.calendar_lower = *query::ParseDate("2026-01-01");
  day.calendar_upper = *query::ParseDate("2026-12-31");
  query::ColumnSchema at{"at", ColumnType::kTimestamp, absl::nullopt, absl::nullopt, {}};
  at.calendar_lower = *query::ParseTimestamp("2026-01-01T00:00:00Z");
  at.calendar_upper = *query::ParseTimestamp("2026-03-31T23:59:59.999999Z");
  query::ColumnSchema amount{"amount", ColumnType::kDouble, 0.0, 100.0, {}};
  query::ColumnSchema kind{"kind", ColumnType::kText, absl::nullopt, absl::nullopt, {"a", "b"}};
  s.columns = {unit, day, at, amount, kind};
  return s;
}

absl::StatusOr<CompiledStatement> Compile(const std::string& sql) {
  absl::StatusOr<Script> script = Parse(sql);
  if (!script.ok()) return script.status();
  return Analyze(script->statements[0], Visits());
}

CompiledStatement Compiled(const std::string& sql) {
  absl::StatusOr<CompiledStatement> c = Compile(sql);
  EXPECT_TRUE(c.ok()) << sql << ": " << c.status();
  return c.ok() ? *c : CompiledStatement{};
}

void ExpectRefused(const std::string& sql, absl::StatusCode code,
                   const std::vector<std::string>& words) {
  absl::StatusOr<CompiledStatement> c = Compile(sql);
  ASSERT_FALSE(c.ok()) << sql;
  EXPECT_EQ(c.status().code(), code) << sql << ": " << c.status();
  for (const std::string& w : words) EXPECT_THAT(c.status().message(), HasSubstr(w)) << sql;
}

const std::string kDp = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) ";

TEST(SqlCalendarTest, WhereRendersDateLiteralsAsTheFilterLanguage) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"day >= DATE '2026-11-01'", "day >= '2026-11-01'"},
      {"DATE '2026-11-01' > day", "day < '2026-11-01'"},
      {"day <> DATE '2026-11-01'", "day <> '2026-11-01'"},
      {"day BETWEEN DATE '2026-02-01' AND DATE '2026-02-28'",
       "day BETWEEN '2026-02-01' AND '2026-02-28'"},
      {"day NOT IN (DATE '2026-02-01', '2026-02-02')", "day NOT IN ('2026-02-01', '2026-02-02')"},
      {"day IS NULL OR NOT (day < DATE '2026-03-01')", "(day IS NULL OR NOT (day < '2026-03-01'))"},
      {"at < TIMESTAMP '2026-02-01 12:00:00.5'", "at < '2026-02-01T12:00:00.500000Z'"},
      {"at >= TIMESTAMP '2026-02-01T12:00:00Z' AND kind = 'a'",
       "(at >= '2026-02-01T12:00:00Z' AND kind = 'a')"},
      {"at = TIMESTAMP '2026-02-01'", "at = '2026-02-01T00:00:00Z'"},
      {"day = '2026-11-01'", "day = '2026-11-01'"},  // the flag interface's own literal
  };
  for (const auto& [where, rendered] : cases) {
    CompiledStatement c = Compiled(kDp + "COUNT(*) FROM visits WHERE " + where);
    ASSERT_EQ(c.parts.size(), 1u) << where;
    EXPECT_EQ(c.parts[0].where, rendered) << where;
    EXPECT_EQ(c.parts[0].row_condition, nullptr) << where;
  }
}

TEST(SqlCalendarTest, SqlWhereIsTheFlagFilterExactly) {
  // The same text as --where: the planner fingerprints both alike, so SQL adds no new reading.
  CompiledStatement c = Compiled(kDp +
                                 "COUNT(*) FROM visits WHERE day BETWEEN DATE '2026-02-01' "
                                 "AND DATE '2026-02-28'");
  query::QuerySpec flags = c.parts[0];
  flags.where = "day BETWEEN '2026-02-01' AND '2026-02-28'";
  absl::StatusOr<query::QueryPlan> a = query::PlanQuery(c.parts[0], Visits());
  absl::StatusOr<query::QueryPlan> b = query::PlanQuery(flags, Visits());
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(a->fingerprint, b->fingerprint);
}

TEST(SqlCalendarTest, DateTruncGroupsAreTheCalendarBuckets) {
  for (const auto& [part, bucket, keys] :
       std::vector<std::tuple<std::string, std::string, size_t>>{{"DAY", "day", 365},
                                                                 {"WEEK", "week", 53},
                                                                 {"ISOWEEK", "week", 53},
                                                                 {"month", "month", 12}}) {
    CompiledStatement c = Compiled(kDp + "DATE_TRUNC(day, " + part +
                                   ") AS d, COUNT(*) AS n FROM visits GROUP BY d ORDER BY d");
    ASSERT_EQ(c.parts.size(), 1u) << part;
    EXPECT_EQ(c.group_by, std::vector<std::string>{"day:" + bucket});
    EXPECT_EQ(c.columns[0].type, "string");
    EXPECT_EQ(c.columns[0].expr.kind, OutputExpr::Kind::kKey);
    absl::StatusOr<query::QueryPlan> plan = query::PlanQuery(c.parts[0], Visits());
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_EQ(plan->declared_keys.size(), keys) << part;
    EXPECT_FALSE(plan->selection.needed);  // public keys: no partition selection, no delta
    EXPECT_EQ(c.delta, 0);
  }
  // The ISO week of 2026-01-01 (a Thursday) starts on Monday 2025-12-29.
  CompiledStatement w = Compiled(kDp + "COUNT(*) FROM visits GROUP BY DATE_TRUNC(day, WEEK)");
  absl::StatusOr<query::QueryPlan> plan = query::PlanQuery(w.parts[0], Visits());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->declared_keys.front(), std::vector<std::string>{"2025-12-29"});
}

TEST(SqlCalendarTest, DateTruncWithOtherGroupsFiltersAndAggregates) {
  CompiledStatement c =
      Compiled(kDp +
               "kind, TIMESTAMP_TRUNC(at, MONTH), SUM(amount), AVG(amount) FROM visits "
               "WHERE day >= DATE '2026-06-01' GROUP BY kind, TIMESTAMP_TRUNC(at, MONTH)");
  EXPECT_EQ(c.group_by, (std::vector<std::string>{"kind", "at:month"}));
  ASSERT_EQ(c.parts.size(), 2u);
  EXPECT_EQ(c.parts[1].where, "day >= '2026-06-01'");
  EXPECT_EQ(c.columns[1].expr.index, 1);
  absl::StatusOr<query::QueryPlan> plan = query::PlanQuery(c.parts[1], Visits());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->declared_keys.size(), 2u * 3u);  // {a, b} x {Jan, Feb, Mar}
}

TEST(SqlCalendarTest, BadLiteralsAreRefusedNamingTheForm) {
  ExpectRefused(kDp + "COUNT(*) FROM visits WHERE day = DATE '2026-02-30'",
                absl::StatusCode::kInvalidArgument,
                {"DATE '2026-02-30' is not a date", "YYYY-MM-DD", "column 89"});
  ExpectRefused(kDp + "COUNT(*) FROM visits WHERE at = TIMESTAMP '2026-02-01 25:00:00'",
                absl::StatusCode::kInvalidArgument, {"'2026-02-01 25:00:00'", "HH:MM:SS"});
  ExpectRefused(kDp + "COUNT(*) FROM visits WHERE day = DATE '0000-01-01'",
                absl::StatusCode::kInvalidArgument, {"0001..9999"});
  ExpectRefused(kDp + "COUNT(*) FROM visits WHERE day = '2026-13-01'",
                absl::StatusCode::kInvalidArgument, {"day", "YYYY-MM-DD"});
}

TEST(SqlCalendarTest, LiteralsCompareOnlyWithTheirType) {
  ExpectRefused(kDp + "COUNT(*) FROM visits WHERE at > DATE '2026-02-01'",
                absl::StatusCode::kInvalidArgument, {"at is a timestamp", "TIMESTAMP"});
  ExpectRefused(kDp + "COUNT(*) FROM visits WHERE kind = DATE '2026-02-01'",
                absl::StatusCode::kInvalidArgument, {"kind is text"});
  ExpectRefused(kDp + "COUNT(*) FROM visits WHERE day > 20260101",
                absl::StatusCode::kInvalidArgument, {"day is a date", "DATE 'YYYY-MM-DD'"});
  ExpectRefused(kDp + "COUNT(*) FROM visits WHERE day IN (DATE '2026-01-01', 3)",
                absl::StatusCode::kInvalidArgument, {"day is a date"});
  ExpectRefused(kDp + "COUNT(*) FROM visits WHERE day = NULL", absl::StatusCode::kInvalidArgument,
                {"IS NULL"});
}

TEST(SqlCalendarTest, GroupingADateNeedsDateTrunc) {
  ExpectRefused(kDp + "day, COUNT(*) FROM visits GROUP BY day", absl::StatusCode::kInvalidArgument,
                {"DATE_TRUNC(day, WEEK)"});
  ExpectRefused(kDp + "COUNT(*) FROM visits GROUP BY DATE_TRUNC(day, HOUR)",
                absl::StatusCode::kInvalidArgument, {"DAY, WEEK", "HOUR"});
  ExpectRefused(kDp + "COUNT(*) FROM visits GROUP BY DATE_TRUNC(kind, DAY)",
                absl::StatusCode::kInvalidArgument, {"kind is text"});
  ExpectRefused(kDp + "COUNT(*) FROM visits GROUP BY DATE_TRUNC(day, DAY), DATE_TRUNC(day, WEEK)",
                absl::StatusCode::kInvalidArgument, {"day twice"});
  ExpectRefused(kDp + "DATE_TRUNC(day, WEEK), COUNT(*) FROM visits GROUP BY DATE_TRUNC(day, MONTH)",
                absl::StatusCode::kInvalidArgument, {"must be in GROUP BY"});
  ExpectRefused(kDp + "day, COUNT(*) FROM visits GROUP BY DATE_TRUNC(day, DAY)",
                absl::StatusCode::kInvalidArgument, {"DATE_TRUNC(day"});
  ExpectRefused(
      "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, max_rows_contributed = 2) COUNT(*) "
      "FROM visits GROUP BY DATE_TRUNC(day, DAY)",
      absl::StatusCode::kUnimplemented, {"max_rows_contributed"});
}

TEST(SqlCalendarTest, EveryOtherUseOfADateIsRefused) {
  for (const std::string& sql : {
           kDp + "SUM(day) FROM visits",
           kDp + "COUNT(day) FROM visits",
           kDp + "AVG(CAST(day AS INT64), contribution_bounds_per_group => (0, 1)) FROM visits",
           kDp + "COUNT(*) FROM visits WHERE day + 1 > 3",
           kDp + "COUNT(*) FROM visits WHERE day > at",
           kDp + "COUNT(*) FROM visits GROUP BY DATE_TRUNC(day + 1, DAY)",
           kDp + "COUNT(*) FROM visits WHERE DATE_TRUNC(day, DAY) = '2026-01-01'",
           kDp + "COUNT(*) FROM visits WHERE amount > 1 AND CASE WHEN day > DATE '2026-01-01' "
                 "THEN TRUE ELSE FALSE END",
           kDp + "DATE '2026-01-01', COUNT(*) FROM visits",
           kDp + "SUM(amount, contribution_bounds_per_group => (DATE '2026-01-01', 1)) FROM visits",
           kDp + "COUNT(*) FROM visits GROUP BY CASE WHEN day > '2026-01-01' THEN 'x' END",
       }) {
    absl::StatusOr<CompiledStatement> c = Compile(sql);
    ASSERT_FALSE(c.ok()) << sql;
    EXPECT_TRUE(c.status().code() == absl::StatusCode::kInvalidArgument ||
                c.status().code() == absl::StatusCode::kUnimplemented)
        << sql << ": " << c.status();
    EXPECT_THAT(c.status().message(), HasSubstr("sql: line 1, column ")) << sql;
  }
}

}  // namespace
}  // namespace dpq::sql
