#include "server/dp/analytic_gaussian.h"

#include <cmath>

#include "server/base/status_macros.h"
#include "server/base/validation.h"
#include "server/dp/numeric_search.h"

namespace dpq::dp {
namespace {

constexpr double kSafetyFactor = 1.0 + 1e-9;
constexpr int kMaxIterations = 400;

// Standard normal CDF via erfc, accurate in both tails.
double NormalCdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

}  // namespace

double AnalyticGaussianDelta(double epsilon, double sigma, double l2_sensitivity) {
  // Balle & Wang 2018, Thm 8.
  const double a = l2_sensitivity / (2 * sigma);
  const double b = epsilon * sigma / l2_sensitivity;
  const double first = NormalCdf(a - b);
  // e^eps * Phi(-a - b) in log space so that a large epsilon cannot overflow; if Phi underflows
  // to 0 the term is dropped, which overstates delta (the private direction).
  const double tail = NormalCdf(-a - b);
  const double second = tail > 0 ? std::exp(epsilon + std::log(tail)) : 0.0;
  return first - second;
}

absl::StatusOr<double> AnalyticGaussianSigma(double epsilon, double delta, double l2_sensitivity) {
  RETURN_IF_ERROR(ValidateIsPositive(epsilon, "epsilon"));
  RETURN_IF_ERROR(ValidateInOpenRange(delta, 0.0, 1.0, "delta"));
  RETURN_IF_ERROR(ValidateIsPositive(l2_sensitivity, "l2_sensitivity"));
  // Work with Delta = 1 and rescale: sigma is linear in Delta.
  auto is_private = [&](double sigma) {
    return AnalyticGaussianDelta(epsilon, sigma, 1.0) <= delta;
  };
  double hi = 1.0;
  while (!is_private(hi)) hi *= 2;
  double lo = hi / 2;
  while (lo > 1e-300 && is_private(lo)) lo /= 2;
  if (is_private(lo)) return lo * l2_sensitivity;  // degenerate: any sigma works
  return BisectToPassingEnd(lo, hi, is_private, 1e-15, kMaxIterations) * kSafetyFactor *
         l2_sensitivity;
}

absl::StatusOr<double> AnalyticGaussianEpsilon(double sigma, double delta, double l2_sensitivity) {
  RETURN_IF_ERROR(ValidateIsPositive(sigma, "sigma"));
  RETURN_IF_ERROR(ValidateInOpenRange(delta, 0.0, 1.0, "delta"));
  RETURN_IF_ERROR(ValidateIsPositive(l2_sensitivity, "l2_sensitivity"));
  const double s = sigma / l2_sensitivity;
  auto is_private = [&](double epsilon) { return AnalyticGaussianDelta(epsilon, s, 1.0) <= delta; };
  if (is_private(0.0)) return 0.0;
  double hi = 1.0;
  while (!is_private(hi)) {
    hi *= 2;
    if (hi > 1e6)
      return absl::OutOfRangeError("sigma is too small for any epsilon <= 1e6 at this delta");
  }
  return BisectToPassingEnd(0.0, hi, is_private, 1e-15, kMaxIterations) * kSafetyFactor;
}

}  // namespace dpq::dp
