// TEST-ONLY stand-ins for sql::LowerExpression (expression_lowering.h) and
// query::expression::CheckExpression (expression.h) while their real implementations are written
// on other branches: just the shapes the analyzer tests use (columns, literals, unary minus,
// + - * /, comparisons, IS NULL, IF, searched CASE), with the declared headers' error shapes.
// Linked into sql_analyzer_test only; delete this file (and its line in CMakeLists.txt) when the
// real ones are merged.
#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/query/expression/expression.h"
#include "server/sql/diagnostics.h"
#include "server/sql/expression_lowering.h"

namespace dpq::sql {

namespace qe = query::expression;

absl::StatusOr<qe::Expr> LowerExpression(const Expr& e) {
  const qe::SourcePosition at{e.pos.line, e.pos.column};
  std::vector<qe::Expr> kids;
  for (const Expr& c : e.children) {
    ASSIGN_OR_RETURN(qe::Expr k, LowerExpression(c));
    kids.push_back(std::move(k));
  }
  switch (e.kind) {
    case Expr::Kind::kColumn: return qe::Column(e.name, at);
    case Expr::Kind::kNumber:
      return qe::NumberLiteral(e.text, e.text.find_first_not_of("0123456789") == std::string::npos,
                               at);
    case Expr::Kind::kString: return qe::StringLiteral(e.text, at);
    case Expr::Kind::kNull: return qe::NullLiteral(at);
    case Expr::Kind::kUnary:
      return qe::Unary(e.op == "-" ? qe::Op::kNegate : qe::Op::kNot, std::move(kids[0]), at);
    case Expr::Kind::kBinary: {
      static const std::pair<const char*, qe::Op> kOps[] = {
          {"+", qe::Op::kAdd},    {"-", qe::Op::kSubtract}, {"*", qe::Op::kMultiply},
          {"/", qe::Op::kDivide}, {"=", qe::Op::kEq},       {"<>", qe::Op::kNe},
          {"<", qe::Op::kLt},     {"<=", qe::Op::kLe},      {">", qe::Op::kGt},
          {">=", qe::Op::kGe},    {"AND", qe::Op::kAnd},    {"OR", qe::Op::kOr}};
      for (const auto& [text, op] : kOps) {
        if (e.op == text) return qe::Binary(op, std::move(kids[0]), std::move(kids[1]), at);
      }
      break;
    }
    case Expr::Kind::kIsNull: {
      qe::Expr n = qe::Call(qe::Expr::Kind::kIsNull, std::move(kids), at);
      n.negated = e.negated;
      return n;
    }
    case Expr::Kind::kCall:
      if (e.name == "IF" && kids.size() == 3) {
        qe::Expr n = qe::Call(qe::Expr::Kind::kCase, std::move(kids), at);
        n.has_else = true;
        return n;
      }
      break;
    case Expr::Kind::kCase:
      if (!e.has_operand) {
        qe::Expr n = qe::Call(qe::Expr::Kind::kCase, std::move(kids), at);
        n.has_else = e.has_else;
        return n;
      }
      break;
    default: break;
  }
  return Unsupported(e.pos, "not supported by the test stand-in of LowerExpression");
}

}  // namespace dpq::sql

