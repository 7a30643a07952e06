// Which time blocks a query pays (from its text, the declared schema and the day only) and the
// scan restriction that keeps it inside them.
#include "server/query/time_blocks/time_blocks.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/query/calendar.h"
#include "server/query/filter/type_checker.h"

namespace dpq::query {
namespace {

using ::testing::HasSubstr;

int64_t Day(const char* text) { return *ParseDate(text); }

// Daily blocks over a date column declared 2026-01-01..2026-12-31, and a timestamp column.
DatasetSchema Visits(CalendarBucket width, const std::string& column = "day") {
  DatasetSchema s;
  s.name = "visits";
  s.privacy_unit = "pid";
  ColumnSchema pid;
  pid.name = "pid";
  pid.type = ColumnType::kInteger;
  ColumnSchema day;
  day.name = "day";
  day.type = ColumnType::kDate;
  day.calendar_lower = Day("2026-01-01");
  day.calendar_upper = Day("2026-12-31");
  ColumnSchema at;
  at.name = "at";
  at.type = ColumnType::kTimestamp;
  at.calendar_lower = *ParseTimestamp("2026-01-01T00:00:00Z");
  at.calendar_upper = *ParseTimestamp("2026-12-31T23:59:59Z");
  s.columns = {pid, day, at};
  s.time_blocks = TimeBlocking{column, width};
  s.per_block_budget = true;
  return s;
}

absl::StatusOr<BlockRange> Pay(const DatasetSchema& s, const std::string& where,
                               const char* today = "2026-12-05") {
  if (where.empty()) return BlocksToPay(s, nullptr, Day(today));
  absl::StatusOr<filter::TypedFilter> f = filter::ParseAndCheckFilter(where, s);
  EXPECT_TRUE(f.ok()) << f.status();
  return BlocksToPay(s, &*f, Day(today));
}

TEST(TimeBlocksTest, NoRangeMeansEveryBlockFromTheFirstToTheCurrentOne) {
  absl::StatusOr<BlockRange> r = Pay(Visits(CalendarBucket::kDay), "");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, (BlockRange{Day("2026-01-01"), Day("2026-12-05")}));
  EXPECT_EQ(BlockCount(CalendarBucket::kDay, *r), 339);
}

TEST(TimeBlocksTest, TheLastSevenDaysPaySevenBlocks) {
  absl::StatusOr<BlockRange> r =
      Pay(Visits(CalendarBucket::kDay), "day >= '2026-11-29' AND day <= '2026-12-05'");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, (BlockRange{Day("2026-11-29"), Day("2026-12-05")}));
  EXPECT_EQ(BlockStarts(CalendarBucket::kDay, *r).size(), 7u);
  // Strict comparisons and BETWEEN narrow the same way.
  EXPECT_EQ(*Pay(Visits(CalendarBucket::kDay), "day > '2026-11-28' AND day < '2026-12-06'"), *r);
  EXPECT_EQ(*Pay(Visits(CalendarBucket::kDay), "day BETWEEN '2026-11-29' AND '2026-12-05'"), *r);
  EXPECT_EQ(*Pay(Visits(CalendarBucket::kDay),
                 "pid > 3 AND day BETWEEN '2026-11-29' AND "
                 "'2026-12-09' AND pid < 9"),
            *r);  // capped at today
}

TEST(TimeBlocksTest, TermsThatDoNotBoundTheColumnNarrowNothing) {
  const BlockRange all{Day("2026-01-01"), Day("2026-12-05")};
  for (const char* where : {"day >= '2026-11-29' OR pid = 1", "NOT (day < '2026-11-29')",
                            "day <> '2026-11-29'", "day NOT BETWEEN '2026-01-01' AND '2026-11-28'",
                            "day IS NOT NULL", "day IN ('2026-11-29')"}) {
    absl::StatusOr<BlockRange> r = Pay(Visits(CalendarBucket::kDay), where);
    ASSERT_TRUE(r.ok()) << where << ": " << r.status();
    EXPECT_EQ(*r, all) << where;
  }
}

TEST(TimeBlocksTest, ValuesOutsideTheBoundsAreReadAsTheBounds) {
  // Clamped reads: a row dated 2025 is read as 2026-01-01, so `day < 2026-01-02` is block one.
  EXPECT_EQ(*Pay(Visits(CalendarBucket::kDay), "day < '2026-01-02'"),
            (BlockRange{Day("2026-01-01"), Day("2026-01-01")}));
  EXPECT_EQ(*Pay(Visits(CalendarBucket::kDay), "day >= '2020-01-01'"),
            (BlockRange{Day("2026-01-01"), Day("2026-12-05")}));
}

