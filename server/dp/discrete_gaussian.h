// Exact discrete Gaussian sampler on the integers: P(Z = z) ∝ exp(-z^2 / (2 sigma^2)).
//
// Canonne, Kamath, Steinke 2020, Algorithm 3, with the Laplace proposal scale t = sigma (the
// paper uses t = floor(sigma) + 1; its correctness argument holds for any t > 0): draw
// Y ~ discrete Laplace(sigma) and accept with probability exp(-(|Y| - sigma)^2 / (2 sigma^2)).
// Then P(Y = y, accept) ∝ exp(-|y|/sigma - (|y| - sigma)^2/(2 sigma^2)) = e^(-1/2) exp(-y^2/(2 sigma^2)).
// Acceptance rate is about sqrt(pi/2) e^(-1/2) ≈ 0.76 for large sigma. sigma = p/q is an exact
// rational, so the exponent (q|Y| - p)^2 / (2 p^2) is evaluated in integers.
#ifndef DPQ_SERVER_DP_DISCRETE_GAUSSIAN_H_
#define DPQ_SERVER_DP_DISCRETE_GAUSSIAN_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "server/dp/exact_rational.h"
#include "server/dp/random_source.h"

namespace dpq::dp {

namespace internal {
// Proposals with |Y| >= 2^32 * sigma are rejected (their Gaussian mass is below exp(-2^63)).
int64_t SampleDiscreteGaussian(Rational sigma, RandomSource& rng);
}  // namespace internal

class DiscreteGaussianSampler {
 public:
  // INVALID_ARGUMENT (names "sigma") unless finite and > 0; OUT_OF_RANGE if sigma > 2^62.
  // A sigma that is not exactly num/den with parts <= 2^62 is rounded UP to a multiple of 2^-62.
  static absl::StatusOr<DiscreteGaussianSampler> Create(double sigma);

  int64_t Sample(RandomSource& rng) const { return internal::SampleDiscreteGaussian(sigma_, rng); }
  Rational sigma() const { return sigma_; }

 private:
  explicit DiscreteGaussianSampler(Rational sigma) : sigma_(sigma) {}
  Rational sigma_;
};

}  // namespace dpq::dp

#endif  // DPQ_SERVER_DP_DISCRETE_GAUSSIAN_H_
