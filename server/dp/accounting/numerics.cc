#include "server/dp/accounting/numerics.h"

#include <cmath>
#include <limits>

namespace dpq::dp::accounting::internal {

double LogAdd(double a, double b) {
  if (a == -std::numeric_limits<double>::infinity()) return b;
  if (b == -std::numeric_limits<double>::infinity()) return a;
  const double hi = a > b ? a : b;
  const double lo = a > b ? b : a;
  return hi + std::log1p(std::exp(lo - hi));
}

double LogSub(double a, double b) {
  if (b == -std::numeric_limits<double>::infinity()) return a;
  if (a <= b) return -std::numeric_limits<double>::infinity();
  return a + std::log(-std::expm1(b - a));
}

double NormalCdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }
double NormalSf(double x) { return 0.5 * std::erfc(x / std::sqrt(2.0)); }

double LogNormalCdf(double x) {
  if (x > -30) return std::log(NormalCdf(x));
  // Asymptotic expansion (Abramowitz & Stegun 26.2.12): Phi(x) = phi(x)/|x| * (1 - 1/x^2 + 3/x^4
  // - 15/x^6 + 105/x^8 ...); at |x| >= 30 five terms are accurate to ~1e-16 relative.
  const double x2 = x * x;
  const double inv = 1.0 / x2;
  const double series = 1 - inv * (1 - 3 * inv * (1 - 5 * inv * (1 - 7 * inv * (1 - 9 * inv))));
  return -0.5 * x2 - std::log(-x) - 0.5 * std::log(2 * M_PI) + std::log(series);
}

}  // namespace dpq::dp::accounting::internal
