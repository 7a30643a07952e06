// Additive noise mechanisms for a real-valued statistic, or a vector of them with independent noise
// on each coordinate, released on a grid.
//
// Release (both mechanisms): gamma = granularity() is a power of two; the true value x is rounded to
// k = round(x / gamma), an exact integer sampler adds Z, and (k + Z) * gamma is returned. Rounding
// moves two neighbouring values by at most one extra grid step per changed coordinate, so in grid
// units the sensitivity of a scalar is (Delta + gamma) / gamma and the noise is calibrated for
// Delta + gamma (the approach of Google's "secure noise" and OpenDP); vectors: see
// `changed_coordinates` below. Integer noise avoids the floating-point attack of Mironov 2012.
//
// Grid choice: gamma = largest power of two <= max(Delta * 2^-20, nominal_scale * 2^-40), where
// nominal_scale is the noise scale for Delta (Laplace Delta/epsilon; Gaussian the continuous
// analytic sigma for Delta, Balle & Wang 2018, for scalars and vectors alike). The first term keeps
// the sensitivity inflation at most 2^-20 relative (sqrt(m) 2^-20 for a Gaussian vector with m
// changed coordinates, m 2^-20 for Laplace); the second keeps the integer scale below about 2^41 for
// tiny epsilon so every sampler product fits in 128 bits (then the inflation is at most
// 2^-40 * nominal_scale / Delta per changed coordinate).
#ifndef DPQ_SERVER_DP_ADDITIVE_MECHANISM_H_
#define DPQ_SERVER_DP_ADDITIVE_MECHANISM_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/dp/random_source.h"

namespace dpq::dp {

class AdditiveMechanism {
 public:
  virtual ~AdditiveMechanism() = default;
  // Returns true_value + noise on the mechanism's grid. INVALID_ARGUMENT for NaN/inf input,
  // OUT_OF_RANGE if |true_value| / granularity() >= 2^62.
  virtual absl::StatusOr<double> AddNoise(double true_value, RandomSource& rng) const = 0;
  // Laplace b or Gaussian sigma of the noise actually added, in units of the statistic (includes
  // the grid adjustment, so it is slightly above Delta/epsilon for Laplace).
  virtual double noise_scale() const = 0;
  virtual double epsilon() const = 0;
  virtual double delta() const = 0;        // 0 for Laplace
  virtual double sensitivity() const = 0;  // as passed in (L1 for Laplace, L2 for Gaussian)
  virtual double granularity() const = 0;  // grid step gamma (a power of two) of released values
  // The sensitivity, in units of the statistic, that the noise is actually calibrated for once
  // neighbours are rounded to the grid: Laplace (Delta/gamma + m) gamma (L1); Gaussian D gamma (L2)
  // with D = floor(Delta/gamma) + 1 integer steps for a scalar, and Dg gamma with
  // Dg = Delta/gamma + sqrt(m) (rounded up) for a vector with m > 1 changed coordinates.
  // Accountants use it: the (multivariate) discrete Gaussian with L2 sensitivity D in grid units and
  // scale s per coordinate is D^2/(2 s^2)-zCDP (Canonne, Kamath, Steinke 2020, Thm 4 and Thm 14),
  // i.e. the event gaussian:sigma=noise_scale(),sensitivity=privacy_sensitivity().
  virtual double privacy_sensitivity() const = 0;
  // Half-width h with P(|noise| <= h) >= confidence for the discrete noise actually added
  // (a multiple of granularity()). INVALID_ARGUMENT unless 0 < confidence < 1.
  virtual absl::StatusOr<double> ConfidenceHalfWidth(double confidence) const = 0;
  virtual absl::string_view name() const = 0;  // "laplace" / "gaussian"
};

// Pure epsilon-DP Laplace mechanism: scale b = Delta1 / epsilon (Dwork, McSherry, Nissim, Smith
// 2006), released through the exact discrete Laplace sampler (Canonne, Kamath, Steinke 2020, Alg. 2)
// with grid rounding accounted in the sensitivity. For a vector release (noise added to each
// coordinate independently), `changed_coordinates` is the most coordinates one unit can change:
// rounding adds up to one grid step to each, so the L1 shift in steps is Delta/gamma + m.
// INVALID_ARGUMENT naming "epsilon", "l1_sensitivity" or "changed_coordinates" (1..2^40) for NaN,
// inf or values <= 0; OUT_OF_RANGE if the integer scale would exceed 2^42.
absl::StatusOr<std::unique_ptr<AdditiveMechanism>> CreateLaplaceMechanism(
    double epsilon, double l1_sensitivity, int64_t changed_coordinates = 1);

// (epsilon, delta)-DP Gaussian mechanism released through the exact discrete Gaussian sampler
// (Canonne, Kamath, Steinke 2020, Alg. 3); noise_scale() is the certified sigma actually sampled,
// the same on every coordinate, and ConfidenceHalfWidth is per coordinate. delta must be in (0, 1).
//  - changed_coordinates = 1 (a scalar, or a vector one unit changes in one coordinate): in grid
//    units the sensitivity is the integer D = floor(Delta/gamma) + 1; sigma starts at the continuous
//    analytic calibration for D (Balle & Wang 2018, Alg. 1) and is certified, and raised if needed,
//    so that the discrete mechanism's exact delta (CKS 2020, Thm 7; DiscreteGaussianDelta in
//    discrete_gaussian_privacy.h) is <= delta.
//  - changed_coordinates = m > 1: the caller adds independent noise to every coordinate of a
//    vector with L2 sensitivity `l2_sensitivity` of which one unit changes at most m coordinates.
//    Rounding adds at most one step to each changed coordinate, so the grid L2 sensitivity is at most
//    Dg = Delta/gamma + sqrt(m) (Minkowski), rounded up. The vector discrete Gaussian is
//    Dg^2/(2 s^2)-zCDP (CKS 2020, Thm 14), and s is the smallest value (to 2^-40 relative) for which
//    the zCDP -> DP conversion of CKS 2020 Cor. 13 (ZcdpEpsilonCks in zcdp_conversion.h) gives
//    epsilon' <= epsilon at delta. This is looser than the exact 1-D certificate (sigma 3-18%
//    larger for epsilon 0.1..10, delta 1e-12..1e-3), and sigma depends on m only through the
//    sqrt(m) rounding term. privacy_sensitivity() = Dg gamma. Creation takes ~0.3 ms.
// INVALID_ARGUMENT naming "epsilon", "delta", "l2_sensitivity" or "changed_coordinates" (1..2^40);
// OUT_OF_RANGE if epsilon is so small that the integer sigma would exceed 2^42.
absl::StatusOr<std::unique_ptr<AdditiveMechanism>> CreateGaussianMechanism(
    double epsilon, double delta, double l2_sensitivity, int64_t changed_coordinates = 1);

}  // namespace dpq::dp

#endif  // DPQ_SERVER_DP_ADDITIVE_MECHANISM_H_
