// Dates and timestamps in the planner (group-by calendar buckets), the filter type checker
// (clamped, parsed literals) and schema validation (required bounds).
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/query/calendar.h"
#include "server/query/filter/type_checker.h"
#include "server/query/planner.h"

namespace dpq::query {
namespace {

using ::testing::HasSubstr;

ColumnSchema DateColumn(const std::string& name, const char* lower, const char* upper) {
  ColumnSchema c;
  c.name = name;
  c.type = ColumnType::kDate;
  c.calendar_lower = *ParseDate(lower);
  c.calendar_upper = *ParseDate(upper);
  return c;
}

DatasetSchema Visits() {
  DatasetSchema s;
  s.id = 7;
  s.name = "visits";
  s.privacy_unit = "user_id";
  ColumnSchema unit;
  unit.name = "user_id";
  unit.type = ColumnType::kInteger;
  ColumnSchema at;
  at.name = "at";
  at.type = ColumnType::kTimestamp;
  at.calendar_lower = *ParseTimestamp("2026-01-01T00:00:00Z");
  at.calendar_upper = *ParseTimestamp("2026-03-31T23:59:59.999999Z");
  s.columns = {unit, DateColumn("day", "2026-01-01", "2026-12-31"), at,
               DateColumn("born", "1900-01-01", "2026-12-31")};
  return s;
}

QuerySpec Count(std::vector<std::string> group_by) {
  QuerySpec spec;
  spec.dataset = "visits";
  spec.epsilon = 1;
  spec.group_by = std::move(group_by);
  return spec;
}

TEST(CalendarPlanningTest, BucketsAreTheDeclaredKeys) {
  absl::StatusOr<QueryPlan> plan = PlanQuery(Count({"day:month"}), Visits());
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->declared_keys.size(), 12u);
  EXPECT_EQ(plan->declared_keys.front(), std::vector<std::string>{"2026-01-01"});
  EXPECT_EQ(plan->declared_keys.back(), std::vector<std::string>{"2026-12-01"});
  EXPECT_FALSE(plan->selection.needed);  // no partition selection: the keys are public
  EXPECT_EQ(plan->scan.group_columns, std::vector<std::string>{"day"});
  ASSERT_EQ(plan->scan.group_calendars.size(), 1u);
  EXPECT_EQ(plan->scan.group_calendars[0]->lower, "2026-01-01");
  EXPECT_EQ(plan->scan.group_calendars[0]->bucket, CalendarBucket::kMonth);

  plan = PlanQuery(Count({"at:week", "day:month"}), Visits());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->declared_keys.size(), 14u * 12u);  // 2025-12-29 .. 2026-03-30, 12 months
  EXPECT_EQ(plan->declared_keys.front(), (std::vector<std::string>{"2025-12-29", "2026-01-01"}));
  EXPECT_EQ(plan->scan.group_calendars[0]->upper, "2026-03-31T23:59:59.999999");
}

TEST(CalendarPlanningTest, RefusalsNameTheProblem) {
  const DatasetSchema s = Visits();
  struct Case {
    std::vector<std::string> group_by;
    const char* message;
  };
  for (const Case& c :
       std::vector<Case>{{{"day"}, "group it by calendar bucket, day:day, day:week"},
                         {{"day:year"}, "got \"year\""},
                         {{"user_id:week"}, "privacy unit"},
                         {{"day:week", "day:month"}, "appears twice"},
                         {{"born:day"}, "spans 46386 buckets"},
                         {{"nope:day"}, "does not exist"}}) {
    absl::StatusOr<QueryPlan> plan = PlanQuery(Count(c.group_by), s);
    ASSERT_FALSE(plan.ok()) << c.group_by[0];
    EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(plan.status().message(), HasSubstr(c.message));
  }
  EXPECT_TRUE(PlanQuery(Count({"born:month"}), s).ok());  // 1524 buckets
  QuerySpec sum = Count({});
  sum.aggregate = AggregateKind::kSum;
  sum.column = "day";
  EXPECT_THAT(PlanQuery(sum, s).status().message(), HasSubstr("needs a numeric column"));
  QuerySpec keyed = Count({"day:month"});
  keyed.keys = {"2026-01-01"};
  EXPECT_FALSE(PlanQuery(keyed, s).ok());
}

TEST(CalendarPlanningTest, FilterLiteralsParseAndClampWithTheBounds) {
  absl::StatusOr<filter::TypedFilter> f = filter::ParseAndCheckFilter(
      "day >= '2026-11-23' AND at BETWEEN '2026-02-01T00:00:00Z' AND '2026-02-01T12:00:00.5Z' "
      "AND day IN ('2026-01-01', '2026-01-02') AND day IS NOT NULL",
      Visits());
  ASSERT_TRUE(f.ok()) << f.status();
  // 1 + 2 + 2 literals, and 2 clamp bounds for each of the three comparisons (not IS NULL).
  EXPECT_EQ(f->value_count, 11);
  EXPECT_EQ(filter::CanonicalText(*f),
            "((day >= '2026-11-23') AND (at BETWEEN '2026-02-01T00:00:00Z' AND "
            "'2026-02-01T12:00:00.500000Z') AND (day IN ('2026-01-01', '2026-01-02')) AND "
            "(day IS NOT NULL))");
  const filter::TypedExpr& first = f->root.children[0];
  ASSERT_EQ(first.clamp.size(), 2u);
  EXPECT_EQ(first.clamp[1].text, "2026-12-31");
  EXPECT_TRUE(f->root.children[3].clamp.empty());
  // The canonical text parses again to itself.
  absl::StatusOr<filter::TypedFilter> again =
      filter::ParseAndCheckFilter(filter::CanonicalText(*f), Visits());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(filter::CanonicalText(*again), filter::CanonicalText(*f));

  for (const char* bad : {"day > '2026-13-01'", "day > 20260101", "at < '2026-02-01'",
                          "day = 'infinity'", "at = '2026-02-01T00:00:00+01:00'"}) {
    absl::StatusOr<filter::TypedFilter> r = filter::ParseAndCheckFilter(bad, Visits());
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr("is a "));
  }
}

TEST(CalendarPlanningTest, BoundsAreRequiredAndChecked) {
  DatasetSchema s = Visits();
  EXPECT_TRUE(ValidateNewDataset(s).ok());
  s.columns[1].calendar_upper.reset();
  EXPECT_THAT(ValidateNewDataset(s).message(), HasSubstr("its bounds are required"));
  s = Visits();
  s.columns[1].calendar_lower = *ParseDate("2027-01-01");
  EXPECT_THAT(ValidateNewDataset(s).message(), HasSubstr("lower bound must be <= upper"));
  s = Visits();
  s.columns[1].calendar_upper = *ParseDate("9999-12-31") + 1;
  EXPECT_THAT(ValidateNewDataset(s).message(), HasSubstr("years 0001..9999"));
  s = Visits();
  s.columns[0].calendar_lower = 0;
  s.columns[0].calendar_upper = 1;
  EXPECT_THAT(ValidateNewDataset(s).message(), HasSubstr("only be declared on date"));
  s = Visits();
  s.privacy_unit = "day";
  EXPECT_THAT(ValidateNewDataset(s).message(), HasSubstr("cannot identify a person"));
}

}  // namespace
}  // namespace dpq::query
