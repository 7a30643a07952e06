#include "server/dp/exact_rational.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"

namespace dpq::dp {
namespace {

// x = mantissa * 2^exponent with an odd (or zero) mantissa.
void Decompose(double x, uint64_t& mantissa, int& exponent) {
  int e = 0;
  const double f = std::frexp(x, &e);  // x = f * 2^e, f in [0.5, 1)
  mantissa = static_cast<uint64_t>(std::ldexp(f, 53));
  exponent = e - 53;
  while (mantissa != 0 && (mantissa & 1) == 0) {
    mantissa >>= 1;
    ++exponent;
  }
}

absl::StatusOr<Rational> Convert(double x, absl::string_view name, bool round_up) {
  RETURN_IF_ERROR(ValidateIsPositive(x, name));
  if (x > static_cast<double>(kMaxRationalPart)) {
    return absl::OutOfRangeError(absl::StrCat(name, " must be <= 2^62, got ", x));
  }
  uint64_t m = 0;
  int e = 0;
  Decompose(x, m, e);
  if (e >= 0) {  // integer; m * 2^e <= 2^62 was checked above
    return Rational{m << e, 1};
  }
  if (-e <= 62) return Rational{m, uint64_t{1} << -e};
  // Too fine for a 2^62 denominator: round to a multiple of 2^-62.
  const int shift = -e - 62;  // >= 1
  uint64_t num = shift >= 64 ? 0 : (m >> shift);
  const bool exact = shift < 64 && (num << shift) == m;
  if (round_up && !exact) ++num;
  if (num == 0) {
    return absl::OutOfRangeError(absl::StrCat(name, " must be >= 2^-62, got ", x));
  }
  return Rational{num, kMaxRationalPart};
}

}  // namespace

absl::StatusOr<Rational> RationalAtLeast(double x, absl::string_view name) {
  return Convert(x, name, /*round_up=*/true);
}

absl::StatusOr<Rational> RationalAtMost(double x, absl::string_view name) {
  return Convert(x, name, /*round_up=*/false);
}

}  // namespace dpq::dp
