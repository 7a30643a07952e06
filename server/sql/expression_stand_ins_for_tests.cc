// TEST-ONLY stand-in for sql::LowerExpression (expression_lowering.h) while the real one is
// written on another branch: just the shapes the analyzer tests use (columns, literals, unary
// minus, + - * /, comparisons, IS NULL, IF, searched CASE), with the declared header's errors.
// Linked into sql_analyzer_test only; delete this file (and its line in CMakeLists.txt) when the
// real one is merged.
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
