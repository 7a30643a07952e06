#include "server/query/filter/type_checker.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/types/optional.h"
#include "server/base/status_macros.h"
#include "server/query/calendar.h"
#include "server/query/filter/lexer.h"
#include "server/query/filter/parser.h"

namespace dpq::query::filter {
namespace {

using internal::Excerpt;
using internal::FilterError;

constexpr int64_t kMaxDecimalExponent = 1000;  // PostgreSQL numeric_in rejects |exponent| > 1000

// A numeric literal as sign * digits * 10^exponent, digits without leading or trailing zeros
// ("" for zero). `text` matches the `number` grammar (ast.h), so it has at least one digit.
struct Decimal {
  bool negative = false;
  std::string digits;
  int64_t exponent = 0;
};

Decimal ParseDecimal(absl::string_view text) {
  Decimal d;
  size_t i = 0;
  if (text[i] == '+' || text[i] == '-') d.negative = text[i++] == '-';
  int64_t fraction_digits = 0;
  bool in_fraction = false;
  for (; i < text.size() && text[i] != 'e' && text[i] != 'E'; ++i) {
    if (text[i] == '.') {
      in_fraction = true;
      continue;
    }
    d.digits.push_back(text[i]);
    if (in_fraction) ++fraction_digits;
  }
  int64_t written_exponent = 0;
  if (i < text.size()) {  // exponent; saturate far beyond any accepted range (at most 98 digits)
    ++i;
    bool negative_exponent = false;
    if (text[i] == '+' || text[i] == '-') negative_exponent = text[i++] == '-';
    for (; i < text.size(); ++i) {
      written_exponent =
          std::min<int64_t>(written_exponent * 10 + (text[i] - '0'), int64_t{1} << 40);
    }
    if (negative_exponent) written_exponent = -written_exponent;
  }
  d.exponent = written_exponent - fraction_digits;
  const size_t first = d.digits.find_first_not_of('0');
  if (first == std::string::npos) return Decimal{};  // zero, whatever its sign and exponent
  d.digits.erase(0, first);
  const size_t last = d.digits.find_last_not_of('0');
  d.exponent += static_cast<int64_t>(d.digits.size() - 1 - last);
  d.digits.erase(last + 1);
  return d;
}

// The value as an int64 when it is an integer in range.
absl::optional<int64_t> AsInt64(const Decimal& d) {
  if (d.digits.empty()) return int64_t{0};
  if (d.exponent < 0 || static_cast<int64_t>(d.digits.size()) + d.exponent > 19)
    return absl::nullopt;
  std::string text = absl::StrCat(d.negative ? "-" : "", d.digits, std::string(d.exponent, '0'));
  int64_t v = 0;
  if (!absl::SimpleAtoi(text, &v)) return absl::nullopt;  // beyond int64 range
  return v;
}

// A date or timestamp column's value as dpq parsed it (calendar.h), in the SQL text of its type.
TypedValue CalendarValue(ColumnType type, int64_t value) {
  TypedValue v;
  v.kind = type == ColumnType::kDate ? TypedValue::Kind::kDate : TypedValue::Kind::kTimestamp;
  v.text = CalendarSqlText(type, value);
  return v;
}

absl::StatusOr<TypedValue> ConvertLiteral(const Literal& literal, const ColumnSchema& column) {
  TypedValue v;
  if (column.is_calendar()) {
    absl::optional<int64_t> value;
    if (literal.kind == Literal::Kind::kString) {
      value = ParseCalendarValue(column.type, literal.text);
    }
    if (!value.has_value()) {
      return FilterError(literal.position,
                         absl::StrCat("column ", column.name, " is a ", ColumnTypeName(column.type),
                                      ": compare it with ", CalendarFormHint(column.type),
                                      " (years 0001..9999), found ", Excerpt(literal.text)));
    }
    return CalendarValue(column.type, *value);
  }
  if (column.type == ColumnType::kText) {
    if (literal.kind != Literal::Kind::kString) {
      return FilterError(literal.position, absl::StrCat("column ", column.name,
                                                        " is text: compare it with a string in "
                                                        "single quotes, found the number ",
                                                        Excerpt(literal.text)));
    }
    v.kind = TypedValue::Kind::kText;
    v.text = literal.text;
    return v;
  }
  if (literal.kind != Literal::Kind::kNumber) {
    return FilterError(literal.position,
                       absl::StrCat("column ", column.name, " is ", ColumnTypeName(column.type),
                                    ": compare it with a number, found a string"));
  }
  if (column.type == ColumnType::kDouble) {
    absl::string_view text = literal.text;
    if (!text.empty() && text[0] == '+') text.remove_prefix(1);
    double x = 0;
    // Overflow to infinity and underflow of a non-zero literal to zero would both change the
    // comparison (PostgreSQL's float8 input refuses both too).
    if (!absl::SimpleAtod(text, &x) || !std::isfinite(x) ||
        (x == 0 && !ParseDecimal(literal.text).digits.empty())) {
      return FilterError(literal.position,
                         absl::StrCat("number ", Excerpt(literal.text),
                                      " is out of range for double column ", column.name));
    }
    v.kind = TypedValue::Kind::kDouble;
    // %.17g round-trips every double; -0 and 0 compare equal in SQL, so they share one spelling.
    v.text = x == 0 ? "0" : absl::StrFormat("%.17g", x);
    return v;
  }
  const Decimal d = ParseDecimal(literal.text);
  if (absl::optional<int64_t> i = AsInt64(d)) {
    v.kind = TypedValue::Kind::kInteger;
    v.text = absl::StrCat(*i);
    return v;
  }
  // Not an int64: compared as an exact decimal, so a large integer column value is never rounded
  // through a double. A literal beyond the double range is refused all the same: no column holds
  // such a value, and every client (Python, JSON) would read it as infinity.
  double magnitude = 0;
  absl::string_view unsigned_text = literal.text;
  if (!unsigned_text.empty() && (unsigned_text[0] == '+' || unsigned_text[0] == '-')) {
    unsigned_text.remove_prefix(1);
  }
  if (d.exponent > kMaxDecimalExponent || d.exponent < -kMaxDecimalExponent ||
      !absl::SimpleAtod(unsigned_text, &magnitude) || !std::isfinite(magnitude)) {
    return FilterError(literal.position,
                       absl::StrCat("number ", Excerpt(literal.text), " is out of range"));
  }
  v.kind = TypedValue::Kind::kDecimal;
  v.text = absl::StrCat(d.negative ? "-" : "", d.digits);
  if (d.exponent != 0) absl::StrAppend(&v.text, "e", d.exponent);
  // The canonical spelling (digits, then exponent) can be longer than the literal as written
  // ("-.1444...572" with 97 digits becomes "-1444...572e-97"), and the canonical text must parse
  // again like any filter, so it obeys the parser's length limit too.
  if (v.text.size() > kMaxNumberChars) {
    return FilterError(literal.position, absl::StrCat("number ", Excerpt(literal.text),
                                                      " has too many significant digits"));
  }
  return v;
}

absl::StatusOr<TypedExpr> Check(const Expr& e, const DatasetSchema& schema, int* value_count) {
  TypedExpr t;
  t.kind = e.kind;
  t.op = e.op;
  t.negated = e.negated;
  if (e.kind == Expr::Kind::kAnd || e.kind == Expr::Kind::kOr || e.kind == Expr::Kind::kNot) {
    for (const Expr& child : e.children) {
      ASSIGN_OR_RETURN(TypedExpr c, Check(child, schema, value_count));
      t.children.push_back(std::move(c));
    }
    return t;
  }
  const ColumnSchema* column = schema.FindColumn(e.column);
  if (column == nullptr) {
    return FilterError(e.position, absl::StrCat("unknown column ", Excerpt(e.column)));
  }
  t.column = column->name;
  t.column_type = column->type;
  for (const Literal& literal : e.literals) {
    ASSIGN_OR_RETURN(TypedValue v, ConvertLiteral(literal, *column));
    t.values.push_back(std::move(v));
    ++*value_count;
  }
  if (column->is_calendar() && !t.values.empty()) {
    // Bounds are required at creation (ValidateCalendarBounds); a schema without them is refused
    // rather than read unclamped.
    if (!column->calendar_lower || !column->calendar_upper) {
      return FilterError(e.position, absl::StrCat("column ", column->name, " has no bounds"));
    }
    t.clamp = {CalendarValue(column->type, *column->calendar_lower),
               CalendarValue(column->type, *column->calendar_upper)};
    *value_count += 2;
  }
  return t;
}

std::string Quote(const TypedValue& v) {
  const std::string& text = v.text;
  switch (v.kind) {
    case TypedValue::Kind::kText: break;
    case TypedValue::Kind::kDate: return absl::StrCat("'", text, "'");
    case TypedValue::Kind::kTimestamp: return absl::StrCat("'", text, "Z'");  // parses again
    default: return text;
  }
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') out.push_back('\'');
    out.push_back(c);
  }
  out.push_back('\'');
  return out;
}

