#include "server/query/expression_planning.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"

namespace dpq::query {
namespace {

using expression::CheckedExpression;
using expression::ValueType;

bool IsNumeric(ValueType t) { return t == ValueType::kInt64 || t == ValueType::kFloat64; }

// Prefixes a refusal's message with the field it concerns, keeping its code.
absl::Status Within(absl::string_view field, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(field, ": ", status.message()));
}

absl::StatusOr<CheckedExpressionPtr> Check(const expression::Expr& e, const DatasetSchema& schema,
                                           absl::string_view field) {
  absl::StatusOr<CheckedExpression> checked = expression::CheckExpression(e, schema);
  if (!checked.ok()) return Within(field, checked.status());
  return std::make_shared<const CheckedExpression>(*std::move(checked));
}

// The stand-in column's declared bounds: the derived ones, a point widened to include 0.
void SetStandInBounds(const ValueInterval& derived, ColumnSchema& column) {
  double lower = std::min(derived.lower, 0.0);
  double upper = std::max(derived.upper, 0.0);
  if (derived.lower < derived.upper) {
    lower = derived.lower;
    upper = derived.upper;
  } else if (lower == upper) {
    upper = 1;  // the constant 0
  }
  column.lower = lower;
  column.upper = upper;
}

}  // namespace

absl::StatusOr<ValueExpression> CheckValueExpression(const QuerySpec& spec,
                                                     const DatasetSchema& schema) {
  const std::string field(AggregateName(spec.aggregate));
  ValueExpression out;
  ASSIGN_OR_RETURN(out.checked, Check(*spec.value_expression, schema, field));
  const CheckedExpression& checked = *out.checked;
  if (spec.aggregate == AggregateKind::kCount) return out;  // counts rows where it is not NULL
  if (!IsNumeric(checked.root.type)) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": the expression ", QuoteForMessage(checked.canonical), " is ",
                     expression::ValueTypeName(checked.root.type), "; ", field, " needs a number"));
  }
  auto column = std::make_shared<ColumnSchema>();
  column->name = checked.canonical;
  column->type =
      checked.root.type == ValueType::kInt64 ? ColumnType::kInteger : ColumnType::kDouble;
  const bool given = spec.lower.has_value() || spec.upper.has_value();
  if (given) {
    // Bounds the analyst gives clamp the expression's value as they would a column's (ZetaSQL's
    // contribution bounds); they may be wider than derived ones (that only adds noise), so the
    // stand-in declares none and nothing is checked against them.
  } else if (checked.bounds.has_value()) {
    SetStandInBounds(*checked.bounds, *column);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": the bounds of ", QuoteForMessage(checked.canonical),
                     " cannot be derived: column ", checked.unbounded_column,
                     " has no declared bounds; declare them (dpqctl dataset create --bounds ",
                     checked.unbounded_column,
                     "=L:U) or give the aggregate's bounds (lower/upper, in SQL "
                     "contribution_bounds_per_row => (L, U))"));
  }
  out.stand_in = std::move(column);
  return out;
}

absl::StatusOr<CheckedExpressionPtr> CheckRowCondition(const expression::Expr& condition,
                                                       const DatasetSchema& schema) {
  ASSIGN_OR_RETURN(CheckedExpressionPtr checked, Check(condition, schema, "where"));
  const ValueType t = checked->root.type;
  if (t != ValueType::kBool && t != ValueType::kNull) {
    return absl::InvalidArgumentError(
        absl::StrCat("where: the condition ", QuoteForMessage(checked->canonical), " is ",
                     expression::ValueTypeName(t), "; a row condition must be BOOL"));
  }
  return checked;
}

absl::StatusOr<CheckedExpressionPtr> CheckGroupExpression(const expression::Expr& key,
                                                          const std::string& label,
                                                          const DatasetSchema& schema) {
  return Check(key, schema, absl::StrCat("group_by ", label));
}

std::string ExpressionFingerprint(const ScanPlan& scan) {
  std::string f;
  const auto add = [&f](absl::string_view name, const CheckedExpressionPtr& e) {
    if (e != nullptr) absl::StrAppend(&f, "|", name, "=", e->canonical.size(), ":", e->canonical);
  };
  add("value", scan.value_expression);
  add("row_condition", scan.row_condition);
  for (size_t i = 0; i < scan.group_expressions.size(); ++i) {
    add(absl::StrCat("group_expression", i), scan.group_expressions[i]);
  }
  return f;
}

}  // namespace dpq::query
