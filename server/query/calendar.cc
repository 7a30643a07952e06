#include "server/query/calendar.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"

namespace dpq::query {
namespace {

constexpr int64_t kMinYear = 1;
constexpr int64_t kMaxYear = 9999;

bool IsLeap(int64_t y) { return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0); }

int DaysInMonth(int64_t y, int m) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && IsLeap(y) ? 29 : kDays[m - 1];
}

// `count` ASCII digits at text[*pos], as a number; advances *pos. False when any is not a digit.
bool Digits(absl::string_view text, size_t* pos, size_t count, int64_t* out) {
  if (*pos + count > text.size()) return false;
  int64_t v = 0;
  for (size_t i = 0; i < count; ++i) {
    const char c = text[*pos + i];
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
    v = v * 10 + (c - '0');
  }
  *pos += count;
  *out = v;
  return true;
}

bool Expect(absl::string_view text, size_t* pos, char c) {
  if (*pos >= text.size() || text[*pos] != c) return false;
  ++*pos;
  return true;
}

// 'YYYY-MM-DD' at the start of `text`; advances *pos past it.
absl::optional<int64_t> ParseDay(absl::string_view text, size_t* pos) {
  int64_t y = 0, m = 0, d = 0;
  if (!Digits(text, pos, 4, &y) || !Expect(text, pos, '-') || !Digits(text, pos, 2, &m) ||
      !Expect(text, pos, '-') || !Digits(text, pos, 2, &d)) {
    return absl::nullopt;
  }
  if (y < kMinYear || y > kMaxYear || m < 1 || m > 12 || d < 1 ||
      d > DaysInMonth(y, static_cast<int>(m))) {
    return absl::nullopt;
  }
  return DaysFromCivil(CivilDate{y, static_cast<int>(m), static_cast<int>(d)});
}

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

}  // namespace

int64_t DaysFromCivil(const CivilDate& date) {
  const int64_t m = date.month;
  const int64_t y = date.year - (m <= 2);
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;                                           // [0, 399]
  const int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + date.day - 1;  // [0, 365]
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;                   // [0, 146096]
  return era * 146097 + doe - 719468;
}

CivilDate CivilFromDays(int64_t days) {
  const int64_t z = days + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;                                       // [0, 146096]
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;  // [0, 399]
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);                // [0, 365]
  const int64_t mp = (5 * doy + 2) / 153;                                     // [0, 11]
  CivilDate out;
  out.day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  out.month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  out.year = yoe + era * 400 + (out.month <= 2);
  return out;
}

int IsoWeekday(int64_t days) {
  // 1970-01-01 was a Thursday (ISO index 3).
  return static_cast<int>(((days + 3) % 7 + 7) % 7);
}

absl::optional<int64_t> ParseDate(absl::string_view text) {
  size_t pos = 0;
  absl::optional<int64_t> day = ParseDay(text, &pos);
  if (!day.has_value() || pos != text.size()) return absl::nullopt;
  return day;
}

absl::optional<int64_t> ParseTimestamp(absl::string_view text) {
  size_t pos = 0;
  absl::optional<int64_t> day = ParseDay(text, &pos);
  int64_t h = 0, mi = 0, s = 0;
  if (!day.has_value() || !Expect(text, &pos, 'T') || !Digits(text, &pos, 2, &h) ||
      !Expect(text, &pos, ':') || !Digits(text, &pos, 2, &mi) || !Expect(text, &pos, ':') ||
      !Digits(text, &pos, 2, &s) || h > 23 || mi > 59 || s > 59) {
    return absl::nullopt;
  }
  int64_t micros = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    size_t digits = 0;
    while (pos < text.size() && absl::ascii_isdigit(static_cast<unsigned char>(text[pos])) &&
           digits < 6) {
      micros = micros * 10 + (text[pos++] - '0');
      ++digits;
    }
    if (digits == 0) return absl::nullopt;
    for (; digits < 6; ++digits) micros *= 10;
  }
  if (!Expect(text, &pos, 'Z') || pos != text.size()) return absl::nullopt;
  return *day * kMicrosPerDay + ((h * 60 + mi) * 60 + s) * kMicrosPerSecond + micros;
}

std::string FormatDate(int64_t days) {
  const CivilDate c = CivilFromDays(days);
  return absl::StrFormat("%04d-%02d-%02d", c.year, c.month, c.day);
}

