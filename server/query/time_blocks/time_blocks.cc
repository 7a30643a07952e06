#include "server/query/time_blocks/time_blocks.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "server/base/status_macros.h"
#include "server/query/calendar.h"
#include "server/query/filter/type_checker.h"

namespace dpq::query {
namespace {

using filter::CompareOp;
using filter::Expr;
using filter::TypedExpr;
using filter::TypedValue;

const ColumnSchema& BlockColumn(const DatasetSchema& schema) {
  return *schema.FindColumn(schema.time_blocks->column);
}

// A typed date or timestamp literal in the column's unit (days or microseconds). The checker made
// its text canonical (a timestamp without its 'Z'), so it always parses.
absl::optional<int64_t> ValueOf(ColumnType type, const TypedValue& v) {
  return ParseCalendarValue(type,
                            type == ColumnType::kTimestamp ? absl::StrCat(v.text, "Z") : v.text);
}

// Narrows [lo, hi] (column units) by one conjunct on the block column. Comparisons are of the
// clamped column with exact integer literals, so `x < v` is `x <= v - 1` (no value lies between);
// years are 0001..9999, far from overflow.
void Narrow(const TypedExpr& e, ColumnType type, int64_t& lo, int64_t& hi) {
  if (e.kind == Expr::Kind::kBetween && !e.negated) {
    const absl::optional<int64_t> a = ValueOf(type, e.values[0]), b = ValueOf(type, e.values[1]);
    if (a) lo = std::max(lo, *a);
    if (b) hi = std::min(hi, *b);
    return;
  }
  if (e.kind != Expr::Kind::kCompare) return;
  const absl::optional<int64_t> v = ValueOf(type, e.values[0]);
  if (!v) return;
  switch (e.op) {
    case CompareOp::kEq: lo = std::max(lo, *v), hi = std::min(hi, *v); return;
    case CompareOp::kLt: hi = std::min(hi, *v - 1); return;
    case CompareOp::kLe: hi = std::min(hi, *v); return;
    case CompareOp::kGt: lo = std::max(lo, *v + 1); return;
    case CompareOp::kGe: lo = std::max(lo, *v); return;
    case CompareOp::kNe: return;
  }
}

}  // namespace

std::vector<int64_t> BlockStarts(CalendarBucket width, const BlockRange& range) {
  std::vector<int64_t> starts;
  for (int64_t b = range.first; b <= range.last; b = NextBucketStart(width, b)) starts.push_back(b);
  return starts;
}

int64_t BlockCount(CalendarBucket width, const BlockRange& range) {
  return BucketCount(ColumnType::kDate, width, range.first, range.last);
}

std::string FormatBlockRange(CalendarBucket width, const BlockRange& range) {
  return absl::StrCat(CalendarBucketName(width), ":", FormatDate(range.first), ":",
                      FormatDate(range.last));
}

absl::optional<PaidBlocks> ParseBlockRange(absl::string_view text) {
  const std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
  if (parts.size() != 3) return absl::nullopt;
  const absl::optional<CalendarBucket> width = ParseCalendarBucket(parts[0]);
  const absl::optional<int64_t> first = ParseDate(parts[1]), last = ParseDate(parts[2]);
  if (!width || !first || !last || *first > *last) return absl::nullopt;
  return PaidBlocks{*width, BlockRange{*first, *last}};
}

int64_t FirstBlockStart(const DatasetSchema& schema) {
  const ColumnSchema& c = BlockColumn(schema);
  return BucketStart(schema.time_blocks->width, CalendarDay(c.type, *c.calendar_lower));
}

int64_t CurrentBlockStart(CalendarBucket width, int64_t today) { return BucketStart(width, today); }

absl::StatusOr<BlockRange> BlocksToPay(const DatasetSchema& schema,
                                       const filter::TypedFilter* filter, int64_t today) {
  const ColumnSchema& c = BlockColumn(schema);
  const CalendarBucket width = schema.time_blocks->width;
  int64_t lo = *c.calendar_lower, hi = *c.calendar_upper;
  if (filter != nullptr) {
    const TypedExpr& root = filter->root;
    if (root.kind == Expr::Kind::kAnd) {
      for (const TypedExpr& term : root.children) {
        if (term.column == c.name) Narrow(term, c.type, lo, hi);
      }
    } else if (root.column == c.name) {
      Narrow(root, c.type, lo, hi);
    }
  }
  const int64_t last_day = std::min(CalendarDay(c.type, hi), today);
  if (lo > hi || CalendarDay(c.type, lo) > last_day) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the WHERE range of ", c.name, " leaves no time block that has started (blocks of one ",
        CalendarBucketName(width), " from ", FormatDate(FirstBlockStart(schema)),
        ", the last one started on ", FormatDate(CurrentBlockStart(width, today)),
        "); ask about a range of ", c.name, " inside those blocks"));
  }
  const BlockRange range{BucketStart(width, CalendarDay(c.type, lo)), BucketStart(width, last_day)};
  if (const int64_t n = BlockCount(width, range); n > kMaxBlocksPerQuery) {
    return absl::InvalidArgumentError(
        absl::StrCat("the query would read ", n, " time blocks of ", c.name, "; at most ",
                     kMaxBlocksPerQuery, " per query: narrow the WHERE range of ", c.name));
  }
  return range;
}

absl::StatusOr<filter::TypedFilter> RestrictToBlocks(
    const DatasetSchema& schema, const absl::optional<filter::TypedFilter>& filter,
    const BlockRange& range) {
  const ColumnSchema& c = BlockColumn(schema);
  const int64_t end_day = NextBucketStart(schema.time_blocks->width, range.last);
  // The last instant of the range: its last day, or the microsecond before the next block.
  const int64_t last = c.type == ColumnType::kDate ? end_day - 1 : end_day * kMicrosPerDay - 1;
  const int64_t first = c.type == ColumnType::kDate ? range.first : range.first * kMicrosPerDay;
  // Through the filter language's own checker: the restriction is clamped and rendered exactly as
  // an analyst's `--where` on the column is (one code path into the scan-totality test).
  ASSIGN_OR_RETURN(filter::TypedFilter restriction,
                   filter::ParseAndCheckFilter(
                       absl::StrCat(c.name, " BETWEEN '", FormatCalendarValue(c.type, first),
                                    "' AND '", FormatCalendarValue(c.type, last), "'"),
                       schema));
  if (!filter.has_value()) return restriction;
  filter::TypedFilter both;
  both.root.kind = Expr::Kind::kAnd;
  both.root.children = {filter->root, std::move(restriction.root)};
  both.value_count = filter->value_count + restriction.value_count;
  return both;
}

}  // namespace dpq::query
