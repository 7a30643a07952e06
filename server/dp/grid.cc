#include "server/dp/grid.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "server/base/validation.h"

namespace dpq::dp::internal {

absl::StatusOr<double> ChooseGranularity(double sensitivity, double nominal_scale) {
  const double target = std::fmax(std::ldexp(sensitivity, -20), std::ldexp(nominal_scale, -40));
  int exponent = 0;
  std::frexp(target, &exponent);  // target = f * 2^exponent, f in [0.5, 1)
  const double gamma = std::ldexp(1.0, exponent - 1);
  if (!std::isnormal(gamma)) {
    return absl::OutOfRangeError(
        absl::StrCat("sensitivity ", sensitivity, " gives a grid step outside the double range"));
  }
  return gamma;
}

absl::StatusOr<int64_t> SnapToGrid(double value, double gamma) {
  if (!std::isfinite(value)) {
    return absl::InvalidArgumentError(absl::StrCat("value must be finite, got ", value));
  }
  const double scaled = std::round(value / gamma);  // exact division: gamma is a power of two
  if (!(std::fabs(scaled) < 0x1p62)) {
    return absl::OutOfRangeError(absl::StrCat("value ", value,
                                              " is too large for the release grid of step ", gamma,
                                              " (|value/step| must be < 2^62)"));
  }
  return static_cast<int64_t>(scaled);
}

double FromGrid(int64_t k, int64_t z, double gamma) {
  // |k|, |z| < 2^63 so the sum fits in 128 bits; converting to double is post-processing.
  const __int128 sum = static_cast<__int128>(k) + z;
  return static_cast<double>(sum) * gamma;
}

double DivideRoundingUp(double a, double b) {
  double q = a / b;
  // fma gives the sign of the exact q*b - a (one rounding of a nonzero value keeps its sign).
  if (std::fma(q, b, -a) < 0) q = std::nextafter(q, std::numeric_limits<double>::infinity());
  return q;
}

double AddRoundingUp(double a, double b) {
  const double hi = std::fmax(a, b);
  const double lo = std::fmin(a, b);
  double s = hi + lo;
  // hi <= s <= 2 hi, so s - hi is exact (Sterbenz 1974) and detects a sum rounded down.
  if (s - hi < lo) s = std::nextafter(s, std::numeric_limits<double>::infinity());
  return s;
}

absl::Status ValidateChangedCoordinates(int64_t changed_coordinates) {
  if (changed_coordinates < 1 || changed_coordinates > (int64_t{1} << 40)) {
    return absl::InvalidArgumentError(
        absl::StrCat("changed_coordinates must lie in [1, 2^40], got ", changed_coordinates));
  }
  return absl::OkStatus();
}

}  // namespace dpq::dp::internal
