// Calendar values of date and timestamp columns, in pure code: parsing, canonical text, and the
// public calendar buckets (day, ISO week, month) a group-by releases.
//
// A date is held as days since 1970-01-01 and a timestamp (always UTC) as microseconds since
// 1970-01-01T00:00:00Z, both int64, in the proleptic Gregorian calendar. Only years 0001..9999 are
// accepted anywhere: every value dpq parses, stores as a bound or writes as a key has a 4-digit
// year, so its text is unambiguous to PostgreSQL whatever DateStyle, and sorts as it compares.
#ifndef DPQ_SERVER_QUERY_CALENDAR_H_
#define DPQ_SERVER_QUERY_CALENDAR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "server/query/dataset_schema.h"

namespace dpq::query {

inline constexpr int64_t kMicrosPerSecond = 1000000;
inline constexpr int64_t kMicrosPerDay = 86400 * kMicrosPerSecond;

struct CivilDate {
  int64_t year = 1970;
  int month = 1;  // 1..12
  int day = 1;    // 1..31
};

// Howard Hinnant, "chrono-Compatible Low-Level Date Algorithms" (days_from_civil and
// civil_from_days): exact for every proleptic Gregorian date, no tables, no time zone.
int64_t DaysFromCivil(const CivilDate& date);
CivilDate CivilFromDays(int64_t days);
// 0 for Monday .. 6 for Sunday (ISO 8601).
int IsoWeekday(int64_t days);

// 'YYYY-MM-DD' (exactly that shape, a real day, year 0001..9999); nullopt otherwise.
absl::optional<int64_t> ParseDate(absl::string_view text);
// 'YYYY-MM-DDTHH:MM:SS[.f{1,6}]Z' (ISO 8601 in UTC; a real day, year 0001..9999, hour 00..23,
// minute and second 00..59: no leap seconds); nullopt otherwise.
absl::optional<int64_t> ParseTimestamp(absl::string_view text);

std::string FormatDate(int64_t days);  // 'YYYY-MM-DD'
// 'YYYY-MM-DDTHH:MM:SSZ', with '.ffffff' before the Z when the microseconds are not 0: one
// spelling per instant (the canonical text of bounds and filter literals).
std::string FormatTimestamp(int64_t micros);

bool IsCalendarType(ColumnType type);  // date or timestamp
// A calendar column's value in its unit (days or microseconds); nullopt when `text` does not parse
// as the column type's form. `type` must be a calendar type.
absl::optional<int64_t> ParseCalendarValue(ColumnType type, absl::string_view text);
std::string FormatCalendarValue(ColumnType type, int64_t value);
// The text PostgreSQL's input function of the column's SQL type (date, timestamp) reads as the
// same value: the canonical text, a timestamp without the 'Z' (which `timestamp` would ignore).
std::string CalendarSqlText(ColumnType type, int64_t value);
// What a value of the type looks like, for messages: "'YYYY-MM-DD'".
absl::string_view CalendarFormHint(ColumnType type);

// CalendarBucket (dataset_schema.h): the buckets a date or timestamp column is grouped by; a key
// is the bucket's first day.
absl::string_view CalendarBucketName(CalendarBucket bucket);  // "day", "week", "month"
absl::optional<CalendarBucket> ParseCalendarBucket(absl::string_view name);
// The first day (days since 1970-01-01) of the bucket holding `days`: itself, the Monday on or
// before it, or the 1st of its month.
int64_t BucketStart(CalendarBucket bucket, int64_t days);
// The first day of the bucket after the one that starts on `start` (a BucketStart).
int64_t NextBucketStart(CalendarBucket bucket, int64_t start);
// The day a column value falls on (a timestamp's UTC day).
int64_t CalendarDay(ColumnType type, int64_t value);

// The number of buckets from the one holding `lower` to the one holding `upper` (values in the
// column's unit, lower <= upper), and their keys 'YYYY-MM-DD' in order. The keys depend on the
// declared bounds only: they are the public group domain.
int64_t BucketCount(ColumnType type, CalendarBucket bucket, int64_t lower, int64_t upper);
std::vector<std::string> BucketKeys(ColumnType type, CalendarBucket bucket, int64_t lower,
                                    int64_t upper);

}  // namespace dpq::query

#endif  // DPQ_SERVER_QUERY_CALENDAR_H_
