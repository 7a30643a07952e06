// The planner's use of per-row expressions (QuerySpec::value_expression, row_condition,
// group_expressions; server/query/expression): each is checked against the declared schema, and
// a value expression stands in for a column whose declared bounds are the expression's derived
// bounds. Pure; every choice is a function of the query text and the declared schema.
#ifndef DPQ_SERVER_QUERY_EXPRESSION_PLANNING_H_
#define DPQ_SERVER_QUERY_EXPRESSION_PLANNING_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/query/dataset_schema.h"
#include "server/query/expression/expression.h"
#include "server/query/planner.h"
#include "server/query/query_spec.h"

namespace dpq::query {

using CheckedExpressionPtr = std::shared_ptr<const expression::CheckedExpression>;

// A value expression, checked, and the column it stands in for: named by its canonical text,
// INT64 as an integer column, FLOAT64 as a double one, its declared bounds the derived ones (none
// when they cannot be derived, or when the spec gives bounds, which then clamp the value). Derived bounds that are one point (a constant expression) are
// widened to include 0, then to [0, 1] for the constant 0: a wider clamp range only adds noise,
// and the planner needs lower < upper.
struct ValueExpression {
  CheckedExpressionPtr checked;
  std::shared_ptr<const ColumnSchema> stand_in;
};

// INVALID_ARGUMENT "<aggregate>: ..." when the expression does not check, is not numeric (every
// aggregate but count reads a number), or has no derivable bounds while the spec gives none
// (naming the column without declared bounds and the two ways to fix it).
absl::StatusOr<ValueExpression> CheckValueExpression(const QuerySpec& spec,
                                                     const DatasetSchema& schema);

// The row condition, which must be BOOL ("where: ..." otherwise).
absl::StatusOr<CheckedExpressionPtr> CheckRowCondition(const expression::Expr& condition,
                                                       const DatasetSchema& schema);

// A group key expression labelled `label` (any type; "group_by <label>: ..." on refusal).
absl::StatusOr<CheckedExpressionPtr> CheckGroupExpression(const expression::Expr& key,
                                                          const std::string& label,
                                                          const DatasetSchema& schema);

// The expressions' part of a plan's fingerprint: their canonical texts, length-prefixed; empty
// when the plan has none, so fingerprints of plans without expressions are unchanged.
std::string ExpressionFingerprint(const ScanPlan& scan);

}  // namespace dpq::query

#endif  // DPQ_SERVER_QUERY_EXPRESSION_PLANNING_H_
