// Lowers a SQL per-row expression (ast.h) onto the query layer's expression tree
// (server/query/expression/expression.h), which the planner checks against the schema and the
// store writes as PostgreSQL. Syntax only: types, columns and bounds are checked by
// query::expression::CheckExpression.
//
// Mapping (ZetaSQL names): + - * / and unary minus; = <> != < <= > >=; AND OR NOT; IS [NOT] NULL;
// x [NOT] IN (literals); x [NOT] BETWEEN a AND b (as a >= / <= pair); CASE (searched, and simple
// CASE x WHEN v THEN ... as x = v); IF(c, a, b); COALESCE / IFNULL; ABS; LEAST / GREATEST;
// CAST(x AS INT64 | FLOAT64 | STRING) (INTEGER / BIGINT / DOUBLE / FLOAT / TEXT are accepted
// spellings); TRUE / FALSE; NULL.
#ifndef DPQ_SERVER_SQL_EXPRESSION_LOWERING_H_
#define DPQ_SERVER_SQL_EXPRESSION_LOWERING_H_

#include "absl/status/statusor.h"
#include "server/query/expression/expression.h"
#include "server/sql/ast.h"

namespace dpq::sql {

// UNIMPLEMENTED "sql: line L, column C: ..." for a construct outside the list above (an aggregate
// or other function call inside the expression, '*', a tuple, a named argument).
absl::StatusOr<query::expression::Expr> LowerExpression(const Expr& e);

}  // namespace dpq::sql

#endif  // DPQ_SERVER_SQL_EXPRESSION_LOWERING_H_