void AppendCanonical(const TypedExpr& e, std::string* out) {
  switch (e.kind) {
    case Expr::Kind::kAnd:
    case Expr::Kind::kOr: {
      out->push_back('(');
      for (size_t i = 0; i < e.children.size(); ++i) {
        if (i > 0) absl::StrAppend(out, e.kind == Expr::Kind::kAnd ? " AND " : " OR ");
        AppendCanonical(e.children[i], out);
      }
      out->push_back(')');
      return;
    }
    case Expr::Kind::kNot:
      absl::StrAppend(out, "(NOT ");
      AppendCanonical(e.children[0], out);
      out->push_back(')');
      return;
    case Expr::Kind::kCompare:
      absl::StrAppend(out, "(", e.column, " ", CompareOpText(e.op), " ", Quote(e.values[0]), ")");
      return;
    case Expr::Kind::kIn:
      absl::StrAppend(
          out, "(", e.column, e.negated ? " NOT IN (" : " IN (",
          absl::StrJoin(e.values, ", ",
                        [](std::string* o, const TypedValue& v) { o->append(Quote(v)); }),
          "))");
      return;
    case Expr::Kind::kBetween:
      absl::StrAppend(out, "(", e.column, e.negated ? " NOT BETWEEN " : " BETWEEN ",
                      Quote(e.values[0]), " AND ", Quote(e.values[1]), ")");
      return;
    case Expr::Kind::kIsNull:
      absl::StrAppend(out, "(", e.column, e.negated ? " IS NOT NULL)" : " IS NULL)");
      return;
  }
}

}  // namespace

absl::StatusOr<TypedFilter> CheckFilter(const Expr& expr, const DatasetSchema& schema) {
  TypedFilter f;
  ASSIGN_OR_RETURN(f.root, Check(expr, schema, &f.value_count));
  return f;
}

absl::StatusOr<TypedFilter> ParseAndCheckFilter(absl::string_view text,
                                                const DatasetSchema& schema) {
  ASSIGN_OR_RETURN(Expr expr, ParseFilter(text));
  return CheckFilter(expr, schema);
}

std::string CanonicalText(const TypedFilter& filter) {
  std::string out;
  AppendCanonical(filter.root, &out);
  return out;
}

}  // namespace dpq::query::filter
