#include "server/query/expression/expression.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace dpq::query::expression {

absl::string_view ValueTypeName(ValueType type) {
  switch (type) {
    case ValueType::kNull: return "NULL";
    case ValueType::kBool: return "BOOL";
    case ValueType::kInt64: return "INT64";
    case ValueType::kFloat64: return "FLOAT64";
    case ValueType::kString: return "STRING";
  }
  return "NULL";
}

std::string FormatSourcePosition(SourcePosition p) {
  if (p.line <= 0) return "";
  return absl::StrCat("line ", p.line, ", column ", p.column);
}

absl::string_view OpText(Op op) {
  switch (op) {
    case Op::kNegate: return "-";
    case Op::kNot: return "NOT";
    case Op::kAdd: return "+";
    case Op::kSubtract: return "-";
    case Op::kMultiply: return "*";
    case Op::kDivide: return "/";
    case Op::kEq: return "=";
    case Op::kNe: return "<>";
    case Op::kLt: return "<";
    case Op::kLe: return "<=";
    case Op::kGt: return ">";
    case Op::kGe: return ">=";
    case Op::kAnd: return "AND";
    case Op::kOr: return "OR";
  }
  return "?";
}

namespace {
Expr Node(Expr::Kind kind, SourcePosition pos) {
  Expr e;
  e.kind = kind;
  e.pos = pos;
  return e;
}
}  // namespace

Expr Column(std::string name, SourcePosition pos) {
  Expr e = Node(Expr::Kind::kColumn, pos);
  e.name = std::move(name);
  return e;
}

Expr NumberLiteral(std::string text, bool is_integer, SourcePosition pos) {
  Expr e = Node(Expr::Kind::kLiteral, pos);
  e.literal_type = is_integer ? ValueType::kInt64 : ValueType::kFloat64;
  e.text = std::move(text);
  return e;
}

Expr StringLiteral(std::string text, SourcePosition pos) {
  Expr e = Node(Expr::Kind::kLiteral, pos);
  e.literal_type = ValueType::kString;
  e.text = std::move(text);
  return e;
}

Expr BoolLiteral(bool value, SourcePosition pos) {
  Expr e = Node(Expr::Kind::kLiteral, pos);
  e.literal_type = ValueType::kBool;
  e.text = value ? "TRUE" : "FALSE";
  return e;
}

Expr NullLiteral(SourcePosition pos) { return Node(Expr::Kind::kLiteral, pos); }

Expr Unary(Op op, Expr operand, SourcePosition pos) {
  Expr e = Node(Expr::Kind::kUnary, pos);
  e.op = op;
  e.children.push_back(std::move(operand));
  return e;
}

Expr Binary(Op op, Expr left, Expr right, SourcePosition pos) {
  Expr e = Node(Expr::Kind::kBinary, pos);
  e.op = op;
  e.children.push_back(std::move(left));
  e.children.push_back(std::move(right));
  return e;
}

Expr Call(Expr::Kind kind, std::vector<Expr> args, SourcePosition pos) {
  Expr e = Node(kind, pos);
  e.children = std::move(args);
  return e;
}

Expr Cast(Expr operand, ValueType to, SourcePosition pos) {
  Expr e = Node(Expr::Kind::kCast, pos);
  e.cast_type = to;
  e.children.push_back(std::move(operand));
  return e;
}

}  // namespace dpq::query::expression
