#include "server/query/privacy_units.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"

namespace dpq::query {
namespace internal {

namespace {

unsigned __int128 Pow5(int n) {
  unsigned __int128 p = 1;
  for (int i = 0; i < n; ++i) p *= 5;
  return p;
}

}  // namespace

bool TimesPow10AtMost(double d, int decimals, int64_t units) {
  if (d == 0) return true;
  // d = m * 2^e with m a 53-bit integer; d * 10^k = (m * 5^k) * 2^(e + k), and m * 5^k < 2^95.
  int exp = 0;
  const double frac = std::frexp(d, &exp);
  const unsigned __int128 m = static_cast<uint64_t>(std::ldexp(frac, 53));
  const int shift = exp - 53 + decimals;
  const unsigned __int128 p = m * Pow5(decimals);
  const unsigned __int128 u = static_cast<uint64_t>(units);
  if (shift >= 0) {
    if (shift >= 32) return false;  // p >= 2^52 (d normal) so p * 2^32 > 2^63 > units
    return (p << shift) <= u;
  }
  const int k = -shift;
  if (k >= 127) return u >= 1;  // 0 < p * 2^-k <= 1
  // p * 2^-k <= u  <=>  ceil(p / 2^k) <= u, as u is an integer.
  const unsigned __int128 one = 1;
  const unsigned __int128 ceil = (p + (one << k) - 1) >> k;
  return ceil <= u;
}

double LargestDoubleAtMost(int64_t units, int decimals) {
  double d = static_cast<double>(static_cast<long double>(units) / std::pow(10.0L, decimals));
  while (d > 0 && !TimesPow10AtMost(d, decimals, units)) d = std::nextafter(d, 0.0);
  for (;;) {
    const double up = std::nextafter(d, std::numeric_limits<double>::infinity());
    if (!TimesPow10AtMost(up, decimals, units)) return d;
    d = up;
  }
}

}  // namespace internal

absl::StatusOr<int64_t> EpsilonToUnits(double epsilon, absl::string_view name, double max) {
  RETURN_IF_ERROR(ValidateIsPositive(epsilon, name));
  if (epsilon > max) {
    return absl::InvalidArgumentError(absl::StrCat(name, " must be <= ", max, ", got ", epsilon));
  }
  const int64_t units = std::llround(epsilon * 1e12);
  if (units < 1) {
    return absl::InvalidArgumentError(absl::StrCat(name, " must be >= 1e-12, got ", epsilon));
  }
  return units;
}

absl::StatusOr<int64_t> DeltaToUnits(double delta, absl::string_view name) {
  RETURN_IF_ERROR(ValidateInHalfOpenRange(delta, 0, 1, name));
  const int64_t units = std::llround(static_cast<long double>(delta) * 1e18L);
  if (delta > 0 && units < 1) {
    return absl::InvalidArgumentError(absl::StrCat(name, " must be 0 or >= 1e-18, got ", delta));
  }
  return units;
}

double EpsilonFromUnits(int64_t units) { return static_cast<double>(units) / 1e12; }

double DeltaFromUnits(int64_t units) {
  return static_cast<double>(static_cast<long double>(units) / 1e18L);
}

double MechanismEpsilon(int64_t units) {
  return internal::LargestDoubleAtMost(units, kEpsilonDecimals);
}

double MechanismDelta(int64_t units) {
  return internal::LargestDoubleAtMost(units, kDeltaDecimals);
}

}  // namespace dpq::query
