#include "server/store/expression_sql.h"

#include <cmath>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/base/status_macros.h"
#include "server/store/database.h"

namespace dpq::store {
namespace {

using query::expression::Expr;
using query::expression::Op;
using query::expression::ValueType;
using Kind = Expr::Kind;

bool IsNumeric(ValueType t) { return t == ValueType::kInt64 || t == ValueType::kFloat64; }

bool IsComparison(Op op) {
  return op == Op::kEq || op == Op::kNe || op == Op::kLt || op == Op::kLe || op == Op::kGt ||
         op == Op::kGe;
}

absl::Status Refused(const Expr& e, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("expression SQL: ", what, " (a tree CheckExpression refuses) at ",
                   query::expression::FormatSourcePosition(e.pos), " ", e.name));
}

// Writes one checked tree. Every numeric node's value lies in its checked interval (Expr::bounds):
// columns are clamped into their declared bounds, literals are points, negation, +, -, ABS,
// LEAST, GREATEST, CASE and COALESCE keep their operands' values inside the interval the checker
// derived (interval arithmetic rounds outward; float8 rounding is monotone; numeric is exact),
// and the steps that round (`*`, `/`, CAST to INT64) are clamped into their node's interval again.
// So no intermediate exceeds kMaxBoundMagnitude, and a divisor is never 0.
class Renderer {
 public:
  Renderer(const SafeArithmetic& math, const ExpressionSql::ParamFn& param,
           const ExpressionSql::QuoteFn& quote)
      : math_(math), param_(param), quote_(quote) {}

  absl::StatusOr<std::string> Numeric(const Expr& e) {
    if (e.type == ValueType::kNull) return Null(math_.type());
    if (!IsNumeric(e.type)) return Refused(e, "a non-numeric value in arithmetic");
    switch (e.kind) {
      case Kind::kColumn: {
        if (e.column_type == query::ColumnType::kText) return Refused(e, "a text column");
        return Bounded(e, math_.Raw(quote_(e.name)));
      }
      case Kind::kLiteral: return NumberLiteral(e);
      case Kind::kUnary: {
        if (e.op != Op::kNegate) return Refused(e, "NOT on a number");
        ASSIGN_OR_RETURN(std::string v, Numeric(e.children[0]));
        return absl::StrCat("(-", v, ")");
      }
      case Kind::kBinary: return Arithmetic(e);
      case Kind::kCase: return Case(e, &Renderer::Numeric);
      case Kind::kCoalesce: return Call("coalesce", e, &Renderer::Numeric);
      case Kind::kAbs: {
        ASSIGN_OR_RETURN(std::string v, Numeric(e.children[0]));
        return absl::StrCat("abs(", v, ")");
      }
      case Kind::kLeast:
      case Kind::kGreatest: return Extreme(e);
      case Kind::kCast: return NumericCast(e);
      default: return Refused(e, "a non-numeric node in arithmetic");
    }
  }

  absl::StatusOr<std::string> Condition(const Expr& e) {
    if (e.type == ValueType::kNull) return Null("boolean");
    if (e.type != ValueType::kBool) return Refused(e, "a non-BOOL condition");
    switch (e.kind) {
      case Kind::kLiteral: return std::string(e.text == "TRUE" ? "true" : "false");
      case Kind::kUnary: {
        if (e.op != Op::kNot) return Refused(e, "negation of a condition");
        ASSIGN_OR_RETURN(std::string c, Condition(e.children[0]));
        return absl::StrCat("(NOT ", c, ")");
      }
      case Kind::kBinary: {
        if (IsComparison(e.op)) return Comparison(e);
        if (e.op != Op::kAnd && e.op != Op::kOr) return Refused(e, "arithmetic as a condition");
        ASSIGN_OR_RETURN(std::string a, Condition(e.children[0]));
        ASSIGN_OR_RETURN(std::string b, Condition(e.children[1]));
        return absl::StrCat("(", a, " ", e.op == Op::kAnd ? "AND" : "OR", " ", b, ")");
      }
      case Kind::kIsNull: {
        ASSIGN_OR_RETURN(std::string v, NullTestable(e.children[0]));
        return absl::StrCat("(", v, " IS ", e.negated ? "NOT " : "", "NULL)");
      }
      case Kind::kIn: return InList(e);
      case Kind::kCase: return Case(e, &Renderer::Condition);
      case Kind::kCoalesce: return Call("coalesce", e, &Renderer::Condition);
      default: return Refused(e, "a node that is no condition");
    }
  }

  // A numeric node as float8 for a comparison: a bare column raw (bigint -> float8 and float8
  // itself never fail; NaN orders above every number, as in the flag filter), else its value.
  absl::StatusOr<std::string> Comparable(const Expr& e) {
    if (e.type == ValueType::kNull) return Null("float8");
    if (e.kind == Kind::kColumn && e.column_type != query::ColumnType::kText) {
      return absl::StrCat(quote_(e.name), "::float8");
    }
    ASSIGN_OR_RETURN(std::string v, Numeric(e));
    return math_.ToFloat8Once(v);
  }

