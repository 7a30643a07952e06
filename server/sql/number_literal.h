#ifndef DPQ_SERVER_SQL_NUMBER_LITERAL_H_
#define DPQ_SERVER_SQL_NUMBER_LITERAL_H_

#include "absl/types/optional.h"
#include "server/sql/ast.h"

namespace dpq::sql {

// A numeric literal, optionally signed: 1e6, 1e+06 and 1000000.0 are the same value. Anything else
// (a column, an expression, a number that overflows a double) is nullopt.
absl::optional<double> NumberOf(const Expr& e);

// NumberOf within the public bound magnitude (query::kMaxBoundMagnitude), with -0 read as 0 so a
// bound or bin edge has one spelling in the plan's fingerprint.
absl::optional<double> BoundLiteral(const Expr& e);

}  // namespace dpq::sql

#endif  // DPQ_SERVER_SQL_NUMBER_LITERAL_H_