std::string FormatTimestamp(int64_t micros) {
  const int64_t day = FloorDiv(micros, kMicrosPerDay);
  int64_t rest = micros - day * kMicrosPerDay;
  const int64_t fraction = rest % kMicrosPerSecond;
  rest /= kMicrosPerSecond;
  std::string out =
      absl::StrFormat("%sT%02d:%02d:%02d", FormatDate(day), rest / 3600, rest / 60 % 60, rest % 60);
  if (fraction != 0) absl::StrAppend(&out, absl::StrFormat(".%06d", fraction));
  out.push_back('Z');
  return out;
}

bool IsCalendarType(ColumnType type) {
  return type == ColumnType::kDate || type == ColumnType::kTimestamp;
}

absl::optional<int64_t> ParseCalendarValue(ColumnType type, absl::string_view text) {
  return type == ColumnType::kDate ? ParseDate(text) : ParseTimestamp(text);
}

std::string FormatCalendarValue(ColumnType type, int64_t value) {
  return type == ColumnType::kDate ? FormatDate(value) : FormatTimestamp(value);
}

std::string CalendarSqlText(ColumnType type, int64_t value) {
  std::string text = FormatCalendarValue(type, value);
  if (type == ColumnType::kTimestamp) text.pop_back();  // the 'Z'
  return text;
}

absl::string_view CalendarFormHint(ColumnType type) {
  return type == ColumnType::kDate ? "'YYYY-MM-DD'" : "'YYYY-MM-DDTHH:MM:SS[.ffffff]Z' (UTC)";
}

absl::string_view CalendarBucketName(CalendarBucket bucket) {
  switch (bucket) {
    case CalendarBucket::kDay: return "day";
    case CalendarBucket::kWeek: return "week";
    case CalendarBucket::kMonth: return "month";
  }
  return "day";
}

absl::optional<CalendarBucket> ParseCalendarBucket(absl::string_view name) {
  if (name == "day") return CalendarBucket::kDay;
  if (name == "week") return CalendarBucket::kWeek;
  if (name == "month") return CalendarBucket::kMonth;
  return absl::nullopt;
}

int64_t BucketStart(CalendarBucket bucket, int64_t days) {
  switch (bucket) {
    case CalendarBucket::kDay: return days;
    case CalendarBucket::kWeek: return days - IsoWeekday(days);
    case CalendarBucket::kMonth: {
      CivilDate c = CivilFromDays(days);
      c.day = 1;
      return DaysFromCivil(c);
    }
  }
  return days;
}

int64_t NextBucketStart(CalendarBucket bucket, int64_t start) {
  if (bucket != CalendarBucket::kMonth) return start + (bucket == CalendarBucket::kWeek ? 7 : 1);
  CivilDate c = CivilFromDays(start);
  c.month == 12 ? (c.year += 1, c.month = 1) : ++c.month;
  c.day = 1;
  return DaysFromCivil(c);
}

int64_t CalendarDay(ColumnType type, int64_t value) {
  return type == ColumnType::kDate ? value : FloorDiv(value, kMicrosPerDay);
}

int64_t BucketCount(ColumnType type, CalendarBucket bucket, int64_t lower, int64_t upper) {
  const int64_t first = CalendarDay(type, lower), last = CalendarDay(type, upper);
  switch (bucket) {
    case CalendarBucket::kDay: return last - first + 1;
    case CalendarBucket::kWeek:
      return (BucketStart(bucket, last) - BucketStart(bucket, first)) / 7 + 1;
    case CalendarBucket::kMonth: {
      const CivilDate a = CivilFromDays(first), b = CivilFromDays(last);
      return (b.year * 12 + b.month) - (a.year * 12 + a.month) + 1;
    }
  }
  return 0;
}

std::vector<std::string> BucketKeys(ColumnType type, CalendarBucket bucket, int64_t lower,
                                    int64_t upper) {
  std::vector<std::string> keys;
  const int64_t last = CalendarDay(type, upper);
  for (int64_t day = BucketStart(bucket, CalendarDay(type, lower)); day <= last;) {
    keys.push_back(FormatDate(day));
    day = NextBucketStart(bucket, day);
  }
  return keys;
}

}  // namespace dpq::query
