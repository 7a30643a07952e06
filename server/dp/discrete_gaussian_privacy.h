// Exact (epsilon, delta) privacy profile of the discrete Gaussian mechanism, as a rigorous upper
// bound. Used to certify the calibration of the Gaussian mechanism (gaussian_mechanism.cc); public
// quantities only, so floating point is fine here (all rounding is directed to overstate delta).
//
// Statement (Canonne, Kamath, Steinke 2020, "The Discrete Gaussian for Differential Privacy",
// NeurIPS 2020 / arXiv:2004.00010, Theorem 7): let q map datasets to Z with |q(x) - q(x')| <= D for
// neighbours, and M(x) = q(x) + Y with Y ~ N_Z(0, s^2), P(Y = y) = exp(-y^2/(2 s^2)) / N,
// N = sum_{z in Z} exp(-z^2/(2 s^2)). Then M is (epsilon, delta)-DP for
//     delta = P[Y > epsilon s^2/D - D/2] - e^epsilon P[Y > epsilon s^2/D + D/2],
// and no smaller delta works when the shift D is attained. The inequalities are strict as printed;
// with non-strict ones the value is the same, because the only extra point y = T (when
// T = epsilon s^2/D - D/2 is an integer) contributes P(Y = T) - e^eps P(Y = T + D) = 0 (its
// privacy loss is exactly epsilon).
//
// Derivation (re-done in discrete_gaussian_privacy.cc, so nothing here rests on the citation alone):
// delta is the hockey-stick divergence sum_y max(0, p(y) - e^eps p(y + d)) for the worst integer
// shift 0 < d <= D; the likelihood ratio p(y)/p(y+d) is decreasing in y, so the maximising set is
// {y > T_d} and the value is non-decreasing in d, hence d = D is the worst case.
#ifndef DPQ_SERVER_DP_DISCRETE_GAUSSIAN_PRIVACY_H_
#define DPQ_SERVER_DP_DISCRETE_GAUSSIAN_PRIVACY_H_

#include <cstdint>

#include "absl/status/statusor.h"

namespace dpq::dp {

// Upper bound (never below the exact value of CKS 2020 Thm 7, and within about 1e-9 relative of it
// for the parameters the mechanisms use) on the smallest delta for which adding N_Z(0, s^2) noise to
// an integer query of sensitivity D is (epsilon, delta)-DP. The result is in (0, 1]: a double that
// is >= the exact value (so a true delta below the smallest subnormal is reported as that subnormal).
//   s: the discrete Gaussian's parameter (sigma in grid units), finite, 0 < s <= 2^50;
//   D: integer sensitivity in grid units, 1 <= D <= 2^50;
//   epsilon: finite, >= 0 (epsilon = 0 gives the total-variation distance).
// INVALID_ARGUMENT naming "sigma", "sensitivity" or "epsilon" (OUT_OF_RANGE for s or D above 2^50).
// Method: where the estimated Euler-Maclaurin slack exceeds 1e-7 relative and s <= 2^16 (at most
// ~4M terms), an explicit long-double sum of the PMF tail with a geometric tail bound; otherwise
// the Euler-Maclaurin formula with its remainder bound and the Poisson-summation bound
// N >= sqrt(2 pi) s (details in the .cc). Not monotone in s for s below ~2 (see the test).
// Cost: a few microseconds (Euler-Maclaurin), at most ~0.1 s for the largest direct sums.
absl::StatusOr<double> DiscreteGaussianDelta(double s, int64_t D, double epsilon);

// Smallest s (to 2^-40 relative) found by searching upward from the continuous analytic
// calibration AnalyticGaussianSigma(epsilon, delta, D) (Balle & Wang 2018) such that
// DiscreteGaussianDelta(s, D, epsilon) <= delta; the returned s is always checked directly.
// INVALID_ARGUMENT naming "epsilon" (finite > 0), "delta" (in (0, 1)) or "sensitivity" (D in
// [1, 2^50]); OUT_OF_RANGE if s would exceed 2^50.
absl::StatusOr<double> DiscreteGaussianSigma(double epsilon, double delta, int64_t D);

namespace internal {
// The two methods, exposed for tests. Preconditions as above (not re-checked). Both return
// rigorous upper bounds for any valid input; the direct sum gives up after `max_terms` terms and
// then adds a (valid but loose) tail bound.
double DiscreteGaussianDeltaDirect(double s, int64_t D, double epsilon, int64_t max_terms);
double DiscreteGaussianDeltaEulerMaclaurin(double s, int64_t D, double epsilon);
}  // namespace internal

}  // namespace dpq::dp

#endif  // DPQ_SERVER_DP_DISCRETE_GAUSSIAN_PRIVACY_H_
