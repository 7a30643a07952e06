// Grid helpers shared by the additive mechanisms (see additive_mechanism.h for the grid rule).
#ifndef DPQ_SERVER_DP_GRID_H_
#define DPQ_SERVER_DP_GRID_H_

#include <cstdint>

#include "absl/status/statusor.h"

namespace dpq::dp::internal {

// Largest power of two <= max(sensitivity * 2^-20, nominal_scale * 2^-40). Both inputs finite > 0.
// OUT_OF_RANGE if the result would not be a normal double.
absl::StatusOr<double> ChooseGranularity(double sensitivity, double nominal_scale);

// round(value / gamma) (ties away from zero). INVALID_ARGUMENT (names "value") for NaN/inf;
// OUT_OF_RANGE if |value / gamma| >= 2^62.
absl::StatusOr<int64_t> SnapToGrid(double value, double gamma);

// (k + z) * gamma, computed without integer overflow.
double FromGrid(int64_t k, int64_t z, double gamma);

// The smallest double q with q * b >= a exactly (a, b finite, b > 0): a / b rounded up.
double DivideRoundingUp(double a, double b);

// The smallest double >= a + b exactly (a, b finite >= 0).
double AddRoundingUp(double a, double b);

// The vector mechanisms' `changed_coordinates` (most coordinates one unit changes): in [1, 2^40].
// INVALID_ARGUMENT naming "changed_coordinates" otherwise.
absl::Status ValidateChangedCoordinates(int64_t changed_coordinates);

}  // namespace dpq::dp::internal

#endif  // DPQ_SERVER_DP_GRID_H_
