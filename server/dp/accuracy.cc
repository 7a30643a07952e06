#include "server/dp/accuracy.h"

#include <cmath>
#include <functional>

#include "server/base/status_macros.h"
#include "server/base/validation.h"
#include "server/dp/additive_mechanism.h"

namespace dpq::dp {
namespace {

constexpr double kMinEpsilon = 1e-6;
constexpr double kMaxEpsilon = 1e3;

// Half-widths decrease with epsilon (the scale does; the grid depends only on the sensitivity and
// the nominal scale), so bisect in log space and return the accurate end.
absl::StatusOr<double> InvertHalfWidth(
    double half_width, const std::function<absl::StatusOr<double>(double)>& width_at) {
  RETURN_IF_ERROR(ValidateIsPositive(half_width, "half_width"));
  ASSIGN_OR_RETURN(const double at_max, width_at(kMaxEpsilon));
  if (at_max > half_width) {
    return absl::OutOfRangeError("half_width is unreachable with epsilon <= 1000");
  }
  ASSIGN_OR_RETURN(const double at_min, width_at(kMinEpsilon));
  if (at_min <= half_width) return kMinEpsilon;
  double lo = std::log(kMinEpsilon), hi = std::log(kMaxEpsilon);
  while (hi - lo > 1e-10) {
    const double mid = (lo + hi) / 2;
    ASSIGN_OR_RETURN(const double width, width_at(std::exp(mid)));
    if (width <= half_width) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return std::exp(hi);
}

}  // namespace

absl::StatusOr<double> LaplaceHalfWidth(double epsilon, double l1_sensitivity, double confidence) {
  ASSIGN_OR_RETURN(auto mechanism, CreateLaplaceMechanism(epsilon, l1_sensitivity));
  return mechanism->ConfidenceHalfWidth(confidence);
}

absl::StatusOr<double> GaussianHalfWidth(double epsilon, double delta, double l2_sensitivity,
                                         double confidence) {
  ASSIGN_OR_RETURN(auto mechanism, CreateGaussianMechanism(epsilon, delta, l2_sensitivity));
  return mechanism->ConfidenceHalfWidth(confidence);
}

absl::StatusOr<double> LaplaceEpsilonForHalfWidth(double half_width, double l1_sensitivity,
                                                  double confidence) {
  RETURN_IF_ERROR(ValidateIsPositive(l1_sensitivity, "l1_sensitivity"));
  RETURN_IF_ERROR(ValidateInOpenRange(confidence, 0.0, 1.0, "confidence"));
  return InvertHalfWidth(
      half_width, [&](double eps) { return LaplaceHalfWidth(eps, l1_sensitivity, confidence); });
}

absl::StatusOr<double> GaussianEpsilonForHalfWidth(double half_width, double delta,
                                                   double l2_sensitivity, double confidence) {
  RETURN_IF_ERROR(ValidateInOpenRange(delta, 0.0, 1.0, "delta"));
  RETURN_IF_ERROR(ValidateIsPositive(l2_sensitivity, "l2_sensitivity"));
  RETURN_IF_ERROR(ValidateInOpenRange(confidence, 0.0, 1.0, "confidence"));
  return InvertHalfWidth(half_width, [&](double eps) {
    return GaussianHalfWidth(eps, delta, l2_sensitivity, confidence);
  });
}

}  // namespace dpq::dp
