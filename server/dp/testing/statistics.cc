#include "server/dp/testing/statistics.h"

#include <cmath>

namespace dpq::dp::testing {
namespace {

double BetaContinuedFraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  const double qab = a + b, qap = a + 1, qam = a - 1;
  double c = 1, d = 1 - qab * x / qap;
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m < 100000; ++m) {
    const int m2 = 2 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < 1e-15) break;
  }
  return h;
}

double BetaQuantile(double p, double a, double b) {
  double lo = 0, hi = 1;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    if (RegularizedIncompleteBeta(a, b, mid) < p) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return (lo + hi) / 2;
}

}  // namespace

double RegularizedIncompleteBeta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double log_front =
      std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  const double front = std::exp(log_front);
  if (x < (a + 1) / (a + b + 2)) return front * BetaContinuedFraction(a, b, x) / a;
  return 1 - front * BetaContinuedFraction(b, a, 1 - x) / b;
}

double ClopperPearsonLower(int64_t k, int64_t n, double alpha) {
  if (k == 0) return 0;
  return BetaQuantile(alpha, static_cast<double>(k), static_cast<double>(n - k + 1));
}

double ClopperPearsonUpper(int64_t k, int64_t n, double alpha) {
  if (k == n) return 1;
  return BetaQuantile(1 - alpha, static_cast<double>(k + 1), static_cast<double>(n - k));
}

double ChiSquare(const std::vector<int64_t>& observed, const std::vector<double>& probabilities) {
  int64_t n = 0;
  for (int64_t o : observed) n += o;
  double chi = 0;
  for (size_t i = 0; i < observed.size(); ++i) {
    const double expected = probabilities[i] * static_cast<double>(n);
    const double diff = static_cast<double>(observed[i]) - expected;
    chi += diff * diff / expected;
  }
  return chi;
}

double ChiSquareCritical(int df) {
  const double k = df;
  const double z = 4.75;
  const double t = 1 - 2 / (9 * k) + z * std::sqrt(2 / (9 * k));
  return k * t * t * t;
}

}  // namespace dpq::dp::testing
