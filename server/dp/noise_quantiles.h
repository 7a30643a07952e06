// Two-sided quantiles of the integer noise distributions, for confidence intervals. Public
// quantities (functions of the parameters only), so floating point is fine here.
#ifndef DPQ_SERVER_DP_NOISE_QUANTILES_H_
#define DPQ_SERVER_DP_NOISE_QUANTILES_H_

#include <cstdint>

#include "absl/status/statusor.h"

namespace dpq::dp {

// P(|Z| > m) for Z discrete Laplace with P(z) ∝ exp(-|z|/scale):
// 2 e^(-(m+1)/scale) / (1 + e^(-1/scale)) (sum of the two geometric tails).
double DiscreteLaplaceTail(int64_t m, double scale);

// Smallest integer m >= 0 with P(|Z| <= m) >= confidence. INVALID_ARGUMENT naming "confidence"
// unless 0 < confidence < 1, or "scale" unless finite > 0.
absl::StatusOr<int64_t> DiscreteLaplaceHalfWidth(double scale, double confidence);

// P(|Z| > m) for Z discrete Gaussian with parameter sigma: an exact sum for sigma <= 4096; above,
// the continuous tail 2 Q((m + 1/2) / sigma) (midpoint rule; its error is far below 1e-9 there).
double DiscreteGaussianTail(int64_t m, double sigma);

// Smallest integer m >= 0 with P(|Z| <= m) >= confidence; for sigma > 4096 one extra step is added
// so the approximation can only make the interval wider. Errors as for Laplace ("sigma").
absl::StatusOr<int64_t> DiscreteGaussianHalfWidth(double sigma, double confidence);

// Inverse of the standard normal CDF (bisection on erfc, absolute error < 1e-12 in x).
double NormalQuantile(double p);

}  // namespace dpq::dp

#endif  // DPQ_SERVER_DP_NOISE_QUANTILES_H_
