// Checked expression trees built by hand for store tests, while CheckExpression is declared only:
// each constructor fills Expr::type, bounds and column_type as the checker would (ZetaSQL types,
// value_interval.h bounds), for the well-typed trees the tests write.
#ifndef DPQ_TESTS_SUPPORT_EXPRESSION_TREES_H_
#define DPQ_TESTS_SUPPORT_EXPRESSION_TREES_H_

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/types/optional.h"
#include "server/query/expression/expression.h"
#include "server/query/value_interval.h"

namespace dpq::testing::expr {

using query::ValueInterval;
using query::expression::Expr;
using query::expression::Op;
using query::expression::ValueType;

inline Expr Col(const std::string& name, query::ColumnType type,
                absl::optional<ValueInterval> bounds = absl::nullopt) {
  Expr e = query::expression::Column(name);
  e.column_type = type;
  e.type = type == query::ColumnType::kInteger  ? ValueType::kInt64
           : type == query::ColumnType::kDouble ? ValueType::kFloat64
                                                : ValueType::kString;
  e.bounds = bounds;
  return e;
}
inline Expr Int(int64_t v) {
  Expr e = query::expression::NumberLiteral(std::to_string(v), true);
  e.type = ValueType::kInt64;
  e.bounds = query::PointInterval(static_cast<double>(v));
  return e;
}
inline Expr Dbl(const std::string& text) {
  Expr e = query::expression::NumberLiteral(text, false);
  e.type = ValueType::kFloat64;
  e.bounds = query::PointInterval(std::stod(text));
  return e;
}
inline Expr Str(const std::string& text) {
  Expr e = query::expression::StringLiteral(text);
  e.type = ValueType::kString;
  return e;
}
inline Expr Null() { return query::expression::NullLiteral(); }

inline ValueType Wider(ValueType a, ValueType b) {
  if (a == ValueType::kNull) return b;
  if (b == ValueType::kNull || a == b) return a;
  return ValueType::kFloat64;  // INT64 with FLOAT64
}

// Bounds of a numeric node from its children's (nullopt when any is missing).
inline absl::optional<ValueInterval> Derive(const Expr& e) {
  std::vector<ValueInterval> in;
  for (const Expr& c : e.children) {
    if (c.type == ValueType::kNull || c.type == ValueType::kBool) continue;
    if (!c.bounds) return absl::nullopt;
    in.push_back(*c.bounds);
  }
  if (in.empty()) return absl::nullopt;
  ValueInterval out = in[0];
  for (size_t i = 1; i < in.size(); ++i) {
    switch (e.kind) {
      case Expr::Kind::kLeast: out = query::Least(out, in[i]); break;
      case Expr::Kind::kGreatest: out = query::Greatest(out, in[i]); break;
      case Expr::Kind::kBinary:
        if (e.op == Op::kAdd) out = query::Add(out, in[i]);
        if (e.op == Op::kSubtract) out = query::Subtract(out, in[i]);
        if (e.op == Op::kMultiply) out = query::Multiply(out, in[i]);
        if (e.op == Op::kDivide) {
          auto q = query::Divide(out, in[i]);
          if (!q.ok()) return absl::nullopt;
          out = *q;
        }
        break;
      default: out = query::Hull(out, in[i]); break;  // CASE, COALESCE
    }
  }
  if (e.kind == Expr::Kind::kUnary) out = query::Negate(out);
  if (e.kind == Expr::Kind::kAbs) out = query::Abs(out);
  return out;
}

inline Expr Un(Op op, Expr a) {
  Expr e = query::expression::Unary(op, std::move(a));
  e.type = op == Op::kNot ? ValueType::kBool : e.children[0].type;
  if (op == Op::kNegate) e.bounds = Derive(e);
  return e;
}
inline Expr Bin(Op op, Expr a, Expr b) {
  Expr e = query::expression::Binary(op, std::move(a), std::move(b));
  const ValueType l = e.children[0].type, r = e.children[1].type;
  if (op == Op::kAdd || op == Op::kSubtract || op == Op::kMultiply) {
    e.type = Wider(l, r);
  } else if (op == Op::kDivide) {
    e.type = ValueType::kFloat64;
  } else {
    e.type = ValueType::kBool;
    return e;
  }
  e.bounds = Derive(e);
  return e;
}
inline Expr IsNull(Expr a, bool negated = false) {
  Expr e = query::expression::Call(Expr::Kind::kIsNull, {std::move(a)});
  e.negated = negated;
  e.type = ValueType::kBool;
  return e;
}
inline Expr In(std::vector<Expr> lhs_then_items, bool negated = false) {
  Expr e = query::expression::Call(Expr::Kind::kIn, std::move(lhs_then_items));
  e.negated = negated;
  e.type = ValueType::kBool;
  return e;
}
// kCoalesce, kAbs, kLeast, kGreatest.
inline Expr Fn(Expr::Kind kind, std::vector<Expr> args) {
  Expr e = query::expression::Call(kind, std::move(args));
  e.type = ValueType::kNull;
  for (const Expr& c : e.children) e.type = Wider(e.type, c.type);
  if (e.type == ValueType::kInt64 || e.type == ValueType::kFloat64) e.bounds = Derive(e);
  return e;
}
// CASE WHEN c1 THEN v1 ... [ELSE v] END from {c1, v1, ..., [v]}.
inline Expr Case(std::vector<Expr> parts, bool has_else) {
  Expr e = query::expression::Call(Expr::Kind::kCase, std::move(parts));
  e.has_else = has_else;
  e.type = ValueType::kNull;
  for (size_t i = 1; i < e.children.size(); i += 2) e.type = Wider(e.type, e.children[i].type);
  if (has_else) e.type = Wider(e.type, e.children.back().type);
  if (e.type != ValueType::kInt64 && e.type != ValueType::kFloat64) return e;
  absl::optional<ValueInterval> hull;
  for (size_t i = 0; i < e.children.size(); ++i) {
    const bool is_value = (i % 2 == 1) || (has_else && i + 1 == e.children.size());
    const Expr& c = e.children[i];
    if (!is_value || c.type == ValueType::kNull) continue;
    if (!c.bounds) return e;
    hull = hull ? query::Hull(*hull, *c.bounds) : *c.bounds;
  }
  e.bounds = hull;
  return e;
}
inline Expr CastTo(Expr a, ValueType to) {
  Expr e = query::expression::Cast(std::move(a), to);
  e.type = to;
  const auto& b = e.children[0].bounds;
  if (b && to == ValueType::kFloat64) e.bounds = b;
  if (b && to == ValueType::kInt64) {  // rounding half away from zero moves ends by <= 0.5
    e.bounds = ValueInterval{std::round(b->lower), std::round(b->upper)};
  }
  return e;
}

}  // namespace dpq::testing::expr

#endif  // DPQ_TESTS_SUPPORT_EXPRESSION_TREES_H_
