#include "server/sql/analyzer.h"

#include "server/sql/analyzer_clauses.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "server/base/status_macros.h"
#include "server/query/filter/type_checker.h"
#include "server/query/planner.h"
#include "server/query/privacy_units.h"
#include "server/sql/diagnostics.h"
#include "server/sql/number_literal.h"
#include "server/sql/width_bucket.h"

namespace dpq::sql {
namespace internal {

// The literal's text as the filter language spells it (sign folded into the number).
absl::optional<std::string> FilterLiteral(const Expr& e) {
  // A DATE / TIMESTAMP literal is the quoted canonical text the filter language reads for a
  // column of its type (Analyzer::CalendarOperand checks the type).
  if (e.kind == Expr::Kind::kString || e.kind == Expr::Kind::kCalendar) {
    std::string out = "'";
    for (char c : e.text) {
      out.push_back(c);
      if (c == '\'') out.push_back('\'');
    }
    out.push_back('\'');
    return out;
  }
  if (e.kind == Expr::Kind::kNumber) return e.text;
  if (e.kind == Expr::Kind::kUnary && (e.op == "-" || e.op == "+") &&
      e.children[0].kind == Expr::Kind::kNumber) {
    return absl::StrCat(e.op == "-" ? "-" : "", e.children[0].text);
  }
  return absl::nullopt;
}

std::string OutputTypeOf(query::ColumnType t) {
  switch (t) {
    case query::ColumnType::kInteger: return "int64";
    case query::ColumnType::kDouble: return "float64";
    case query::ColumnType::kText:
    case query::ColumnType::kDate:  // DP SQL never outputs one (its DATE_TRUNC keys are text)
    case query::ColumnType::kTimestamp: return "string";
  }
  return "string";
}

absl::StatusOr<CompiledStatement> Analyzer::Run() {
  out_.dataset = schema_.name;
  RETURN_IF_ERROR(Options());
  RETURN_IF_ERROR(GroupBy());
  if (st_.has_where) RETURN_IF_ERROR(Where());
  int unnamed = 0;
  for (const SelectItem& item : st_.select) {
    OutputColumn column;
    if (item.expr.kind == Expr::Kind::kStar) {
      return Unsupported(item.pos, "SELECT * is not supported: name the group keys and aggregates");
    }
    absl::optional<OutputExpr> key = GroupExpressionKey(item);
    if (key) {
      column.expr = *std::move(key);
    } else {
      ASSIGN_OR_RETURN(column.expr, Output(item.expr));
    }
    column.name = !item.alias.empty()                     ? item.alias
                  : item.expr.kind == Expr::Kind::kColumn ? item.expr.name
                                                          : absl::StrCat("f", unnamed++, "_");
    column.type = TypeOf(column.expr);
    out_.columns.push_back(std::move(column));
  }
  if (out_.parts.empty()) RETURN_IF_ERROR(KeysOnlyPart());
  AttachExpressions();
  RETURN_IF_ERROR(SplitBudget());
  RETURN_IF_ERROR(OrderBy());
  if (st_.has_limit) out_.limit = st_.limit;
  return std::move(out_);
}

}  // namespace internal

absl::StatusOr<std::string> DatasetOf(const Script& script) {
  if (script.statements.empty()) return absl::InvalidArgumentError("sql: the script is empty");
  const std::string& first = script.statements[0].table;
  for (const Statement& s : script.statements) {
    if (s.table != first) {
      return Invalid(s.table_pos, absl::StrCat("every statement of a script reads one dataset (",
                                               first, "); this one reads ", s.table));
    }
  }
  return first;
}

const std::map<std::string, query::AggregateKind>& SqlAggregateFunctions() {
  static const auto* const kFunctions = new std::map<std::string, query::AggregateKind>{
      {"COUNT", query::AggregateKind::kCount},
      {"SUM", query::AggregateKind::kSum},
      {"AVG", query::AggregateKind::kMean},
      {"VAR_POP", query::AggregateKind::kVariance},
      {"STDDEV_POP", query::AggregateKind::kStddev},
      {"PERCENTILE_CONT", query::AggregateKind::kQuantile},
      {"APPROX_QUANTILES", query::AggregateKind::kQuantile}};
  return *kFunctions;
}

absl::StatusOr<CompiledStatement> Analyze(const Statement& statement,
                                          const query::DatasetSchema& schema) {
  internal::Analyzer a(statement, schema);
  ASSIGN_OR_RETURN(CompiledStatement out, a.Run());
  // The WHERE clause must type-check as the --where language does (column types, literal kinds);
  // its errors point at the WHERE clause.
  for (const query::QuerySpec& part : out.parts) {
    if (part.where.empty()) continue;
    absl::StatusOr<query::filter::TypedFilter> typed =
        query::filter::ParseAndCheckFilter(part.where, schema);
    if (!typed.ok()) {
      std::string message(typed.status().message());
      // "where: at position N: what" names a position in the compiled filter, not in the SQL.
      const size_t cut = message.find(": ", message.find("position"));
      if (message.rfind("where: at position", 0) == 0 && cut != std::string::npos) {
        message = message.substr(cut + 2);
      }
      return absl::Status(
          typed.status().code(),
          absl::StrCat("sql: ", FormatPosition(statement.where.pos), ": WHERE: ", message));
    }
  }
  return out;
}

}  // namespace dpq::sql
