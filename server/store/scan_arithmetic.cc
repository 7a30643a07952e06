#include "server/store/scan_arithmetic.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace dpq::store {

absl::string_view ScanArithmeticName(ScanArithmetic arithmetic) {
  return arithmetic == ScanArithmetic::kNumeric ? "numeric" : "float8";
}

std::string SafeArithmetic::Constant(double value) const {
  // A decimal literal (no quotes): PostgreSQL reads it as numeric, then casts it once.
  return absl::StrCat("(", absl::StrFormat("%.17g", value), ")::", type());
}

std::string SafeArithmetic::Raw(absl::string_view column) const {
  // bigint -> float8 rounds, float8 -> numeric keeps NaN and +-Infinity (PostgreSQL 14+): total.
  return absl::StrCat(column, "::", type());
}

std::string SafeArithmetic::Clamp(absl::string_view value, absl::string_view lo,
                                  absl::string_view hi) const {
  return Smaller(Larger(value, lo), hi);
}

std::string SafeArithmetic::ClampForPreAggregate(absl::string_view raw) const {
  return Clamp(raw, Constant(-kPreAggregateRawLimit), Constant(kPreAggregateRawLimit));
}

std::string SafeArithmetic::Square(absl::string_view value) const {
  if (arithmetic_ == ScanArithmetic::kNumeric)
    return absl::StrCat("((", value, ") * (", value, "))");
  return absl::StrCat("(CASE WHEN abs(", value, ") < ", Constant(kTinyMagnitude), " THEN ",
                      Constant(0), " ELSE (", value, ") * (", value, ") END)");
}

std::string SafeArithmetic::Mean(absl::string_view sum, absl::string_view count) const {
  if (arithmetic_ == ScanArithmetic::kNumeric) {
    return absl::StrCat("((", sum, ") / (", count, ")::numeric)");
  }
  return absl::StrCat("(CASE WHEN abs(", sum, ") < ", Constant(kTinyMagnitude), " THEN ",
                      Constant(0), " ELSE (", sum, ") / (", count, ")::float8 END)");
}

std::string SafeArithmetic::Sum(absl::string_view value) const {
  return absl::StrCat("coalesce(sum(", value, "), ", Constant(0), ")");
}

std::string SafeArithmetic::ToFloat8(absl::string_view value) const {
  if (arithmetic_ == ScanArithmetic::kFloat8) return absl::StrCat("(", value, ")::float8");
  return absl::StrCat("(CASE WHEN abs(", value, ") < 1e-300 THEN 0::float8 ELSE (", value,
                      ")::float8 END)");
}

std::string SafeArithmetic::Flush(absl::string_view value) const {
  if (arithmetic_ == ScanArithmetic::kNumeric) return absl::StrCat("round(", value, ", 151)");
  const std::string scale = Constant(std::ldexp(1.0, 500));
  return absl::StrCat("(round((", value, ") * ", scale, ") / ", scale, ")");
}

std::string SafeArithmetic::Multiply(absl::string_view a, absl::string_view b) const {
  return absl::StrCat("(", Flush(a), " * ", Flush(b), ")");
}

std::string SafeArithmetic::Divide(absl::string_view dividend, absl::string_view divisor) const {
  return absl::StrCat("(", Flush(dividend), " / (", divisor, "))");
}

std::string SafeArithmetic::RoundHalfAwayFromZero(absl::string_view value) const {
  if (arithmetic_ == ScanArithmetic::kNumeric) return absl::StrCat("round(", value, ")");
  return absl::StrCat("round((", value, ")::text::numeric)::float8");
}

std::string SafeArithmetic::Smaller(absl::string_view a, absl::string_view b) const {
  return absl::StrCat(
      arithmetic_ == ScanArithmetic::kNumeric ? "numeric_smaller(" : "float8smaller(", a, ", ", b,
      ")");
}

std::string SafeArithmetic::Larger(absl::string_view a, absl::string_view b) const {
  return absl::StrCat(arithmetic_ == ScanArithmetic::kNumeric ? "numeric_larger(" : "float8larger(",
                      a, ", ", b, ")");
}

std::string SafeArithmetic::ToFloat8Once(absl::string_view value) const {
  if (arithmetic_ == ScanArithmetic::kFloat8) return absl::StrCat("(", value, ")::float8");
  return absl::StrCat("round(", value, ", 323)::float8");
}

}  // namespace dpq::store
