// Sensitivity of clipped aggregates under user-level neighbouring: two datasets are neighbours when
// they differ by all rows of one privacy unit, and each unit keeps at most `k` rows (DESIGN.md §3;
// Dwork & Roth 2014, Def. 3.1; Wilson et al., "Differentially private SQL with bounded user
// contribution", PoPETs 2020, §3). For a scalar statistic the L1 and L2 sensitivities coincide, so the
// same value calibrates Laplace (L1) and Gaussian (L2) noise.
#ifndef DPQ_SERVER_QUERY_SENSITIVITY_H_
#define DPQ_SERVER_QUERY_SENSITIVITY_H_

#include "absl/status/statusor.h"

namespace dpq::query {

// count: one unit changes the count by at most k. k >= 1.
absl::StatusOr<double> CountSensitivity(int k);

// sum of values clamped to [lower, upper]: one unit adds or removes at most k values of magnitude at
// most max(|lower|, |upper|). Requires finite lower < upper, k >= 1.
absl::StatusOr<double> SumSensitivity(int k, double lower, double upper);

// sum of (clamp(x, lower, upper) - midpoint): each centred value has magnitude at most
// (upper - lower) / 2, so the sensitivity is k (upper - lower) / 2 wherever the range sits: equal to
// the plain sum's for a symmetric range [-a, a], half of it for [0, U], and far smaller for ranges
// away from zero.
absl::StatusOr<double> CenteredSumSensitivity(int k, double lower, double upper);

// sum of (clamp(x, lower, upper) - midpoint)^2: each square lies in [0, ((upper - lower) / 2)^2],
// so one unit moves the sum by at most k ((upper - lower) / 2)^2.
absl::StatusOr<double> CenteredSumOfSquaresSensitivity(int k, double lower, double upper);

}  // namespace dpq::query

#endif  // DPQ_SERVER_QUERY_SENSITIVITY_H_