TEST(TimeBlocksTest, ARangeWithNoStartedBlockIsRefusedNamingTheBlocks) {
  for (const char* where : {"day > '2026-12-05'", "day < '2026-01-01'",
                            "day >= '2026-06-02' AND day <= '2026-06-01'"}) {
    absl::StatusOr<BlockRange> r = Pay(Visits(CalendarBucket::kDay), where);
    ASSERT_FALSE(r.ok()) << where;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr("leaves no time block that has started"));
    EXPECT_THAT(r.status().message(), HasSubstr("from 2026-01-01"));
  }
}

TEST(TimeBlocksTest, WeeksStartOnMondayAndMonthsOnTheFirst) {
  // 2026-01-01 is a Thursday: the first weekly block starts on Monday 2025-12-29.
  EXPECT_EQ(*Pay(Visits(CalendarBucket::kWeek), ""),
            (BlockRange{Day("2025-12-29"), Day("2026-11-30")}));
  EXPECT_EQ(*Pay(Visits(CalendarBucket::kMonth), "day BETWEEN '2026-02-10' AND '2026-04-03'"),
            (BlockRange{Day("2026-02-01"), Day("2026-04-01")}));
  EXPECT_THAT(BlockStarts(CalendarBucket::kMonth, {Day("2026-11-01"), Day("2027-02-01")}),
              ::testing::ElementsAre(Day("2026-11-01"), Day("2026-12-01"), Day("2027-01-01"),
                                     Day("2027-02-01")));
}

TEST(TimeBlocksTest, ATimestampColumnIsBlockedByItsUtcDay) {
  absl::StatusOr<BlockRange> r =
      Pay(Visits(CalendarBucket::kDay, "at"),
          "at >= '2026-03-01T12:00:00Z' AND at < '2026-03-03T00:00:00Z'");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, (BlockRange{Day("2026-03-01"), Day("2026-03-02")}));
}

TEST(TimeBlocksTest, TheScanIsRestrictedToThePaidBlocksClampedAndAndedWithTheFilter) {
  const DatasetSchema s = Visits(CalendarBucket::kMonth);
  absl::StatusOr<filter::TypedFilter> where = filter::ParseAndCheckFilter("pid > 3", s);
  ASSERT_TRUE(where.ok());
  absl::StatusOr<filter::TypedFilter> f =
      RestrictToBlocks(s, *where, {Day("2026-02-01"), Day("2026-03-01")});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(filter::CanonicalText(*f),
            "((pid > 3) AND (day BETWEEN '2026-02-01' AND '2026-03-31'))");
  // Two literals and the two clamp bounds, after the analyst's one.
  EXPECT_EQ(f->value_count, 5);
  const DatasetSchema t = Visits(CalendarBucket::kDay, "at");
  absl::StatusOr<filter::TypedFilter> g =
      RestrictToBlocks(t, absl::nullopt, {Day("2026-03-01"), Day("2026-03-02")});
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(filter::CanonicalText(*g),
            "(at BETWEEN '2026-03-01T00:00:00Z' AND '2026-03-02T23:59:59.999999Z')");
}

TEST(TimeBlocksTest, TooManyBlocksAreRefusedNamingTheCount) {
  DatasetSchema s = Visits(CalendarBucket::kDay);
  s.columns[1].calendar_lower = Day("2000-01-01");
  absl::StatusOr<BlockRange> r = Pay(s, "");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("9836 time blocks"));
  EXPECT_TRUE(Pay(s, "day >= '2020-01-01'").ok());
}

TEST(TimeBlocksTest, ABlockRangeIsWrittenAndReadAsTwoDates) {
  const BlockRange r{Day("2026-11-29"), Day("2026-12-05")};
  EXPECT_EQ(FormatBlockRange(CalendarBucket::kDay, r), "day:2026-11-29:2026-12-05");
  absl::optional<PaidBlocks> back = ParseBlockRange("week:2026-11-29:2026-12-05");
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->width, CalendarBucket::kWeek);
  EXPECT_EQ(back->range, r);
  EXPECT_FALSE(ParseBlockRange("day:2026-12-05:2026-11-29").has_value());
  EXPECT_FALSE(ParseBlockRange("2026-11-29:2026-12-05").has_value());
  EXPECT_FALSE(ParseBlockRange("year:2026-11-29:2026-12-05").has_value());
}

}  // namespace
}  // namespace dpq::query