  absl::StatusOr<std::string> Text(const Expr& e) {
    switch (e.type) {
      case ValueType::kNull: return Null("text");
      case ValueType::kBool: {
        ASSIGN_OR_RETURN(std::string c, Condition(e));
        return absl::StrCat("(", c, ")::text");  // 'true' / 'false'
      }
      case ValueType::kInt64:
      case ValueType::kFloat64: return NumberText(e);
      case ValueType::kString: break;
    }
    switch (e.kind) {
      case Kind::kColumn: return quote_(e.name);
      case Kind::kLiteral: return param_(e.text, "text");
      case Kind::kCase: return Case(e, &Renderer::Text);
      case Kind::kCoalesce: return Call("coalesce", e, &Renderer::Text);
      case Kind::kLeast:
      case Kind::kGreatest: return TextExtreme(e);
      case Kind::kCast: return Text(e.children[0]);  // a number or BOOL written as its text
      default: return Refused(e, "a node that is no text");
    }
  }

  // A numeric value as text: INT64 as bigint prints, FLOAT64 as float8 prints (shortest
  // round-trip text under extra_float_digits = 3), -0 as 0 so that equal values are equal keys.
  absl::StatusOr<std::string> NumberText(const Expr& e) {
    ASSIGN_OR_RETURN(std::string v, Numeric(e));
    if (e.type == ValueType::kInt64) return absl::StrCat("(", v, ")::bigint::text");
    if (math_.arithmetic() == ScanArithmetic::kNumeric) {
      return absl::StrCat(math_.ToFloat8Once(v), "::text");  // numeric has no -0
    }
    return absl::StrCat("((", v, ") + 0::float8)::text");  // -0 + 0 is +0
  }

  // Any value, for IS NULL: its NULLs are the expression's.
  absl::StatusOr<std::string> NullTestable(const Expr& e) {
    if (e.kind == Kind::kColumn) return quote_(e.name);
    if (IsNumeric(e.type)) return Numeric(e);
    if (e.type == ValueType::kBool) return Condition(e);
    return Text(e);
  }

 private:
  using Part = absl::StatusOr<std::string> (Renderer::*)(const Expr&);

  static std::string Null(absl::string_view type) { return absl::StrCat("NULL::", type); }

  absl::StatusOr<std::string> Bounded(const Expr& e, const std::string& value) {
    if (!e.bounds) return Refused(e, "an unbounded value inside arithmetic");
    const std::string lo = param_(ExactDouble(e.bounds->lower), math_.type());
    const std::string hi = param_(ExactDouble(e.bounds->upper), math_.type());
    return math_.Clamp(value, lo, hi);  // NULL stays NULL
  }

  absl::StatusOr<std::string> NumberLiteral(const Expr& e) {
    if (e.literal_type == ValueType::kInt64) {
      int64_t v = 0;
      if (!absl::SimpleAtoi(e.text, &v)) return Refused(e, "an integer literal out of range");
      return param_(absl::StrCat(v), math_.type());
    }
    double d = 0;
    if (!absl::SimpleAtod(e.text, &d) || !std::isfinite(d)) {
      return Refused(e, "a non-finite number literal");
    }
    return param_(ExactDouble(d), math_.type());
  }

  absl::StatusOr<std::string> Arithmetic(const Expr& e) {
    ASSIGN_OR_RETURN(std::string a, Numeric(e.children[0]));
    ASSIGN_OR_RETURN(std::string b, Numeric(e.children[1]));
    switch (e.op) {
      case Op::kAdd: return absl::StrCat("(", a, " + ", b, ")");
      case Op::kSubtract: return absl::StrCat("(", a, " - ", b, ")");
      case Op::kMultiply: return Bounded(e, math_.Multiply(a, b));
      case Op::kDivide: {
        const auto& divisor = e.children[1].bounds;
        if (!divisor || divisor->ContainsZero()) return Refused(e, "a divisor that may be 0");
        return Bounded(e, math_.Divide(a, b));
      }
      default: return Refused(e, "a condition in arithmetic");
    }
  }

  absl::StatusOr<std::string> NumericCast(const Expr& e) {
    const Expr& from = e.children[0];
    if (from.type == ValueType::kNull) return Null(math_.type());
    if (!IsNumeric(from.type)) return Refused(e, "a cast of a non-number to a number");
    ASSIGN_OR_RETURN(std::string v, Numeric(from));
    if (e.type == ValueType::kInt64 && from.type == ValueType::kFloat64) {
      return Bounded(e, math_.RoundHalfAwayFromZero(v));
    }
    return v;
  }

  absl::StatusOr<std::string> Extreme(const Expr& e) {
    ASSIGN_OR_RETURN(std::string out, Numeric(e.children[0]));
    for (size_t i = 1; i < e.children.size(); ++i) {
      ASSIGN_OR_RETURN(std::string next, Numeric(e.children[i]));
      out = e.kind == Kind::kLeast ? math_.Smaller(out, next) : math_.Larger(out, next);
    }
    return out;
  }

