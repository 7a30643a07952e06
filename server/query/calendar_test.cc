#include "server/query/calendar.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dpq::query {
namespace {

using ::testing::ElementsAre;

TEST(CalendarTest, KnownDaysFromCivil) {
  EXPECT_EQ(DaysFromCivil({1970, 1, 1}), 0);
  EXPECT_EQ(DaysFromCivil({1969, 12, 31}), -1);
  EXPECT_EQ(DaysFromCivil({2000, 3, 1}), 11017);
  EXPECT_EQ(DaysFromCivil({2026, 11, 23}), 20780);
  EXPECT_EQ(DaysFromCivil({1, 1, 1}), -719162);  // PostgreSQL: '0001-01-01'::date - '1970-01-01'
  EXPECT_EQ(DaysFromCivil({9999, 12, 31}), 2932896);
}

TEST(CalendarTest, EveryDayRoundTripsThroughCivilAndText) {
  // Every day of years 0001..9999: civil_from_days inverts days_from_civil, the text parses back,
  // consecutive days are consecutive dates, and weekdays cycle.
  const int64_t first = DaysFromCivil({1, 1, 1}), last = DaysFromCivil({9999, 12, 31});
  CivilDate previous = CivilFromDays(first - 1);
  for (int64_t d = first; d <= last; ++d) {
    const CivilDate c = CivilFromDays(d);
    ASSERT_EQ(DaysFromCivil(c), d);
    ASSERT_EQ(ParseDate(FormatDate(d)), d) << FormatDate(d);
    const bool next_day =
        c.year == previous.year && c.month == previous.month && c.day == previous.day + 1;
    const bool next_month =
        c.day == 1 && (c.month == previous.month + 1 ||
                       (c.month == 1 && previous.month == 12 && c.year == previous.year + 1));
    ASSERT_TRUE(next_day || next_month) << FormatDate(d);
    ASSERT_EQ(IsoWeekday(d), (IsoWeekday(d - 1) + 1) % 7);
    previous = c;
  }
}

TEST(CalendarTest, LeapYears) {
  EXPECT_TRUE(ParseDate("2024-02-29").has_value());
  EXPECT_TRUE(ParseDate("2000-02-29").has_value());
  EXPECT_FALSE(ParseDate("1900-02-29").has_value());
  EXPECT_FALSE(ParseDate("2026-02-29").has_value());
  EXPECT_EQ(*ParseDate("2024-03-01") - *ParseDate("2024-02-28"), 2);
  EXPECT_EQ(*ParseDate("2100-03-01") - *ParseDate("2100-02-28"), 1);
}

TEST(CalendarTest, DatesRefusedOutsideTheForm) {
  for (const char* bad :
       {"", "2026-1-01", "2026-01-1", "26-01-01", "2026/01/01", "2026-13-01", "2026-00-10",
        "2026-04-31", "0000-01-01", "10000-01-01", "2026-01-01 ", " 2026-01-01",
        "2026-01-01T00:00:00Z", "infinity", "-2026-01-01", "+202-01-01"}) {
    EXPECT_FALSE(ParseDate(bad).has_value()) << bad;
  }
  EXPECT_EQ(ParseDate("0001-01-01"), DaysFromCivil({1, 1, 1}));
  EXPECT_EQ(ParseDate("9999-12-31"), DaysFromCivil({9999, 12, 31}));
}

TEST(CalendarTest, Timestamps) {
  EXPECT_EQ(ParseTimestamp("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(ParseTimestamp("1969-12-31T23:59:59.999999Z"), -1);
  EXPECT_EQ(ParseTimestamp("1970-01-02T00:00:01.5Z"), kMicrosPerDay + 1500000);
  EXPECT_EQ(ParseTimestamp("2026-11-23T10:20:30.000001Z"),
            20780 * kMicrosPerDay + (10 * 3600 + 20 * 60 + 30) * kMicrosPerSecond + 1);
  for (const char* bad :
       {"2026-11-23", "2026-11-23T10:20:30", "2026-11-23 10:20:30Z", "2026-11-23T24:00:00Z",
        "2026-11-23T10:60:00Z", "2026-11-23T10:20:60Z", "2026-11-23T10:20:30.Z",
        "2026-11-23T10:20:30.1234567Z", "2026-11-23T10:20:30+01:00", "2026-11-23T10:20Z",
        "0000-12-31T23:59:59Z"}) {
    EXPECT_FALSE(ParseTimestamp(bad).has_value()) << bad;
  }
  // One canonical spelling per instant, which parses back to it.
  EXPECT_EQ(FormatTimestamp(*ParseTimestamp("2026-11-23T10:20:30.500Z")),
            "2026-11-23T10:20:30.500000Z");
  EXPECT_EQ(FormatTimestamp(*ParseTimestamp("2026-11-23T10:20:30.000Z")), "2026-11-23T10:20:30Z");
  EXPECT_EQ(FormatTimestamp(-1), "1969-12-31T23:59:59.999999Z");
  for (const char* t :
       {"0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999Z", "1969-12-31T00:00:00.000001Z"}) {
    EXPECT_EQ(FormatTimestamp(*ParseTimestamp(t)), t);
  }
  EXPECT_EQ(CalendarSqlText(ColumnType::kTimestamp, 0), "1970-01-01T00:00:00");
  EXPECT_EQ(CalendarSqlText(ColumnType::kDate, 0), "1970-01-01");
}

TEST(CalendarTest, WeeksStartOnMonday) {
  EXPECT_EQ(IsoWeekday(*ParseDate("2026-11-23")), 0);  // a Monday
  EXPECT_EQ(IsoWeekday(*ParseDate("1970-01-01")), 3);  // a Thursday
  EXPECT_EQ(IsoWeekday(*ParseDate("0001-01-01")), 0);  // proleptic Gregorian: a Monday
  EXPECT_EQ(FormatDate(BucketStart(CalendarBucket::kWeek, *ParseDate("2026-11-29"))),
            "2026-11-23");  // Sunday -> the Monday before
  EXPECT_EQ(FormatDate(BucketStart(CalendarBucket::kWeek, *ParseDate("2026-11-23"))), "2026-11-23");
  EXPECT_EQ(FormatDate(BucketStart(CalendarBucket::kWeek, *ParseDate("2026-01-01"))),
            "2025-12-29");  // across a year
  EXPECT_EQ(FormatDate(BucketStart(CalendarBucket::kMonth, *ParseDate("2024-02-29"))),
            "2024-02-01");
  EXPECT_EQ(FormatDate(BucketStart(CalendarBucket::kDay, *ParseDate("2024-02-29"))), "2024-02-29");
}

TEST(CalendarTest, BucketKeysSpanTheBounds) {
  const int64_t lo = *ParseDate("2025-12-30"), hi = *ParseDate("2026-02-02");
  EXPECT_THAT(BucketKeys(ColumnType::kDate, CalendarBucket::kMonth, lo, hi),
              ElementsAre("2025-12-01", "2026-01-01", "2026-02-01"));
  const std::vector<std::string> weeks =
      BucketKeys(ColumnType::kDate, CalendarBucket::kWeek, lo, hi);
  EXPECT_EQ(weeks.front(), "2025-12-29");
  EXPECT_EQ(weeks.back(), "2026-02-02");
  EXPECT_EQ(weeks.size(), 6u);
  for (CalendarBucket b : {CalendarBucket::kDay, CalendarBucket::kWeek, CalendarBucket::kMonth}) {
    EXPECT_EQ(BucketCount(ColumnType::kDate, b, lo, hi),
              static_cast<int64_t>(BucketKeys(ColumnType::kDate, b, lo, hi).size()));
    EXPECT_EQ(BucketCount(ColumnType::kDate, b, lo, lo), 1);
  }
  EXPECT_EQ(BucketCount(ColumnType::kDate, CalendarBucket::kDay, lo, hi), 35);
  // A timestamp's bucket is its UTC day's.
  const int64_t t0 = *ParseTimestamp("2026-01-31T23:59:59.999999Z");
  const int64_t t1 = *ParseTimestamp("2026-02-01T00:00:00Z");
  EXPECT_THAT(BucketKeys(ColumnType::kTimestamp, CalendarBucket::kMonth, t0, t1),
              ElementsAre("2026-01-01", "2026-02-01"));
  EXPECT_THAT(BucketKeys(ColumnType::kTimestamp, CalendarBucket::kDay, t1, t1),
              ElementsAre("2026-02-01"));
  // The whole range of years: counted without listing.
  EXPECT_EQ(BucketCount(ColumnType::kDate, CalendarBucket::kMonth, *ParseDate("0001-01-01"),
                        *ParseDate("9999-12-31")),
            9999 * 12);
}

TEST(CalendarTest, BucketNames) {
  for (CalendarBucket b : {CalendarBucket::kDay, CalendarBucket::kWeek, CalendarBucket::kMonth}) {
    EXPECT_EQ(ParseCalendarBucket(CalendarBucketName(b)), b);
  }
  EXPECT_FALSE(ParseCalendarBucket("year").has_value());
  EXPECT_FALSE(ParseCalendarBucket("Week").has_value());
}

}  // namespace
}  // namespace dpq::query
