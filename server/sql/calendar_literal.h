// Dates in DP SQL's text: the literals DATE 'YYYY-MM-DD' and TIMESTAMP 'YYYY-MM-DD HH:MM:SS'
// (ZetaSQL's spelling; UTC) and the date part of DATE_TRUNC(column, DAY|WEEK|MONTH). Both are read
// into the forms the flag interface already takes (the --where literal, the group_by entry
// "column:bucket"), so a date in SQL is read exactly as the flags read it: clamped into the
// column's declared bounds, its buckets the declared ones (docs/decisions.md, "Dates and
// timestamps"). Pure: no data is consulted.
#ifndef DPQ_SERVER_SQL_CALENDAR_LITERAL_H_
#define DPQ_SERVER_SQL_CALENDAR_LITERAL_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/query/calendar.h"
#include "server/query/dataset_schema.h"
#include "server/sql/ast.h"

namespace dpq::sql {

// `word` (DATE or TIMESTAMP, upper-cased) followed by the string `text` at `pos`: an Expr of kind
// kCalendar holding the value's canonical text ('2026-02-01', '2026-02-01T12:00:00.500000Z').
// A TIMESTAMP may separate date and time by a space or a T, may omit the Z (it is always UTC)
// and may be a date alone (midnight). A text that is not a real value of the type in years
// 0001..9999 is INVALID_ARGUMENT quoting it and the form expected.
absl::StatusOr<Expr> CalendarLiteral(absl::string_view word, absl::string_view text, Position pos);

// The column type a kCalendar literal is a value of (kDate or kTimestamp).
query::ColumnType CalendarLiteralType(const Expr& literal);

// True for a call of DATE_TRUNC or TIMESTAMP_TRUNC (the parser keeps its date part in `text`).
bool IsCalendarTrunc(const Expr& e);

// The calendar bucket of DATE_TRUNC's date part: DAY, WEEK or ISOWEEK (both the ISO week from
// Monday, as --group-by COLUMN:week), MONTH; INVALID_ARGUMENT at `pos` naming them otherwise.
absl::StatusOr<query::CalendarBucket> TruncBucket(const Expr& call);

}  // namespace dpq::sql

#endif  // DPQ_SERVER_SQL_CALENDAR_LITERAL_H_
