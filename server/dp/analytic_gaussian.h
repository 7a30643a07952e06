// Analytic Gaussian calibration (Balle & Wang 2018, "Improving the Gaussian Mechanism for
// Differential Privacy", Theorem 8 and Algorithm 1).
//
// The Gaussian mechanism with noise N(0, sigma^2) and L2 sensitivity Delta is (epsilon, delta)-DP
// iff delta >= Phi(Delta/(2 sigma) - epsilon sigma/Delta) - e^epsilon Phi(-Delta/(2 sigma) -
// epsilon sigma/Delta) (Thm 8). Both functions below bisect that condition and return the end of
// the bracket on the private side, inflated by a relative 1e-9 to absorb floating-point error in
// evaluating Phi: the sigma is never below the exact one and the epsilon never below the exact one.
// Agrees with dp_accounting's get_sigma_gaussian / get_epsilon_gaussian to about 1e-9 relative.
// These are public calibrations, not on the secret path, so floating point is fine here.
#ifndef DPQ_SERVER_DP_ANALYTIC_GAUSSIAN_H_
#define DPQ_SERVER_DP_ANALYTIC_GAUSSIAN_H_

#include "absl/status/statusor.h"

namespace dpq::dp {

// Smallest sigma making the Gaussian mechanism (epsilon, delta)-DP. INVALID_ARGUMENT naming
// "epsilon" (finite > 0), "delta" (in (0, 1)) or "l2_sensitivity" (finite > 0).
absl::StatusOr<double> AnalyticGaussianSigma(double epsilon, double delta, double l2_sensitivity);

// Smallest epsilon >= 0 for which noise sigma gives (epsilon, delta)-DP. INVALID_ARGUMENT naming
// "sigma", "delta" or "l2_sensitivity".
absl::StatusOr<double> AnalyticGaussianEpsilon(double sigma, double delta, double l2_sensitivity);

// delta(epsilon) of Balle & Wang 2018 Thm 8 for given sigma and Delta (exposed for tests).
double AnalyticGaussianDelta(double epsilon, double sigma, double l2_sensitivity);

}  // namespace dpq::dp

#endif  // DPQ_SERVER_DP_ANALYTIC_GAUSSIAN_H_
