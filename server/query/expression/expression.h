// Per-row expressions of a DP query: the value an aggregate reads (`SUM(age + 1)`), a row
// condition (`wages * 2 > age`) and a group key (`CASE WHEN age < 30 THEN 'young' ELSE 'old'
// END`), over the columns and literals of one row. The SQL front end (server/sql) builds the
// untyped tree; CheckExpression types it against the dataset's declared schema and derives the
// bounds of a numeric expression from the columns' declared bounds (value_interval.h); the store
// (server/store/expression_sql.h) writes it as PostgreSQL with bound parameters. Pure data.
//
// Semantics follow ZetaSQL / BigQuery standard SQL:
//  - Types: INT64 (integer columns and integer literals), FLOAT64 (double columns, decimal
//    literals, `/`, and any arithmetic mixing the two), STRING (text columns, string literals),
//    BOOL (comparisons, AND / OR / NOT, IS [NOT] NULL, IN). NULL propagates through arithmetic
//    and comparisons; AND / OR use three-valued logic.
//  - `/` always yields FLOAT64 (ZetaSQL's division); integer arithmetic stays INT64.
//  - CASE takes the hull of its branches' types (INT64 with FLOAT64 gives FLOAT64; a STRING
//    branch with a numeric one is refused); a missing ELSE is ELSE NULL.
//  - CAST between INT64, FLOAT64 and STRING, except STRING to a number: such a cast fails on
//    some stored texts, and a scan that can fail on data is an exact oracle (threat model), so it
//    is refused before anything is charged. FLOAT64 to INT64 rounds half away from zero.
// Every column read inside arithmetic, ABS, LEAST/GREATEST, CAST or a CASE branch is clamped to
// its declared bounds before any operation, so no stored value (NaN, infinities, extremes) can
// make the scan fail; a numeric column without declared bounds may appear only bare (as the
// whole aggregate argument, with explicit bounds) or compared as a whole with a literal or
// another column.
#ifndef DPQ_SERVER_QUERY_EXPRESSION_EXPRESSION_H_
#define DPQ_SERVER_QUERY_EXPRESSION_EXPRESSION_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "server/query/dataset_schema.h"
#include "server/query/value_interval.h"

namespace dpq::query::expression {

// Limits enforced by CheckExpression (INVALID_ARGUMENT naming the position).
inline constexpr int kMaxExpressionDepth = 64;
inline constexpr int kMaxExpressionNodes = 1000;

enum class ValueType { kNull, kBool, kInt64, kFloat64, kString };
absl::string_view ValueTypeName(ValueType type);  // "NULL", "BOOL", "INT64", "FLOAT64", "STRING"

// Where a node was written, for error messages: "line 1, column 12" (SQL) or empty.
struct SourcePosition {
  int line = 0;  // 0: unknown
  int column = 0;
};
std::string FormatSourcePosition(SourcePosition p);  // "line L, column C", "" when unknown

enum class Op {
  // kUnary
  kNegate,
  kNot,
  // kBinary
  kAdd,
  kSubtract,
  kMultiply,
  kDivide,
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kAnd,
  kOr,
};
absl::string_view OpText(Op op);  // "-", "NOT", "+", ..., "=", "<>", "<", ..., "AND", "OR"

struct Expr {
  enum class Kind {
    kColumn,    // name: the column (lower-cased as written)
    kLiteral,   // literal_type kInt64 / kFloat64 (text: as written), kString (text), kBool
                // (text "TRUE" / "FALSE") or kNull
    kUnary,     // op kNegate | kNot on children[0]
    kBinary,    // op on children[0], children[1]
    kIsNull,    // children[0] IS [NOT] NULL (negated: IS NOT NULL)
    kIn,        // children[0] [NOT] IN (children[1..]): literals only
    kCase,      // children: WHEN c1 THEN v1, WHEN c2 THEN v2, ..., then ELSE v when has_else
                // (searched CASE; IF(c, a, b) is CASE WHEN c THEN a ELSE b END)
    kCoalesce,  // COALESCE / IFNULL: 1..N children
    kAbs,       // children[0]
    kLeast,     // 1..N children
    kGreatest,  // 1..N children
    kCast,      // CAST(children[0] AS cast_type)
  };
  Kind kind = Kind::kLiteral;
  SourcePosition pos;
  std::string name;  // kColumn
  ValueType literal_type = ValueType::kNull;
  std::string text;  // kLiteral
  Op op = Op::kAdd;
  bool negated = false;   // kIsNull, kIn
  bool has_else = false;  // kCase
  ValueType cast_type = ValueType::kString;
  std::vector<Expr> children;

  // Filled by CheckExpression (untyped trees leave them at their defaults):
  ValueType type = ValueType::kNull;  // the node's result type
  // The node's value range when it is numeric and every column below has declared bounds (or is
  // not read inside arithmetic); nullopt otherwise. For kColumn: the declared bounds.
  absl::optional<ValueInterval> bounds;
  ColumnType column_type = ColumnType::kText;  // kColumn: the schema's type
};

// A checked expression, ready for the planner and the store.
struct CheckedExpression {
  Expr root;  // typed, columns resolved against the schema
  // Canonical, fully parenthesised text (what the analyst asked, never data): equal for
  // expressions that differ only in spelling; joins the query fingerprint and explain.
  std::string canonical;
  // root.bounds; when nullopt and the root is numeric, the first column (in reading order) whose
  // missing declared bounds prevented the derivation.
  absl::optional<ValueInterval> bounds;
  std::string unbounded_column;
  // One line per step that widened the bounds, for --explain, e.g.
  //   "age in [0, 120] (declared)", "age + 1 in [1, 121]", "CASE: hull of branches [0, 1]".
  std::vector<std::string> derivation;
  // When the root's value can only be one of its literal results (a CASE, IF or COALESCE whose
  // every result is a literal, NULL aside), those results as the store renders them as text,
  // in the order written, without repeats: a public key set (GROUP BY releases them all, no
  // partition selection). Empty otherwise.
  std::vector<std::string> literal_results;
};

// Types `e` against `schema` and derives its bounds. INVALID_ARGUMENT, naming the position and
// the offending column or operator, for: an unknown column; operand types that do not fit
// (arithmetic on STRING or BOOL, comparing STRING with a number, a non-BOOL condition in WHEN,
// AND, OR, NOT); CAST from STRING to a number; a numeric column without declared bounds inside
// arithmetic, ABS, LEAST/GREATEST, CAST or a CASE branch; a division whose divisor's interval
// contains 0 (or is unknown); any intermediate interval beyond kMaxBoundMagnitude (so nothing
// the scan computes can overflow); an IN list element that is not a literal; depth or size past
// the limits above. Never looks at data.
absl::StatusOr<CheckedExpression> CheckExpression(const Expr& e, const DatasetSchema& schema);

// Constructors for the SQL front end and tests.
Expr Column(std::string name, SourcePosition pos = {});
Expr NumberLiteral(std::string text, bool is_integer, SourcePosition pos = {});
Expr StringLiteral(std::string text, SourcePosition pos = {});
Expr BoolLiteral(bool value, SourcePosition pos = {});
Expr NullLiteral(SourcePosition pos = {});
Expr Unary(Op op, Expr operand, SourcePosition pos = {});
Expr Binary(Op op, Expr left, Expr right, SourcePosition pos = {});
Expr Call(Expr::Kind kind, std::vector<Expr> args, SourcePosition pos = {});
Expr Cast(Expr operand, ValueType to, SourcePosition pos = {});

}  // namespace dpq::query::expression

#endif  // DPQ_SERVER_QUERY_EXPRESSION_EXPRESSION_H_
