#include "server/query/value_interval.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/query/dataset_schema.h"

namespace dpq::query {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Below this magnitude a product or quotient may have underflowed, and its error term is no
// longer exact: such results are widened by one ulp on both sides.
constexpr double kErrorTermExactAbove = std::numeric_limits<double>::min() * 0x1p54;

// A rounded result `r` of an operation whose exact value is r + error (error's sign known):
// the interval ends move one ulp outward only when the rounding went the wrong way for that end
// (directed rounding from round-to-nearest, Hickey et al. 2001, sec. 5), so exact operations such
// as integer sums keep their exact bounds.
double LowerEnd(double r, double error) { return error < 0 ? std::nextafter(r, -kInf) : r; }
double UpperEnd(double r, double error) { return error > 0 ? std::nextafter(r, kInf) : r; }

// Knuth's TwoSum (TAOCP vol. 2, sec. 4.2.2, Theorem B): x + y == s + error exactly.
double SumError(double x, double y, double s) {
  const double y_virtual = s - x;
  const double x_virtual = s - y_virtual;
  return (x - x_virtual) + (y - y_virtual);
}

// x * y == p + error exactly when p is far from underflow (fma rounds once).
double ProductError(double x, double y, double p) {
  if (std::fabs(p) < kErrorTermExactAbove && x != 0 && y != 0) return std::nan("");
  return std::fma(x, y, -p);
}

// x / y == q + r / y with r = x - q * y exact (fma), so the error has the sign of r / y.
double QuotientError(double x, double y, double q) {
  if (std::fabs(q) < kErrorTermExactAbove && x != 0) return std::nan("");
  const double r = std::fma(-q, y, x);
  return (r == 0) ? 0 : ((r > 0) == (y > 0) ? 1 : -1);
}

// The rounded corner values of an operation with their error signs; an unknown error (NaN)
// widens both ends.
struct Corner {
  double value;
  double error;
};

ValueInterval FromCorners(const Corner* corners, int n) {
  ValueInterval out{kInf, -kInf};
  for (int i = 0; i < n; ++i) {
    const Corner& c = corners[i];
    const bool unknown = std::isnan(c.error);
    out.lower =
        std::min(out.lower, unknown ? std::nextafter(c.value, -kInf) : LowerEnd(c.value, c.error));
    out.upper =
        std::max(out.upper, unknown ? std::nextafter(c.value, kInf) : UpperEnd(c.value, c.error));
  }
  return out;
}

}  // namespace

std::string ValueInterval::ToString() const {
  return absl::StrFormat("[%.6g, %.6g]", lower, upper);
}

ValueInterval PointInterval(double v) { return {v, v}; }

ValueInterval Hull(const ValueInterval& a, const ValueInterval& b) {
  return {std::min(a.lower, b.lower), std::max(a.upper, b.upper)};
}

ValueInterval Negate(const ValueInterval& a) { return {-a.upper, -a.lower}; }

ValueInterval Abs(const ValueInterval& a) {
  if (a.lower >= 0) return a;
  if (a.upper <= 0) return Negate(a);
  return {0, std::max(-a.lower, a.upper)};
}

ValueInterval Least(const ValueInterval& a, const ValueInterval& b) {
  return {std::min(a.lower, b.lower), std::min(a.upper, b.upper)};
}

ValueInterval Greatest(const ValueInterval& a, const ValueInterval& b) {
  return {std::max(a.lower, b.lower), std::max(a.upper, b.upper)};
}

ValueInterval Add(const ValueInterval& a, const ValueInterval& b) {
  const double lower = a.lower + b.lower;
  const double upper = a.upper + b.upper;
  return {LowerEnd(lower, SumError(a.lower, b.lower, lower)),
          UpperEnd(upper, SumError(a.upper, b.upper, upper))};
}

ValueInterval Subtract(const ValueInterval& a, const ValueInterval& b) { return Add(a, Negate(b)); }

// Moore 1966, eq. 2.5: the extremes of x * y over a box are at its corners.
ValueInterval Multiply(const ValueInterval& a, const ValueInterval& b) {
  Corner corners[4];
  int n = 0;
  for (double x : {a.lower, a.upper}) {
    for (double y : {b.lower, b.upper}) {
      const double p = x * y;
      corners[n++] = {p, ProductError(x, y, p)};
    }
  }
  return FromCorners(corners, n);
}

// Moore 1966, eq. 2.6: a / b = a * (1 / b) for 0 not in b. The quotient's corners are computed
// directly (one rounding each) rather than through a rounded reciprocal.
absl::StatusOr<ValueInterval> Divide(const ValueInterval& a, const ValueInterval& b) {
  if (b.ContainsZero()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the divisor's bounds ", b.ToString(),
        " include 0, so the quotient has no bound; divide by an expression whose bounds exclude 0, "
        "or wrap the divisor in GREATEST(divisor, a positive constant)"));
  }
  Corner corners[4];
  int n = 0;
  for (double x : {a.lower, a.upper}) {
    for (double y : {b.lower, b.upper}) {
      const double q = x / y;
      corners[n++] = {q, QuotientError(x, y, q)};
    }
  }
  return FromCorners(corners, n);
}

absl::Status CheckDerivedBounds(const ValueInterval& v, const std::string& what) {
  if (!(std::isfinite(v.lower) && std::isfinite(v.upper)) ||
      std::max(std::fabs(v.lower), std::fabs(v.upper)) > kMaxBoundMagnitude) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the bounds derived for %s, %s, exceed the largest magnitude a value inside an expression "
        "may have (%g), so the scan could overflow; rewrite it so that every intermediate value "
        "stays within that (for example, scale a column down before multiplying)",
        what, v.ToString(), kMaxBoundMagnitude));
  }
  return absl::OkStatus();
}

}  // namespace dpq::query
