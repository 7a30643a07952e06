#include "server/query/expression/literal_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace dpq::query::expression {

absl::StatusOr<NumberValue> ParseNumber(absl::string_view text, ValueType written_type) {
  NumberValue v;
  if (written_type == ValueType::kInt64 && absl::SimpleAtoi(text, &v.integer)) {
    v.type = ValueType::kInt64;
    v.real = static_cast<double>(v.integer);
    return v;
  }
  if (!absl::SimpleAtod(text, &v.real) || !std::isfinite(v.real)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the number ", text, " is not a finite FLOAT64; write a smaller number"));
  }
  v.type = ValueType::kFloat64;
  return v;
}

// std::to_chars without a precision writes the shortest round-trip digits (C++17 [charconv]),
// the same digits as PostgreSQL's Ryu-based float8out; only the layout differs: PostgreSQL
// writes fixed notation when the decimal exponent is in [-4, 15), scientific otherwise
// (src/common/d2s.c), and its scientific form is to_chars's ("1e+20", "1.5e-07").
std::string Float8Text(double v) {
  if (v == 0) return std::signbit(v) ? "-0" : "0";
  char buffer[64];
  const auto scientific =
      std::to_chars(buffer, buffer + sizeof(buffer), v, std::chars_format::scientific);
  const std::string sci(buffer, scientific.ptr);
  const size_t e_at = sci.find('e');
  const int exponent = std::stoi(sci.substr(e_at + 1));
  if (exponent < -4 || exponent >= 15) return sci;
  const bool negative = sci[0] == '-';
  std::string digits;
  for (size_t i = negative ? 1 : 0; i < e_at; ++i) {
    if (sci[i] != '.') digits.push_back(sci[i]);
  }
  std::string out = negative ? "-" : "";
  if (exponent < 0) {
    return absl::StrCat(out, "0.", std::string(-exponent - 1, '0'), digits);
  }
  const size_t integer_digits = static_cast<size_t>(exponent) + 1;
  if (digits.size() <= integer_digits) {
    return absl::StrCat(out, digits, std::string(integer_digits - digits.size(), '0'));
  }
  return absl::StrCat(out, digits.substr(0, integer_digits), ".", digits.substr(integer_digits));
}

std::string NumberText(const NumberValue& v) {
  if (v.type == ValueType::kInt64) return absl::StrCat(v.integer);
  return Float8Text(v.real);
}

std::string CanonicalNumber(const NumberValue& v) {
  std::string text = NumberText(v);
  if (v.type == ValueType::kFloat64 && text.find_first_of(".e") == std::string::npos) {
    text += ".0";
  }
  return text;
}

std::string QuoteString(absl::string_view text) {
  return absl::StrCat("'", absl::StrReplaceAll(text, {{"'", "''"}}), "'");
}

std::vector<std::string> LiteralResults(const Expr& root) {
  std::vector<const Expr*> results;
  if (root.kind == Expr::Kind::kCase) {
    const size_t pairs_size = root.children.size() - (root.has_else ? 1 : 0);
    for (size_t i = 1; i < pairs_size; i += 2) results.push_back(&root.children[i]);
    if (root.has_else) results.push_back(&root.children.back());
  } else if (root.kind == Expr::Kind::kCoalesce) {
    for (const Expr& child : root.children) results.push_back(&child);
  }
  std::vector<std::string> texts;
  for (const Expr* r : results) {
    if (r->kind != Expr::Kind::kLiteral) return {};
    std::string text;
    switch (r->type) {
      case ValueType::kNull: continue;
      case ValueType::kBool: text = r->text == "TRUE" ? "true" : "false"; break;
      case ValueType::kString: text = r->text; break;
      case ValueType::kInt64:
      case ValueType::kFloat64:
        // An INT64 result of a FLOAT64 CASE prints as a float8 (1e15 as "1e+15").
        text = root.type == ValueType::kFloat64 ? Float8Text(r->bounds->lower) : r->text;
        break;
    }
    if (std::find(texts.begin(), texts.end(), text) == texts.end()) texts.push_back(text);
  }
  return texts;
}

}  // namespace dpq::query::expression
