// Dates in a DP SELECT, read exactly as the flag interface reads them (docs/decisions.md, "Dates
// and timestamps"): WHERE compares a date or timestamp column with DATE / TIMESTAMP literals in
// the --where language (analyzer_where.cc renders it; the filter clamps the column into its
// declared bounds), and GROUP BY DATE_TRUNC(column, part) is the --group-by entry "column:bucket",
// whose keys are every bucket the declared bounds span. Nothing here depends on the data.
#include <algorithm>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/query/calendar.h"
#include "server/sql/analyzer_clauses.h"
#include "server/sql/calendar_literal.h"
#include "server/sql/diagnostics.h"

namespace dpq::sql::internal {
namespace {

std::string LiteralForm(query::ColumnType type) {
  return type == query::ColumnType::kDate ? "DATE 'YYYY-MM-DD'"
                                          : "TIMESTAMP 'YYYY-MM-DD HH:MM:SS[.ffffff]'";
}

}  // namespace

absl::Status Analyzer::CalendarOperand(const ColumnSchema& c, const Expr& literal) const {
  if (literal.kind == Expr::Kind::kCalendar) {
    const query::ColumnType type = CalendarLiteralType(literal);
    if (c.type == type) return absl::OkStatus();
    if (c.is_calendar()) {
      return Invalid(literal.pos, absl::StrCat("column ", c.name, " is a ",
                                               query::ColumnTypeName(c.type), ": compare it with ",
                                               LiteralForm(c.type), ", not a ", literal.name));
    }
    return Invalid(literal.pos, absl::StrCat("a ", literal.name, " literal compares with a ",
                                             query::ColumnTypeName(type), " column; ", c.name,
                                             " is ", query::ColumnTypeName(c.type)));
  }
  // A quoted string is the flag interface's own literal: the filter language parses it.
  if (!c.is_calendar() || literal.kind == Expr::Kind::kString) return absl::OkStatus();
  return Invalid(literal.pos,
                 absl::StrCat("column ", c.name, " is a ", query::ColumnTypeName(c.type),
                              ": compare it with ", LiteralForm(c.type)));
}

absl::StatusOr<std::string> Analyzer::TruncGroup(const Expr& call) {
  if (call.distinct) return Invalid(call.pos, absl::StrCat(call.name, " takes no DISTINCT"));
  const Expr& operand = call.children[0];
  if (operand.kind != Expr::Kind::kColumn) {
    return Unsupported(operand.pos, absl::StrCat(call.name,
                                                 " truncates a date or timestamp column, not an "
                                                 "expression"));
  }
  ASSIGN_OR_RETURN(const ColumnSchema* c, Column(operand, /*calendar_ok=*/true));
  if (!c->is_calendar()) {
    return Invalid(operand.pos, absl::StrCat(call.name, " needs a date or timestamp column; ",
                                             c->name, " is ", query::ColumnTypeName(c->type)));
  }
  ASSIGN_OR_RETURN(const query::CalendarBucket bucket, TruncBucket(call));
  return absl::StrCat(c->name, ":", query::CalendarBucketName(bucket));
}

absl::Status Analyzer::GroupByTrunc(const Expr& call, Position at) {
  ASSIGN_OR_RETURN(const std::string group, TruncGroup(call));
  const std::string column = group.substr(0, group.find(':'));
  for (const std::string& g : out_.group_by) {
    if (g == column || absl::StartsWith(g, absl::StrCat(column, ":"))) {
      return Invalid(at, absl::StrCat("GROUP BY lists ", column, " twice"));
    }
  }
  if (out_.group_by.size() == 3) return Invalid(at, "GROUP BY takes at most 3 columns");
  if (max_rows_contributed_ > 0) {
    return Unsupported(at,
                       "max_rows_contributed is not supported with GROUP BY DATE_TRUNC; give "
                       "max_groups_contributed");
  }
  // The keys are the buckets' first days as text; the planner releases all of them.
  out_.group_by.push_back(group);
  key_types_.push_back(query::ColumnType::kText);
  out_.group_types.push_back(query::ColumnType::kText);
  group_expressions_.push_back(nullptr);
  group_canonical_.push_back("");
  return absl::OkStatus();
}

absl::StatusOr<OutputExpr> Analyzer::TruncKey(const Expr& call) {
  ASSIGN_OR_RETURN(const std::string group, TruncGroup(call));
  const auto it = std::find(out_.group_by.begin(), out_.group_by.end(), group);
  if (it == out_.group_by.end()) {
    return Invalid(call.pos, absl::StrCat(call.name,
                                          "(...) must be in GROUP BY to be selected, with the "
                                          "same column and date part"));
  }
  OutputExpr o;
  o.kind = OutputExpr::Kind::kKey;
  o.index = static_cast<int>(it - out_.group_by.begin());
  return o;
}

const Expr& Analyzer::SelectedTrunc(const Expr& g) const {
  if (g.kind != Expr::Kind::kColumn || !g.qualifier.empty() ||
      schema_.FindColumn(g.name) != nullptr) {
    return g;
  }
  for (const SelectItem& item : st_.select) {
    if (item.alias == g.name && IsCalendarTrunc(item.expr)) return item.expr;
  }
  return g;
}

}  // namespace dpq::sql::internal
