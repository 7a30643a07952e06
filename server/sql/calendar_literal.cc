#include "server/sql/calendar_literal.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "server/base/validation.h"
#include "server/sql/diagnostics.h"

namespace dpq::sql {
namespace {

// ZetaSQL's timestamp spellings in the one form query::ParseTimestamp reads: a space becomes the
// T, a missing Z is added (there is no other zone), a date alone is its midnight.
std::string TimestampForm(absl::string_view text) {
  std::string s(text);
  if (s.size() == 10) s += "T00:00:00";
  if (s.size() > 10 && s[10] == ' ') s[10] = 'T';
  if (s.empty() || s.back() != 'Z') s += "Z";
  return s;
}

// The literal as SQL writes it, 'text', bounded and escaped as every echoed value is.
std::string Quoted(absl::string_view text) {
  const std::string q = QuoteForMessage(text);  // "text", escaped, its first 64 bytes
  return absl::StrCat("'", absl::string_view(q).substr(1, q.size() - 2), "'");
}

}  // namespace

absl::StatusOr<Expr> CalendarLiteral(absl::string_view word, absl::string_view text, Position pos) {
  Expr e;
  e.kind = Expr::Kind::kCalendar;
  e.pos = pos;
  e.name = std::string(word);
  if (word == "DATE") {
    const absl::optional<int64_t> days = query::ParseDate(text);
    if (days.has_value()) {
      e.text = query::FormatDate(*days);
      return e;
    }
    return Invalid(pos, absl::StrCat("DATE ", Quoted(text),
                                     " is not a date: write DATE 'YYYY-MM-DD', a real day in "
                                     "years 0001..9999"));
  }
  const absl::optional<int64_t> micros = query::ParseTimestamp(TimestampForm(text));
  if (micros.has_value()) {
    e.text = query::FormatTimestamp(*micros);
    return e;
  }
  return Invalid(pos, absl::StrCat("TIMESTAMP ", Quoted(text),
                                   " is not a timestamp: write TIMESTAMP 'YYYY-MM-DD "
                                   "HH:MM:SS[.ffffff]' (UTC; a T for the space and a final Z are "
                                   "accepted), a real instant in years 0001..9999"));
}

query::ColumnType CalendarLiteralType(const Expr& literal) {
  return literal.name == "DATE" ? query::ColumnType::kDate : query::ColumnType::kTimestamp;
}

bool IsCalendarTrunc(const Expr& e) {
  return e.kind == Expr::Kind::kCall && (e.name == "DATE_TRUNC" || e.name == "TIMESTAMP_TRUNC");
}

absl::StatusOr<query::CalendarBucket> TruncBucket(const Expr& call) {
  if (call.text == "DAY") return query::CalendarBucket::kDay;
  if (call.text == "WEEK" || call.text == "ISOWEEK") return query::CalendarBucket::kWeek;
  if (call.text == "MONTH") return query::CalendarBucket::kMonth;
  return Invalid(call.pos, absl::StrCat(call.name,
                                        " truncates to DAY, WEEK (ISO, from Monday) or "
                                        "MONTH; got ",
                                        call.text));
}

}  // namespace dpq::sql
