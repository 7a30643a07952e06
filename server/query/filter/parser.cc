#include "server/query/filter/parser.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/query/filter/lexer.h"

namespace dpq::query::filter {
namespace {

using internal::Describe;
using internal::FilterError;
using internal::Lexer;
using internal::Token;
using Kind = Token::Kind;

// Recursive descent with one token of lookahead. Recursion depth is bounded by kMaxFilterDepth
// (each '(' and NOT counts one level), so hostile input cannot exhaust the stack.
class Parser {
 public:
  explicit Parser(absl::string_view text) : lexer_(text) {}

  absl::StatusOr<Expr> Parse() {
    RETURN_IF_ERROR(lexer_.Init());
    RETURN_IF_ERROR(Advance());
    if (current_.kind == Kind::kEnd) return FilterError(current_.position, "empty filter");
    ASSIGN_OR_RETURN(Expr root, ParseOr());
    if (current_.kind != Kind::kEnd) {
      return FilterError(
          current_.position,
          absl::StrCat("unexpected ", Describe(current_),
                       current_.kind == Kind::kRParen ? " (unbalanced parentheses)" : ""));
    }
    return root;
  }

 private:
  absl::Status Advance() {
    ASSIGN_OR_RETURN(current_, lexer_.Next());
    return absl::OkStatus();
  }

  absl::Status Expect(Kind kind, absl::string_view what) {
    if (current_.kind != kind) {
      return FilterError(current_.position,
                         absl::StrCat("expected ", what, ", found ", Describe(current_)));
    }
    return Advance();
  }

  absl::Status CountNode(int position) {
    if (++nodes_ > kMaxFilterNodes) {
      return FilterError(position,
                         absl::StrCat("filter too large (more than ", kMaxFilterNodes, " terms)"));
    }
    return absl::OkStatus();
  }

  absl::Status Enter(int position) {
    if (++depth_ > kMaxFilterDepth) {
      return FilterError(
          position, absl::StrCat("nested too deeply (more than ", kMaxFilterDepth, " levels)"));
    }
    return absl::OkStatus();
  }

  // or_expr / and_expr: a chain of two or more operands becomes one n-ary node.
  absl::StatusOr<Expr> ParseChain(Kind separator, Expr::Kind node_kind) {
    const int position = current_.position;
    std::vector<Expr> operands;
    while (true) {
      absl::StatusOr<Expr> operand =
          separator == Kind::kOr ? ParseChain(Kind::kAnd, Expr::Kind::kAnd) : ParseNot();
      if (!operand.ok()) return operand.status();
      operands.push_back(*std::move(operand));
      if (current_.kind != separator) break;
      RETURN_IF_ERROR(Advance());
    }
    if (operands.size() == 1) return std::move(operands[0]);
    RETURN_IF_ERROR(CountNode(position));
    Expr e;
    e.kind = node_kind;
    e.position = position;
    e.children = std::move(operands);
    return e;
  }

  absl::StatusOr<Expr> ParseOr() { return ParseChain(Kind::kOr, Expr::Kind::kOr); }

  absl::StatusOr<Expr> ParseNot() {
    if (current_.kind == Kind::kNot) {
      const int position = current_.position;
      RETURN_IF_ERROR(Enter(position));
      RETURN_IF_ERROR(CountNode(position));
      RETURN_IF_ERROR(Advance());
      Expr e;
      e.kind = Expr::Kind::kNot;
      e.position = position;
      ASSIGN_OR_RETURN(Expr child, ParseNot());
      e.children.push_back(std::move(child));
      --depth_;
      return e;
    }
    if (current_.kind == Kind::kLParen) {
      RETURN_IF_ERROR(Enter(current_.position));
      RETURN_IF_ERROR(Advance());
      ASSIGN_OR_RETURN(Expr inner, ParseOr());
      RETURN_IF_ERROR(Expect(Kind::kRParen, "')'"));
      --depth_;
      return inner;
    }
    return ParsePredicate();
  }

