// Accuracy of the additive mechanisms: confidence-interval half-width from the parameters, and the
// inverse (the smallest epsilon whose half-width is at most a target), for the query planner.
// The half-widths are those of the discrete noise actually added (AdditiveMechanism::
// ConfidenceHalfWidth), so the inverse accounts for the grid too.
#ifndef DPQ_SERVER_DP_ACCURACY_H_
#define DPQ_SERVER_DP_ACCURACY_H_

#include "absl/status/statusor.h"

namespace dpq::dp {

// Errors as CreateLaplaceMechanism / CreateGaussianMechanism, plus "confidence" in (0, 1).
absl::StatusOr<double> LaplaceHalfWidth(double epsilon, double l1_sensitivity, double confidence);
absl::StatusOr<double> GaussianHalfWidth(double epsilon, double delta, double l2_sensitivity,
                                         double confidence);

// Smallest epsilon (to relative 1e-9, rounded up) in [1e-6, 1e3] whose half-width at `confidence`
// is <= half_width. INVALID_ARGUMENT naming "half_width" (finite > 0) etc.; OUT_OF_RANGE if even
// epsilon = 1e3 is not accurate enough. If epsilon = 1e-6 already suffices, returns 1e-6.
absl::StatusOr<double> LaplaceEpsilonForHalfWidth(double half_width, double l1_sensitivity,
                                                  double confidence);
absl::StatusOr<double> GaussianEpsilonForHalfWidth(double half_width, double delta,
                                                   double l2_sensitivity, double confidence);

}  // namespace dpq::dp

#endif  // DPQ_SERVER_DP_ACCURACY_H_
