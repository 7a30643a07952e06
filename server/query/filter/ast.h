// The `--where` filter language of dpq: its syntax tree (ParseFilter, parser.h) and the same tree
// after type checking against a dataset's schema (CheckFilter, type_checker.h). Pure data: no SQL.
//
// Grammar (keywords case-insensitive; column names lowercase, ^[a-z_][a-z0-9_]{0,62}$):
//   filter     := or_expr
//   or_expr    := and_expr { OR and_expr }
//   and_expr   := not_expr { AND not_expr }
//   not_expr   := NOT not_expr | primary
//   primary    := '(' or_expr ')' | predicate
//   predicate  := column cmp literal                   cmp: = != <> < <= > >=
//               | column [NOT] IN '(' literal { ',' literal } ')'
//               | column [NOT] BETWEEN literal AND literal
//               | column IS [NOT] NULL
//   literal    := string | number
//   string     := "'" { any character but "'" | "''" } "'"       ('' is one quote)
//   number     := [+-] ( digits [ '.' [digits] ] | '.' digits ) [ (e|E) [+-] digits ]
// The column is always on the left; literals are never NULL (use IS [NOT] NULL), and a column is
// never compared with another column. Reserved words (AND OR NOT IN BETWEEN IS NULL) cannot be
// used as column names in a filter. Evaluation follows SQL three-valued logic: a row passes when
// the whole filter is TRUE (a comparison with a NULL column value is UNKNOWN, and NOT UNKNOWN is
// UNKNOWN).
#ifndef DPQ_SERVER_QUERY_FILTER_AST_H_
#define DPQ_SERVER_QUERY_FILTER_AST_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "server/query/dataset_schema.h"

namespace dpq::query::filter {

// Limits, all enforced by ParseFilter (INVALID_ARGUMENT naming the position).
inline constexpr size_t kMaxFilterBytes = 4096;  // whole input, in bytes
inline constexpr int kMaxFilterDepth = 64;       // nesting of '(' and NOT
inline constexpr int kMaxFilterNodes = 1000;     // predicates + AND/OR/NOT nodes + literals
inline constexpr int kMaxInListSize = 500;       // literals in one IN list
inline constexpr size_t kMaxNumberChars = 100;   // one numeric literal, sign and exponent included

enum class CompareOp { kEq, kNe, kLt, kLe, kGt, kGe };
absl::string_view CompareOpText(CompareOp op);  // "=", "<>", "<", "<=", ">", ">="

struct Literal {
  enum class Kind { kString, kNumber };
  Kind kind = Kind::kString;
  // kString: the value, quotes removed and '' unescaped (valid UTF-8, no NUL).
  // kNumber: the literal as written (matches the `number` grammar above, at most kMaxNumberChars).
  std::string text;
  bool is_integer = false;  // kNumber without '.' and exponent
  int position = 0;         // 1-based character position of the literal's first character
};

struct Expr {
  enum class Kind { kAnd, kOr, kNot, kCompare, kIn, kBetween, kIsNull };
  Kind kind = Kind::kCompare;
  int position = 0;               // 1-based character position where the node starts
  std::vector<Expr> children;     // kAnd, kOr: two or more (flattened); kNot: exactly one
  std::string column;             // predicates: the column name as written
  CompareOp op = CompareOp::kEq;  // kCompare
  bool negated = false;           // kIn: NOT IN; kBetween: NOT BETWEEN; kIsNull: IS NOT NULL
  std::vector<Literal> literals;  // kCompare: 1; kIn: 1..kMaxInListSize; kBetween: 2 (low, high)
};

// A literal converted to the column's comparison domain. The text is canonical (equal values of
// the same kind have equal text) and is accepted by the SQL input function of its kind:
//   kInteger: int64 in decimal, e.g. "-12"                  (integer column, integer literal)
//   kDecimal: exact decimal, e.g. "1.5", "-2e10"           (integer column, literal that is not an
//             int64: compared exactly, never through a double)
//   kDouble:  finite double, "%.17g" (round-trips), "-0" spelled "0"   (double column)
//   kText:    the string value                              (text column)
//   kDate:    'YYYY-MM-DD'                                  (date column, string literal)
//   kTimestamp: 'YYYY-MM-DDTHH:MM:SS[.ffffff]', UTC         (timestamp column, string literal
//             '...Z' without its Z: calendar.h CalendarSqlText)
struct TypedValue {
  enum class Kind { kInteger, kDecimal, kDouble, kText, kDate, kTimestamp };
  Kind kind = Kind::kText;
  std::string text;
};

struct TypedExpr {
  Expr::Kind kind = Expr::Kind::kCompare;
  std::vector<TypedExpr> children;
  std::string column;  // the schema's column name (a validated identifier)
  ColumnType column_type = ColumnType::kText;
  CompareOp op = CompareOp::kEq;
  bool negated = false;
  std::vector<TypedValue> values;  // same arity as Expr::literals
  // A date or timestamp column's declared bounds (kDate / kTimestamp values) in comparisons, IN
  // and BETWEEN: the column is clamped into them before it is compared, as every read of it is
  // (scans are total: an 'infinity' stored behind dpq's back compares as the upper bound).
  // Rendered as two more bound parameters; absent for other columns and IS [NOT] NULL.
  std::vector<TypedValue> clamp;
};

struct TypedFilter {
  TypedExpr root;
  int value_count = 0;  // total number of values and clamps (bound parameters when rendered)
};

}  // namespace dpq::query::filter

#endif  // DPQ_SERVER_QUERY_FILTER_AST_H_