  absl::StatusOr<std::string> TextExtreme(const Expr& e) {
    ASSIGN_OR_RETURN(std::string out, Text(e.children[0]));
    for (size_t i = 1; i < e.children.size(); ++i) {
      ASSIGN_OR_RETURN(std::string next, Text(e.children[i]));
      out = absl::StrCat(e.kind == Kind::kLeast ? "text_smaller(" : "text_larger(", out, ", ", next,
                         ")");
    }
    return out;
  }

  absl::StatusOr<std::string> Case(const Expr& e, Part part) {
    const size_t whens = (e.children.size() - (e.has_else ? 1 : 0)) / 2;
    std::string out = "(CASE";
    for (size_t i = 0; i < whens; ++i) {
      ASSIGN_OR_RETURN(std::string when, Condition(e.children[2 * i]));
      ASSIGN_OR_RETURN(std::string then, (this->*part)(e.children[2 * i + 1]));
      absl::StrAppend(&out, " WHEN ", when, " THEN ", then);
    }
    if (e.has_else) {
      ASSIGN_OR_RETURN(std::string otherwise, (this->*part)(e.children.back()));
      absl::StrAppend(&out, " ELSE ", otherwise);
    }
    return absl::StrCat(out, " END)");
  }

  absl::StatusOr<std::string> Call(absl::string_view function, const Expr& e, Part part) {
    std::vector<std::string> args;
    for (const Expr& c : e.children) {
      ASSIGN_OR_RETURN(std::string a, (this->*part)(c));
      args.push_back(std::move(a));
    }
    return absl::StrCat(function, "(", absl::StrJoin(args, ", "), ")");
  }

  // Numbers compare as float8, text as text (the database's collation), BOOL as boolean.
  absl::StatusOr<std::string> Operand(const Expr& e, ValueType as) {
    if (as == ValueType::kString) return Text(e);
    if (as == ValueType::kBool) return Condition(e);
    return Comparable(e);
  }

  static ValueType ComparedAs(const Expr& a, const Expr& b) {
    for (ValueType t : {ValueType::kString, ValueType::kBool}) {
      if (a.type == t || b.type == t) return t;
    }
    return ValueType::kFloat64;
  }

  static bool FitsComparison(ValueType t, ValueType as) {
    return t == ValueType::kNull || t == as || (as == ValueType::kFloat64 && IsNumeric(t));
  }

  absl::StatusOr<std::string> Comparison(const Expr& e) {
    const ValueType as = ComparedAs(e.children[0], e.children[1]);
    if (!FitsComparison(e.children[0].type, as) || !FitsComparison(e.children[1].type, as)) {
      return Refused(e, "a comparison of different types");
    }
    ASSIGN_OR_RETURN(std::string a, Operand(e.children[0], as));
    ASSIGN_OR_RETURN(std::string b, Operand(e.children[1], as));
    return absl::StrCat("(", a, " ", query::expression::OpText(e.op), " ", b, ")");
  }

  absl::StatusOr<std::string> InList(const Expr& e) {
    ValueType as = ValueType::kFloat64;
    for (const Expr& c : e.children) {
      if (c.type == ValueType::kString || c.type == ValueType::kBool) as = c.type;
    }
    std::vector<std::string> items;
    for (size_t i = 0; i < e.children.size(); ++i) {
      const Expr& c = e.children[i];
      if (!FitsComparison(c.type, as)) return Refused(e, "an IN list of different types");
      if (i > 0 && c.kind != Kind::kLiteral) return Refused(c, "an IN element that is no literal");
      ASSIGN_OR_RETURN(std::string item, Operand(c, as));
      items.push_back(std::move(item));
    }
    const std::string lhs = items.front();
    items.erase(items.begin());
    return absl::StrCat("(", e.negated ? "NOT " : "", "(", lhs, " IN (", absl::StrJoin(items, ", "),
                        ")))");
  }

  const SafeArithmetic& math_;
  const ExpressionSql::ParamFn& param_;
  const ExpressionSql::QuoteFn& quote_;
};

// A bare numeric column at the root may lack declared bounds (the scan clamps it to the
// requested bounds, as a value column): it is read raw.
bool IsBareUnboundedNumber(const Expr& e) {
  return e.kind == Kind::kColumn && e.column_type != query::ColumnType::kText && !e.bounds;
}

}  // namespace

absl::StatusOr<std::string> ExpressionSql::Numeric(const Expr& e) {
  if (IsBareUnboundedNumber(e)) return math_.Raw(quote_(e.name));
  return Renderer(math_, param_, quote_).Numeric(e);
}

absl::StatusOr<std::string> ExpressionSql::Condition(const Expr& e) {
  return Renderer(math_, param_, quote_).Condition(e);
}

absl::StatusOr<std::string> ExpressionSql::Text(const Expr& e) {
  // A bare column as a key prints as the plain group column does (scan_sql.cc), raw.
  if (e.kind == Kind::kColumn) return absl::StrCat(quote_(e.name), "::text");
  return Renderer(math_, param_, quote_).Text(e);
}

}  // namespace dpq::store
