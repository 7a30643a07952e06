// Per-row expressions in a DP SELECT: a WHERE outside the filter language becomes the parts' row
// condition, and GROUP BY an expression (or the alias of a selected one) a computed group key.
// Both are lowered (expression_lowering.h) and checked against the declared schema here, so a
// refusal names its SQL position before anything is planned or charged; the planner checks them
// again (server/query/expression_planning.h) as it does any QuerySpec.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "server/base/status_macros.h"
#include "server/sql/analyzer_clauses.h"
#include "server/sql/diagnostics.h"
#include "server/sql/expression_lowering.h"
#include "server/sql/width_bucket.h"

namespace dpq::sql::internal {
namespace {

namespace qe = query::expression;

// The checker's message ("line L, column C: what") in the front end's shape ("sql: line L,
// column C: what"), at `fallback` when the checker names no position.
absl::Status AtSqlPosition(const absl::Status& s, Position fallback) {
  std::string what(s.message());
  if (!absl::StartsWith(what, "line ")) what = absl::StrCat(FormatPosition(fallback), ": ", what);
  return absl::Status(s.code(), absl::StrCat("sql: ", what));
}

// The output type of a group key computed by an expression of `type` (a BOOL key is released as
// its text, "true" / "false").
query::ColumnType KeyColumnType(qe::ValueType type) {
  switch (type) {
    case qe::ValueType::kInt64: return query::ColumnType::kInteger;
    case qe::ValueType::kFloat64: return query::ColumnType::kDouble;
    default: return query::ColumnType::kText;
  }
}

bool IsAggregateCall(const Expr& e) {
  return e.kind == Expr::Kind::kCall && SqlAggregateFunctions().count(e.name) > 0;
}

// The first aggregate call inside `e`, or null.
const Expr* FindAggregate(const Expr& e) {
  if (IsAggregateCall(e)) return &e;
  for (const Expr& child : e.children) {
    if (const Expr* found = FindAggregate(child)) return found;
  }
  return nullptr;
}

bool ReadsAColumn(const Expr& e) {
  if (e.kind == Expr::Kind::kColumn) return true;
  for (const Expr& child : e.children) {
    if (ReadsAColumn(child)) return true;
  }
  return false;
}

// WHERE and GROUP BY act on rows before they are aggregated, so an aggregate there has no value.
absl::Status NoAggregateIn(const Expr& e, absl::string_view clause) {
  const Expr* aggregate = FindAggregate(e);
  if (aggregate == nullptr) return absl::OkStatus();
  return Invalid(aggregate->pos, absl::StrCat(clause, " cannot use an aggregate (", aggregate->name,
                                              "): it acts on rows before they are aggregated"));
}

}  // namespace

absl::Status Analyzer::ResolveColumns(const Expr& e) {
  if (e.kind == Expr::Kind::kColumn) return Column(e).status();
  for (const Expr& child : e.children) RETURN_IF_ERROR(ResolveColumns(child));
  return absl::OkStatus();
}

absl::StatusOr<qe::CheckedExpression> Analyzer::Checked(const Expr& e) {
  ASSIGN_OR_RETURN(qe::Expr lowered, LowerExpression(e));
  RETURN_IF_ERROR(ResolveColumns(e));
  absl::StatusOr<qe::CheckedExpression> checked = qe::CheckExpression(lowered, schema_);
  if (!checked.ok()) return AtSqlPosition(checked.status(), e.pos);
  return checked;
}

absl::Status Analyzer::Where() {
  absl::StatusOr<std::string> rendered = RenderWhere(st_.where);
  if (rendered.ok()) {
    where_ = *std::move(rendered);
    return DeclaredKeys();
  }
  // Refusals of the filter language's own forms (an unknown column, `= NULL`) stand; a clause
  // merely outside it (column against column, arithmetic, CASE, functions) is a row condition.
  if (rendered.status().code() != absl::StatusCode::kUnimplemented) return rendered.status();
  RETURN_IF_ERROR(NoAggregateIn(st_.where, "WHERE"));
  ASSIGN_OR_RETURN(qe::CheckedExpression checked, Checked(st_.where));
  if (checked.root.type != qe::ValueType::kBool) {
    return Invalid(st_.where.pos,
                   absl::StrCat("WHERE needs a condition (BOOL), not a value of type ",
                                qe::ValueTypeName(checked.root.type)));
  }
  ASSIGN_OR_RETURN(qe::Expr lowered, LowerExpression(st_.where));
  row_condition_ = std::make_shared<const qe::Expr>(std::move(lowered));
  return DeclaredKeys();
}

const SelectItem* Analyzer::SelectedByAlias(const Expr& g) const {
  if (g.kind != Expr::Kind::kColumn || !g.qualifier.empty() ||
      schema_.FindColumn(g.name) != nullptr) {
    return nullptr;
  }
  for (const SelectItem& item : st_.select) {
    if (item.alias == g.name) return &item;
  }
  return nullptr;
}

absl::Status Analyzer::GroupByExpression(const Expr& by, const std::string& alias, Position at) {
  if (!alias.empty() && IsAggregateCall(by)) {
    return Invalid(at, absl::StrCat("GROUP BY ", alias,
                                    " names an aggregate: group by columns or per-row "
                                    "expressions"));
  }
  RETURN_IF_ERROR(NoAggregateIn(by, "GROUP BY"));
  if (by.kind == Expr::Kind::kNumber) {
    return Unsupported(at,
                       "GROUP BY a select-list position is not supported: name the column or "
                       "write the expression");
  }
  if (!ReadsAColumn(by)) {
    return Invalid(at,
                   "GROUP BY a constant makes one group: group by a column or an expression "
                   "over columns, or leave GROUP BY out");
  }
  if (max_rows_contributed_ > 0) {
    return Unsupported(at,
                       "max_rows_contributed is not supported with GROUP BY an expression; "
                       "give max_groups_contributed");
  }
  ASSIGN_OR_RETURN(qe::CheckedExpression checked, Checked(by));
  // The label: the alias that names the expression in the select list (unless a column has that
  // name, which GROUP BY would read instead), else its canonical text.
  std::string label = alias;
  for (const SelectItem& item : st_.select) {
    if (!label.empty()) break;
    if (item.alias.empty() || schema_.FindColumn(item.alias) != nullptr) continue;
    if (item.expr.kind == Expr::Kind::kColumn || IsAggregateCall(item.expr)) continue;
    absl::StatusOr<qe::CheckedExpression> selected = Checked(item.expr);
    if (selected.ok() && selected->canonical == checked.canonical) label = item.alias;
  }
  if (label.empty()) label = checked.canonical;
  if (std::find(out_.group_by.begin(), out_.group_by.end(), label) != out_.group_by.end() ||
      std::find(group_canonical_.begin(), group_canonical_.end(), checked.canonical) !=
          group_canonical_.end()) {
    return Invalid(at, absl::StrCat("GROUP BY lists ", label, " twice"));
  }
  if (out_.group_by.size() == 3) return Invalid(at, "GROUP BY takes at most 3 columns");
  const query::ColumnType type = KeyColumnType(checked.root.type);
  out_.group_by.push_back(label);
  key_types_.push_back(type);
  out_.group_types.push_back(type);
  group_canonical_.push_back(checked.canonical);
  // A key that can only be one of the literals written in the query is public: every listed key
  // is released, no partition selection (and no delta) for it.
  if (checked.literal_results.empty()) needs_selection_ = true;
  if (out_.group_by.size() == 1) keys_ = checked.literal_results;  // kept if it stays alone
  ASSIGN_OR_RETURN(qe::Expr lowered, LowerExpression(by));
  group_expressions_.push_back(std::make_shared<const qe::Expr>(std::move(lowered)));
  return absl::OkStatus();
}

absl::optional<OutputExpr> Analyzer::GroupExpressionKey(const SelectItem& item) {
  const auto key_at = [](size_t i) -> absl::optional<OutputExpr> {
    OutputExpr o;
    o.kind = OutputExpr::Kind::kKey;
    o.index = static_cast<int>(i);
    return o;
  };
  const Expr& e = item.expr;
  if (e.kind == Expr::Kind::kColumn) {
    // A bare name that is no column: the alias of a GROUP BY expression.
    if (!e.qualifier.empty() || schema_.FindColumn(e.name) != nullptr) return absl::nullopt;
    for (size_t i = 0; i < group_expressions_.size(); ++i) {
      if (group_expressions_[i] != nullptr && out_.group_by[i] == e.name) return key_at(i);
    }
    return absl::nullopt;
  }
  if (IsAggregateCall(e) || IsWidthBucket(e)) return absl::nullopt;
  if (std::none_of(group_expressions_.begin(), group_expressions_.end(),
                   [](const ExprPtr& g) { return g != nullptr; })) {
    return absl::nullopt;
  }
  // Anything that does not check as a per-row expression (arithmetic over aggregates, ...) is
  // the select list's to compile or refuse.
  absl::StatusOr<qe::CheckedExpression> checked = Checked(e);
  if (!checked.ok()) return absl::nullopt;
  for (size_t i = 0; i < group_canonical_.size(); ++i) {
    if (group_expressions_[i] != nullptr && group_canonical_[i] == checked->canonical) {
      return key_at(i);
    }
  }
  return absl::nullopt;
}

void Analyzer::AttachExpressions() {
  const bool any_group_expression =
      std::any_of(group_expressions_.begin(), group_expressions_.end(),
                  [](const ExprPtr& g) { return g != nullptr; });
  for (QuerySpec& part : out_.parts) {
    if (row_condition_ != nullptr) part.row_condition = row_condition_;
    if (bucket_expression_ != nullptr && part.aggregate == AggregateKind::kHistogram) {
      part.column.clear();
      part.value_expression = bucket_expression_;
    }
    // A part that keeps the statement's keys (the text histogram under max_rows_contributed
    // moves its one column into the aggregate) gets one expression per key.
    if (any_group_expression && part.group_by == out_.group_by) {
      part.group_expressions = group_expressions_;
    }
  }
}

}  // namespace dpq::sql::internal
