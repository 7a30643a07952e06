#include "server/query/sensitivity.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"

namespace dpq::query {
namespace {

absl::Status ValidateContributions(int k) {
  if (k < 1) {
    return absl::InvalidArgumentError(absl::StrCat("max_contributions must be >= 1, got ", k));
  }
  return absl::OkStatus();
}

absl::Status ValidateBounds(double lower, double upper) {
  RETURN_IF_ERROR(ValidateIsFinite(lower, "lower"));
  RETURN_IF_ERROR(ValidateIsFinite(upper, "upper"));
  if (!(lower < upper)) {
    return absl::InvalidArgumentError(
        absl::StrCat("lower must be < upper, got lower=", lower, " upper=", upper));
  }
  return absl::OkStatus();
}

// The product must stay finite or calibration would silently produce infinite noise.
absl::StatusOr<double> FiniteProduct(int k, double per_row) {
  double s = static_cast<double>(k) * per_row;
  if (!std::isfinite(s))
    return absl::InvalidArgumentError("bounds are too wide: sensitivity overflows");
  return s;
}

}  // namespace

absl::StatusOr<double> CountSensitivity(int k) {
  RETURN_IF_ERROR(ValidateContributions(k));
  return static_cast<double>(k);
}

absl::StatusOr<double> SumSensitivity(int k, double lower, double upper) {
  RETURN_IF_ERROR(ValidateContributions(k));
  RETURN_IF_ERROR(ValidateBounds(lower, upper));
  return FiniteProduct(k, std::max(std::fabs(lower), std::fabs(upper)));
}

absl::StatusOr<double> CenteredSumSensitivity(int k, double lower, double upper) {
  RETURN_IF_ERROR(ValidateContributions(k));
  RETURN_IF_ERROR(ValidateBounds(lower, upper));
  // (upper - lower) can overflow for bounds near +-DBL_MAX; halve first.
  return FiniteProduct(k, upper / 2 - lower / 2);
}

absl::StatusOr<double> CenteredSumOfSquaresSensitivity(int k, double lower, double upper) {
  RETURN_IF_ERROR(ValidateContributions(k));
  RETURN_IF_ERROR(ValidateBounds(lower, upper));
  const double half = upper / 2 - lower / 2;
  return FiniteProduct(k, half * half);
}

}  // namespace dpq::query