namespace dpq::query::expression {
namespace {

absl::Status Refuse(const Expr& e, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(FormatSourcePosition(e.pos), ": ", what));
}

bool Numeric(ValueType t) { return t == ValueType::kInt64 || t == ValueType::kFloat64; }

// Types and bounds `e` in place; `unbounded` gets the first numeric column without bounds.
absl::Status Check(Expr& e, const DatasetSchema& schema, std::string& unbounded) {
  for (Expr& c : e.children) RETURN_IF_ERROR(Check(c, schema, unbounded));
  switch (e.kind) {
    case Expr::Kind::kColumn: {
      const ColumnSchema* c = schema.FindColumn(e.name);
      if (c == nullptr) return Refuse(e, absl::StrCat("unknown column ", e.name));
      e.column_type = c->type;
      e.type = c->type == ColumnType::kText      ? ValueType::kString
               : c->type == ColumnType::kInteger ? ValueType::kInt64
                                                 : ValueType::kFloat64;
      if (c->lower) e.bounds = ValueInterval{*c->lower, *c->upper};
      if (Numeric(e.type) && !e.bounds && unbounded.empty()) unbounded = e.name;
      return absl::OkStatus();
    }
    case Expr::Kind::kLiteral:
      e.type = e.literal_type;
      if (Numeric(e.type)) e.bounds = PointInterval(std::stod(e.text));
      return absl::OkStatus();
    case Expr::Kind::kUnary:
      e.type = e.op == Op::kNot ? ValueType::kBool : e.children[0].type;
      if (e.op == Op::kNegate && e.children[0].bounds) e.bounds = Negate(*e.children[0].bounds);
      return absl::OkStatus();
    case Expr::Kind::kBinary: {
      const Expr& a = e.children[0];
      const Expr& b = e.children[1];
      if (e.op >= Op::kEq) {
        e.type = ValueType::kBool;
        return absl::OkStatus();
      }
      if (!Numeric(a.type) || !Numeric(b.type)) return Refuse(e, "arithmetic needs numbers");
      if (!a.bounds || !b.bounds) {
        return Refuse(e, absl::StrCat("column ", unbounded, " has no declared bounds"));
      }
      e.type = e.op == Op::kDivide || a.type == ValueType::kFloat64 || b.type == ValueType::kFloat64
                   ? ValueType::kFloat64
                   : ValueType::kInt64;
      if (e.op == Op::kAdd) e.bounds = Add(*a.bounds, *b.bounds);
      if (e.op == Op::kSubtract) e.bounds = Subtract(*a.bounds, *b.bounds);
      if (e.op == Op::kMultiply) e.bounds = Multiply(*a.bounds, *b.bounds);
      if (e.op == Op::kDivide) {
        ASSIGN_OR_RETURN(e.bounds, Divide(*a.bounds, *b.bounds));
      }
      return absl::OkStatus();
    }
    case Expr::Kind::kIsNull: e.type = ValueType::kBool; return absl::OkStatus();
    case Expr::Kind::kCase: {
      e.type = ValueType::kNull;
      bool bounded = true;
      absl::optional<ValueInterval> hull;
      for (size_t i = 1; i < e.children.size(); i += 2) {
        const Expr& r = e.children[i];
        if (r.type == ValueType::kNull) continue;
        e.type = e.type == ValueType::kNull ? r.type : std::max(e.type, r.type);
        if (!r.bounds) bounded = false;
        if (r.bounds) hull = hull ? Hull(*hull, *r.bounds) : *r.bounds;
      }
      if (e.has_else && !e.children.back().bounds && e.children.back().type != ValueType::kNull) {
        bounded = false;
      }
      if (e.has_else && e.children.back().bounds) {
        hull = hull ? Hull(*hull, *e.children.back().bounds) : *e.children.back().bounds;
        e.type = std::max(e.type, e.children.back().type);
      }
      if (bounded && Numeric(e.type)) e.bounds = hull;
      return absl::OkStatus();
    }
    default: return Refuse(e, "not supported by the test stand-in of CheckExpression");
  }
}

std::string Canonical(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::kColumn: return e.name;
    case Expr::Kind::kLiteral: return e.literal_type == ValueType::kNull ? "NULL" : e.text;
    case Expr::Kind::kUnary: return absl::StrCat("(", OpText(e.op), Canonical(e.children[0]), ")");
    case Expr::Kind::kBinary:
      return absl::StrCat("(", Canonical(e.children[0]), " ", OpText(e.op), " ",
                          Canonical(e.children[1]), ")");
    default: {
      std::string out = "CALL(";
      for (const Expr& c : e.children) absl::StrAppend(&out, Canonical(c), ",");
      return absl::StrCat(out, ")");
    }
  }
}

}  // namespace

absl::StatusOr<CheckedExpression> CheckExpression(const Expr& e, const DatasetSchema& schema) {
  CheckedExpression out;
  out.root = e;
  std::string unbounded;
  RETURN_IF_ERROR(Check(out.root, schema, unbounded));
  out.bounds = out.root.bounds;
  if (!out.bounds && Numeric(out.root.type)) out.unbounded_column = unbounded;
  out.canonical = Canonical(out.root);
  return out;
}

}  // namespace dpq::query::expression
