#include "server/sql/expression_lowering.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/sql/calendar_literal.h"
#include "server/sql/diagnostics.h"

namespace dpq::sql {
namespace {

namespace qe = query::expression;

qe::SourcePosition At(Position p) { return {p.line, p.column}; }

bool IsWholeNumber(const std::string& text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
}

absl::StatusOr<std::vector<qe::Expr>> LowerAll(const std::vector<Expr>& in, size_t from = 0) {
  std::vector<qe::Expr> out;
  for (size_t i = from; i < in.size(); ++i) {
    ASSIGN_OR_RETURN(qe::Expr child, LowerExpression(in[i]));
    out.push_back(std::move(child));
  }
  return out;
}

absl::StatusOr<qe::Expr> LowerBinary(const Expr& e) {
  static const auto* const kOps = new std::map<std::string, qe::Op>{
      {"+", qe::Op::kAdd},    {"-", qe::Op::kSubtract}, {"*", qe::Op::kMultiply},
      {"/", qe::Op::kDivide}, {"=", qe::Op::kEq},       {"<>", qe::Op::kNe},
      {"<", qe::Op::kLt},     {"<=", qe::Op::kLe},      {">", qe::Op::kGt},
      {">=", qe::Op::kGe},    {"AND", qe::Op::kAnd},    {"OR", qe::Op::kOr}};
  auto op = kOps->find(e.op);
  if (op == kOps->end()) {
    return Unsupported(e.pos, absl::StrCat("operator ", e.op, " in a per-row expression"));
  }
  ASSIGN_OR_RETURN(qe::Expr left, LowerExpression(e.children[0]));
  ASSIGN_OR_RETURN(qe::Expr right, LowerExpression(e.children[1]));
  return qe::Binary(op->second, std::move(left), std::move(right), At(e.pos));
}

absl::StatusOr<qe::Expr> LowerUnary(const Expr& e) {
  const Expr& operand = e.children[0];
  if (e.op == "+") return LowerExpression(operand);
  if (e.op == "-" && operand.kind == Expr::Kind::kNumber) {
    // A signed literal stays a literal (so -9223372036854775808 is an INT64, and a CASE branch
    // `THEN -1` is a literal result).
    return qe::NumberLiteral(absl::StrCat("-", operand.text), IsWholeNumber(operand.text),
                             At(e.pos));
  }
  ASSIGN_OR_RETURN(qe::Expr inner, LowerExpression(operand));
  if (e.op == "-") return qe::Unary(qe::Op::kNegate, std::move(inner), At(e.pos));
  if (e.op == "NOT") return qe::Unary(qe::Op::kNot, std::move(inner), At(e.pos));
  return Unsupported(e.pos, absl::StrCat("operator ", e.op, " in a per-row expression"));
}

// x BETWEEN a AND b is (x >= a) AND (x <= b); NOT BETWEEN its negation (SQL defines it so, with
// the same three-valued logic).
absl::StatusOr<qe::Expr> LowerBetween(const Expr& e) {
  ASSIGN_OR_RETURN(std::vector<qe::Expr> parts, LowerAll(e.children));
  const qe::SourcePosition at = At(e.pos);
  qe::Expr both =
      qe::Binary(qe::Op::kAnd, qe::Binary(qe::Op::kGe, parts[0], std::move(parts[1]), at),
                 qe::Binary(qe::Op::kLe, parts[0], std::move(parts[2]), at), at);
  if (!e.negated) return both;
  return qe::Unary(qe::Op::kNot, std::move(both), at);
}

// Searched CASE keeps its layout; a simple CASE x WHEN v THEN ... becomes WHEN x = v THEN ....
absl::StatusOr<qe::Expr> LowerCase(const Expr& e) {
  const size_t first = e.has_operand ? 1 : 0;
  ASSIGN_OR_RETURN(std::vector<qe::Expr> parts, LowerAll(e.children, first));
  if (e.has_operand) {
    ASSIGN_OR_RETURN(qe::Expr operand, LowerExpression(e.children[0]));
    const size_t pairs_end = e.has_else ? parts.size() - 1 : parts.size();
    for (size_t i = 0; i < pairs_end; i += 2) {
      const qe::SourcePosition at = parts[i].pos;
      parts[i] = qe::Binary(qe::Op::kEq, operand, std::move(parts[i]), at);
    }
  }
  qe::Expr out = qe::Call(qe::Expr::Kind::kCase, std::move(parts), At(e.pos));
  out.has_else = e.has_else;
  return out;
}

absl::StatusOr<qe::Expr> LowerCast(const Expr& e) {
  static const auto* const kTypes = new std::map<std::string, qe::ValueType>{
      {"INT64", qe::ValueType::kInt64},    {"INTEGER", qe::ValueType::kInt64},
      {"BIGINT", qe::ValueType::kInt64},   {"FLOAT64", qe::ValueType::kFloat64},
      {"DOUBLE", qe::ValueType::kFloat64}, {"FLOAT", qe::ValueType::kFloat64},
      {"STRING", qe::ValueType::kString},  {"TEXT", qe::ValueType::kString}};
  auto type = kTypes->find(e.name);
  if (type == kTypes->end()) {
    return Unsupported(e.pos, absl::StrCat("CAST to ", e.name,
                                           " is not supported: cast to INT64, FLOAT64 or STRING"));
  }
  ASSIGN_OR_RETURN(qe::Expr operand, LowerExpression(e.children[0]));
  return qe::Cast(std::move(operand), type->second, At(e.pos));
}

// The argument count each per-row function takes: exactly `min` when `max` equals it, else at
// least `min` (max 0: no upper limit).
struct Arity {
  size_t min;
  size_t max;
};

absl::StatusOr<qe::Expr> LowerCall(const Expr& e) {
  static const auto* const kFunctions = new std::map<std::string, std::pair<qe::Expr::Kind, Arity>>{
      {"IF", {qe::Expr::Kind::kCase, {3, 3}}},
      {"COALESCE", {qe::Expr::Kind::kCoalesce, {1, 0}}},
      {"IFNULL", {qe::Expr::Kind::kCoalesce, {2, 2}}},
      {"ABS", {qe::Expr::Kind::kAbs, {1, 1}}},
      {"LEAST", {qe::Expr::Kind::kLeast, {1, 0}}},
      {"GREATEST", {qe::Expr::Kind::kGreatest, {1, 0}}}};
  if (IsCalendarTrunc(e)) {
    return Unsupported(e.pos, absl::StrCat(e.name,
                                           "(column, DAY|WEEK|MONTH) is a GROUP BY key (and that "
                                           "key in the select list), not a per-row value"));
  }
  auto f = kFunctions->find(e.name);
  if (f == kFunctions->end()) {
    return Unsupported(e.pos, absl::StrCat("function ", e.name,
                                           " is not supported in a per-row expression (there: "
                                           "CASE, IF, COALESCE, IFNULL, ABS, LEAST, GREATEST, "
                                           "CAST; aggregates cannot nest)"));
  }
  if (e.distinct) {
    return Unsupported(e.pos, absl::StrCat(e.name, "(DISTINCT ...) is not a per-row function"));
  }
  const Arity arity = f->second.second;
  const size_t n = e.children.size();
  if (n < arity.min || (arity.max != 0 && n > arity.max)) {
    return Invalid(
        e.pos, absl::StrCat(e.name, " takes ", arity.min, arity.max == arity.min ? "" : " or more",
                            " arguments, got ", n));
  }
  ASSIGN_OR_RETURN(std::vector<qe::Expr> args, LowerAll(e.children));
  qe::Expr out = qe::Call(f->second.first, std::move(args), At(e.pos));
  out.has_else = e.name == "IF";  // IF(c, a, b) is CASE WHEN c THEN a ELSE b END
  return out;
}

}  // namespace

absl::StatusOr<query::expression::Expr> LowerExpression(const Expr& e) {
  const qe::SourcePosition at = At(e.pos);
  switch (e.kind) {
    case Expr::Kind::kColumn: return qe::Column(e.name, at);
    case Expr::Kind::kNumber: return qe::NumberLiteral(e.text, IsWholeNumber(e.text), at);
    case Expr::Kind::kString: return qe::StringLiteral(e.text, at);
    case Expr::Kind::kBool: return qe::BoolLiteral(e.text == "TRUE", at);
    case Expr::Kind::kNull: return qe::NullLiteral(at);
    case Expr::Kind::kUnary: return LowerUnary(e);
    case Expr::Kind::kBinary: return LowerBinary(e);
    case Expr::Kind::kIn: {
      ASSIGN_OR_RETURN(std::vector<qe::Expr> parts, LowerAll(e.children));
      qe::Expr out = qe::Call(qe::Expr::Kind::kIn, std::move(parts), at);
      out.negated = e.negated;
      return out;
    }
    case Expr::Kind::kBetween: return LowerBetween(e);
    case Expr::Kind::kIsNull: {
      ASSIGN_OR_RETURN(qe::Expr operand, LowerExpression(e.children[0]));
      qe::Expr out = qe::Call(qe::Expr::Kind::kIsNull, {std::move(operand)}, at);
      out.negated = e.negated;
      return out;
    }
    case Expr::Kind::kCase: return LowerCase(e);
    case Expr::Kind::kCast: return LowerCast(e);
    case Expr::Kind::kCall: return LowerCall(e);
    case Expr::Kind::kStar: return Unsupported(e.pos, "'*' is not a per-row value");
    case Expr::Kind::kTuple: return Unsupported(e.pos, "a tuple (a, b) is not a per-row value");
    case Expr::Kind::kNamedArg:
      return Unsupported(e.pos,
                         absl::StrCat("named argument ", e.name, " in a per-row expression"));
    case Expr::Kind::kCalendar:
      // Dates are read only clamped, through the --where language (docs/decisions.md).
      return Unsupported(e.pos, absl::StrCat("a ", e.name,
                                             " literal is read only in a WHERE of comparisons, "
                                             "BETWEEN, IN, IS NULL, AND, OR and NOT, against a "
                                             "column of its type"));
  }
  return Unsupported(e.pos, "this construct is not a per-row value");
}

}  // namespace dpq::sql