  absl::StatusOr<Expr> ParsePredicate() {
    Expr e;
    e.position = current_.position;
    if (current_.kind != Kind::kIdentifier) {
      const bool literal = current_.kind == Kind::kNumber || current_.kind == Kind::kString;
      return FilterError(current_.position,
                         absl::StrCat("expected a column name, found ", Describe(current_),
                                      literal ? " (write the column first: age > 30)" : ""));
    }
    RETURN_IF_ERROR(CountNode(current_.position));
    e.column = current_.text;
    RETURN_IF_ERROR(Advance());

    switch (current_.kind) {
      case Kind::kCompare: {
        e.kind = Expr::Kind::kCompare;
        e.op = current_.op;
        RETURN_IF_ERROR(Advance());
        return WithLiteral(std::move(e));
      }
      case Kind::kIs: {
        e.kind = Expr::Kind::kIsNull;
        RETURN_IF_ERROR(Advance());
        if (current_.kind == Kind::kNot) {
          e.negated = true;
          RETURN_IF_ERROR(Advance());
        }
        RETURN_IF_ERROR(Expect(Kind::kNull, "NULL"));
        return e;
      }
      case Kind::kNot:
        e.negated = true;
        RETURN_IF_ERROR(Advance());
        if (current_.kind != Kind::kIn && current_.kind != Kind::kBetween) {
          return FilterError(
              current_.position,
              absl::StrCat("expected IN or BETWEEN after NOT, found ", Describe(current_)));
        }
        break;
      case Kind::kIn:
      case Kind::kBetween: break;
      default:
        return FilterError(
            current_.position,
            absl::StrCat("expected a comparison (= != < <= > >=), IN, BETWEEN or IS after "
                         "the column, found ",
                         Describe(current_)));
    }
    if (current_.kind == Kind::kIn) {
      e.kind = Expr::Kind::kIn;
      RETURN_IF_ERROR(Advance());
      RETURN_IF_ERROR(Expect(Kind::kLParen, "'(' after IN"));
      while (true) {
        if (static_cast<int>(e.literals.size()) == kMaxInListSize) {
          return FilterError(current_.position,
                             absl::StrCat("IN list longer than ", kMaxInListSize, " values"));
        }
        ASSIGN_OR_RETURN(e, WithLiteral(std::move(e)));
        if (current_.kind != Kind::kComma) break;
        RETURN_IF_ERROR(Advance());
      }
      RETURN_IF_ERROR(Expect(Kind::kRParen, "',' or ')' in the IN list"));
      return e;
    }
    e.kind = Expr::Kind::kBetween;
    RETURN_IF_ERROR(Advance());
    ASSIGN_OR_RETURN(e, WithLiteral(std::move(e)));
    RETURN_IF_ERROR(Expect(Kind::kAnd, "AND in BETWEEN"));
    return WithLiteral(std::move(e));
  }

  // Appends the current token to e.literals when it is a literal.
  absl::StatusOr<Expr> WithLiteral(Expr e) {
    if (current_.kind == Kind::kNull) {
      return FilterError(
          current_.position,
          "NULL is not a value here (a comparison with NULL is never true); use IS NULL "
          "or IS NOT NULL");
    }
    if (current_.kind == Kind::kIdentifier) {
      return FilterError(
          current_.position,
          absl::StrCat("expected a string or number, found column ", Describe(current_),
                       " (comparing two columns is not supported)"));
    }
    if (current_.kind != Kind::kString && current_.kind != Kind::kNumber) {
      return FilterError(current_.position,
                         absl::StrCat("expected a string or number, found ", Describe(current_)));
    }
    RETURN_IF_ERROR(CountNode(current_.position));
    Literal l;
    l.kind = current_.kind == Kind::kString ? Literal::Kind::kString : Literal::Kind::kNumber;
    l.text = std::move(current_.text);
    l.is_integer = current_.is_integer;
    l.position = current_.position;
    e.literals.push_back(std::move(l));
    RETURN_IF_ERROR(Advance());
    return e;
  }

  Lexer lexer_;
  Token current_;
  int depth_ = 0;
  int nodes_ = 0;
};

}  // namespace

absl::string_view CompareOpText(CompareOp op) {
  switch (op) {
    case CompareOp::kEq: return "=";
    case CompareOp::kNe: return "<>";
    case CompareOp::kLt: return "<";
    case CompareOp::kLe: return "<=";
    case CompareOp::kGt: return ">";
    case CompareOp::kGe: return ">=";
  }
  return "=";
}

absl::StatusOr<Expr> ParseFilter(absl::string_view text) { return Parser(text).Parse(); }

}  // namespace dpq::query::filter
