// A checked per-row expression (server/query/expression) written as PostgreSQL for the scan
// statement (scan_sql.cc): every literal a bound parameter, every identifier quoted by the
// caller. Pure: builds strings, touches no connection.
//
// Totality (docs/threat-model.md, "Scans are total"): the scan runs after the charge, so no stored
// value may make the expression raise. Each rule below is why one construct cannot:
//  * A numeric column inside arithmetic, ABS, LEAST/GREATEST, CAST or a CASE branch is read as
//    SafeArithmetic::Clamp(Raw(col), declared lower, declared upper): NaN and infinities become
//    bounds, and every intermediate value lies in the interval CheckExpression derived, which it
//    checked against kMaxBoundMagnitude: no overflow.
//  * SafeArithmetic::Clamp keeps NULL NULL (it is built from the strict float8smaller /
//    float8larger; PostgreSQL's least/greatest would skip NULLs and turn a NULL row into a bound).
//  * `*` and `/` are SafeArithmetic::Multiply and Divide, which flush factors and dividends to a
//    multiple of 2^-500 first (scan_arithmetic.h has the argument): PostgreSQL raises on underflow
//    to 0 otherwise. A divisor's interval excludes 0 (CheckExpression), so there is no division by
//    zero; products, quotients and CAST to INT64 are clamped into their node's interval again.
//  * A comparison of a bare column reads the raw value (float8 for numbers, text for text): a
//    comparison never raises.
//  * CAST to STRING writes the value's text (never fails); FLOAT64 to INT64 rounds half away from
//    zero of a value already inside +-kMaxBoundMagnitude (no bigint overflow); STRING to a number
//    never reaches here (refused by CheckExpression).
//  * Text compared with text uses the database's collation, as the flag filter does.
// The numeric arithmetic (ScanArithmetic::kNumeric) writes the same expression in numeric, for
// AggregateScanner's fallback statement.
#ifndef DPQ_SERVER_STORE_EXPRESSION_SQL_H_
#define DPQ_SERVER_STORE_EXPRESSION_SQL_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/query/expression/expression.h"
#include "server/store/scan_arithmetic.h"

namespace dpq::store {

class ExpressionSql {
 public:
  // Adds a bound parameter holding `value` and returns its reference cast to `cast`, e.g.
  // "$3::float8" (ScanBuilder::Param).
  using ParamFn = std::function<std::string(std::string value, absl::string_view cast)>;
  using QuoteFn = std::function<std::string(const std::string&)>;

  ExpressionSql(ScanArithmetic arithmetic, ParamFn param, QuoteFn quote)
      : math_(arithmetic), param_(std::move(param)), quote_(std::move(quote)) {}

  // A numeric (INT64 / FLOAT64) expression's value in the arithmetic's type; NULL where the
  // expression is NULL. INVALID_ARGUMENT for a tree CheckExpression would refuse (not numeric,
  // division by an interval holding 0, unclamped column in arithmetic): a caller bug, never data.
  absl::StatusOr<std::string> Numeric(const query::expression::Expr& e);
  // A BOOL expression as SQL boolean (NULL for UNKNOWN); use `(...) IS TRUE` to keep rows.
  absl::StatusOr<std::string> Condition(const query::expression::Expr& e);
  // Any expression's value as text, NULL for NULL: a group key. Literal results print as
  // CheckedExpression::literal_results spells them.
  absl::StatusOr<std::string> Text(const query::expression::Expr& e);

 private:
  SafeArithmetic math_;
  ParamFn param_;
  QuoteFn quote_;
};

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_EXPRESSION_SQL_H_
