#include "server/dp/zcdp_conversion.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"
#include "server/dp/grid.h"
#include "server/dp/numeric_search.h"

// Rounding. Both objectives are written in v = a - 1 > 0, a double taken as exact, with the real
// order a = 1 + v (never rounded), so nothing cancels catastrophically: log((a-1)/a) is
// log v - log1p v for v < 1 (two negative terms) and -log1p(1/v) for v >= 1, each
// within 3 u of its magnitude, whereas log1p(-1/a) would inherit an absolute error of u / (a - 1)
// from rounding 1/a. Every other part is one or two correctly rounded operations or a glibc log /
// log1p / exp call (<= 1 ulp on x86-64), and the parts are summed by at most 5 roundings, so the
// computed value is within 8 u S of the exact one, S the sum of the parts' magnitudes
// (u = 2^-53). The allowance added is 2^-48 S = 32 u S, which also covers the rounding of that
// final addition.
namespace dpq::dp {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kAllowance = 0x1p-48;
// Orders scanned: a - 1 = e^t for t in [log 1e-9, log 1e12], step 0.25 in t, then golden section
// around the best scanned point. An optimal order outside that range is missed, which only
// loosens the bound (every order gives a valid one).
constexpr double kMinOrderOffset = 1e-9;
constexpr double kMaxOrderOffset = 1e12;
constexpr double kScanStep = 0.25;

// Minimum over v = a - 1 of `bound(v)`, each an upper bound on the objective at a = 1 + v: a
// log-spaced scan locates the basin (the objectives are convex in a, hence unimodal in t = log v),
// then golden-section search refines it. Returns the smallest value evaluated, not an
// interpolation, so it is itself one of the bounds.
double MinimizeOverOrders(absl::FunctionRef<double(double)> bound) {
  auto at = [&](double t) { return bound(std::exp(t)); };
  return ScanThenGoldenSectionMinimize(at, std::log(kMinOrderOffset), std::log(kMaxOrderOffset),
                                       kScanStep)
      .value;
}

// log((a - 1) / a) = log(v / (1 + v)) < 0, to within 3 u of its magnitude (see above).
double LogOrderRatio(double v) { return v < 1 ? std::log(v) - std::log1p(v) : -std::log1p(1 / v); }

}  // namespace

double ZcdpEpsilonSimple(double rho, double delta) {
  // At most 4 roundings of positive quantities plus one log: the relative error is below 6 u,
  // and multiplying by 1 + 2^-50 = 1 + 8 u (rounded, >= 1 + 7 u) lifts the result above the exact
  // value.
  return (rho + 2 * std::sqrt(rho * -std::log(delta))) * (1 + 0x1p-50);
}

double ZcdpEpsilonCks(double rho, double delta) {
  if (!(rho > 0)) return rho == 0 ? 0.0 : std::numeric_limits<double>::quiet_NaN();
  if (std::isinf(rho)) return kInf;
  const double log_delta = std::log(delta);
  // CKS 2020 Prop. 12 with D_a <= a rho: eps(a) = a rho + log((a-1)/a) - (log delta + log a)/(a-1).
  auto bound = [&](double v) {
    const double log1p_v = std::log1p(v);
    const double linear = rho + v * rho;
    const double log_ratio = LogOrderRatio(v);
    const double tail = -(log_delta + log1p_v) / v;
    const double magnitude = linear - log_ratio + (std::fabs(log_delta) + log1p_v) / v;
    return linear + log_ratio + tail + kAllowance * magnitude;
  };
  const double eps = MinimizeOverOrders(bound);
  return std::max(0.0, std::min(eps, ZcdpEpsilonSimple(rho, delta)));
}

double ZcdpDelta(double rho, double epsilon) {
  if (!(rho > 0)) return rho == 0 ? 0.0 : std::numeric_limits<double>::quiet_NaN();
  // CKS 2020 Cor. 13: log delta(a) = (a-1)(a rho - eps) + (a-1) log(1 - 1/a) - log a
  //                                = v ((1+v) rho - eps + log(v/(1+v))) - log1p v.
  auto log_bound = [&](double v) {
    const double log1p_v = std::log1p(v);
    const double log_ratio = LogOrderRatio(v);
    const double inner = rho + v * rho - epsilon + log_ratio;
    const double magnitude = v * (rho + v * rho + std::fabs(epsilon) - log_ratio) + log1p_v;
    return v * inner - log1p_v + kAllowance * magnitude;
  };
  // exp is within 1 ulp: the factor 1 + 2^-50 (rounded, >= 1 + 7 u) covers it.
  return std::min(1.0, std::exp(MinimizeOverOrders(log_bound)) * (1 + 0x1p-50));
}

double GaussianRhoRoundedUp(double l2_sensitivity, double sigma) {
  const double q = internal::DivideRoundingUp(l2_sensitivity, sigma);
  double square = q * q;
  // fma gives the sign of the exact q^2 - square.
  if (std::fma(q, q, -square) > 0) square = std::nextafter(square, kInf);
  double rho = square / 2;
  if (rho * 2 < square) rho = std::nextafter(rho, kInf);  // only if square / 2 is subnormal
  return rho;
}

absl::StatusOr<double> ZcdpGaussianSigma(double epsilon, double delta, double l2_sensitivity) {
  RETURN_IF_ERROR(ValidateIsPositive(epsilon, "epsilon"));
  RETURN_IF_ERROR(ValidateInOpenRange(delta, 0.0, 1.0, "delta"));
  RETURN_IF_ERROR(ValidateIsPositive(l2_sensitivity, "l2_sensitivity"));
  auto is_private = [&](double sigma) {
    return ZcdpEpsilonCks(GaussianRhoRoundedUp(l2_sensitivity, sigma), delta) <= epsilon;
  };
  auto too_large = [&] {
    return absl::OutOfRangeError(absl::StrCat("the zCDP Gaussian sigma for epsilon ", epsilon,
                                              " and delta ", delta, " is not a finite double"));
  };
  // Bracket from the simple conversion (Bun & Steinke 2016, Prop. 1.3), which the CKS bound never
  // exceeds: rho + 2 sqrt(rho L) = eps at sqrt(rho) = eps / (sqrt(L + eps) + sqrt(L)),
  // L = ln(1/delta), so sigma = Delta / sqrt(2 rho). The invariant "lo fails, hi passes" is
  // established by checking both ends, so nothing below assumes monotonicity in sigma.
  const double log_inv_delta = -std::log(delta);
  const double root_rho = epsilon / (std::sqrt(log_inv_delta + epsilon) + std::sqrt(log_inv_delta));
  double hi = l2_sensitivity / (std::sqrt(2.0) * root_rho);
  if (!std::isfinite(hi)) return too_large();
  while (!is_private(hi)) {
    hi *= 2;
    if (!std::isfinite(hi)) return too_large();
  }
  double lo = hi / 2;
  while (is_private(lo)) {
    hi = lo;
    lo /= 2;
    if (!(lo > 0)) return hi;  // every positive sigma passes down to the smallest double
  }
  return BisectToPassingEnd(lo, hi, is_private, 0x1p-40);
}

}  // namespace dpq::dp
