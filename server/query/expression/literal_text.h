// The texts of a per-row expression's literals: parsed once by CheckExpression, then written the
// same way in the canonical text, in the checked tree (which the store binds as parameters) and in
// CheckedExpression::literal_results (which must match what PostgreSQL's `::text` prints, so that
// the store can keep exactly the rows whose key is one of them).
#ifndef DPQ_SERVER_QUERY_EXPRESSION_LITERAL_TEXT_H_
#define DPQ_SERVER_QUERY_EXPRESSION_LITERAL_TEXT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/query/expression/expression.h"

namespace dpq::query::expression {

// A numeric literal's value: an INT64 text that does not fit int64 becomes FLOAT64 (as ZetaSQL
// reads an integer literal too large for INT64 only where a FLOAT64 is wanted; here it simply
// widens), a FLOAT64 must be finite.
struct NumberValue {
  ValueType type = ValueType::kInt64;  // kInt64 or kFloat64
  int64_t integer = 0;                 // kInt64
  double real = 0;                     // kFloat64 (and the INT64 value as a double)
};
// INVALID_ARGUMENT (without position) when the text is not a finite number.
absl::StatusOr<NumberValue> ParseNumber(absl::string_view text, ValueType written_type);

// A double as PostgreSQL 15's float8out prints it (extra_float_digits 1): the shortest text that
// reads back to the same double, fixed notation for decimal exponents -4..14, else "1e+20" style.
std::string Float8Text(double v);

// The literal's text in the checked tree and as PostgreSQL's `::text` prints it: decimal for
// INT64, Float8Text for FLOAT64.
std::string NumberText(const NumberValue& v);

// The canonical spelling: NumberText, with ".0" added to a FLOAT64 that would otherwise read as
// an integer (so that `1.0 + x` and `1 + x`, of different types, stay apart).
std::string CanonicalNumber(const NumberValue& v);

// 'text' with every ' doubled.
std::string QuoteString(absl::string_view text);

// CheckedExpression::literal_results of a checked root: when it is a CASE or COALESCE whose
// results are all literals, the non-NULL ones as PostgreSQL's `::text` prints them in the root's
// type, in the order written, without repeats; empty otherwise.
std::vector<std::string> LiteralResults(const Expr& root);

}  // namespace dpq::query::expression

#endif  // DPQ_SERVER_QUERY_EXPRESSION_LITERAL_TEXT_H_
