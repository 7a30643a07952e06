// Syntax of dpq's SQL front end: SELECT WITH DIFFERENTIAL_PRIVACY (grammar.ebnf). No schema is
// consulted here (analyzer.h does that).
#ifndef DPQ_SERVER_SQL_PARSER_H_
#define DPQ_SERVER_SQL_PARSER_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/sql/ast.h"

namespace dpq::sql {

inline constexpr size_t kMaxStatements = 100;

// Parses one statement or several separated by ';' (an optional ';' may end the last). Every error
// message reads "sql: line L, column C: <what to do>", L:C the offending token:
//  - INVALID_ARGUMENT: not SQL of the grammar (a missing clause, an unexpected token, an
//    unterminated string, an empty script, more than kMaxStatements statements, nesting deeper
//    than kMaxExprDepth).
//  - UNIMPLEMENTED: valid SQL outside dpq's subset: a SELECT without WITH DIFFERENTIAL_PRIVACY,
//    SELECT DISTINCT, DML and DDL, CTEs (WITH), JOINs or several tables, subqueries, set operations
//    (UNION, INTERSECT, EXCEPT), HAVING, window functions (OVER), CASE,
//    ROLLUP / CUBE / GROUPING SETS, OFFSET, QUALIFY.
absl::StatusOr<Script> Parse(absl::string_view text);

}  // namespace dpq::sql

#endif  // DPQ_SERVER_SQL_PARSER_H_
