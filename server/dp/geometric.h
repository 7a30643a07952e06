// Exact geometric sampler on {0, 1, 2, ...}: P(G = g) = (1 - e^(-1/scale)) * e^(-g/scale).
//
// Construction of Canonne, Kamath, Steinke 2020, Algorithm 2, lines 3-7 (the unsigned part of the
// discrete Laplace sampler): with scale = t/s, draw U uniform on {0..t-1} accepted with
// probability exp(-U/t), V ~ Geometric with ratio e^-1, X = U + t*V (so P(X = x) ∝ e^(-x/t)), and
// return floor(X/s). Expected O(1) random words for every scale, integer arithmetic only.
#ifndef DPQ_SERVER_DP_GEOMETRIC_H_
#define DPQ_SERVER_DP_GEOMETRIC_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "server/dp/exact_rational.h"
#include "server/dp/random_source.h"

namespace dpq::dp {

namespace internal {
// scale = scale.num / scale.den, both in [1, 2^62]. Draws >= 2^62 are rejected and redrawn, so
// the result is the geometric law conditioned on G < 2^62. The removed mass is exp(-2^62/scale):
// below exp(-2^20) for every scale <= 2^42, which bounds all scales the mechanisms use.
int64_t SampleGeometric(Rational scale, RandomSource& rng);
}  // namespace internal

class GeometricSampler {
 public:
  // INVALID_ARGUMENT (names "scale") unless scale is finite and > 0; OUT_OF_RANGE if > 2^62.
  // Scales that are not exactly num/den with parts <= 2^62 are rounded up to the next multiple
  // of 2^-62.
  static absl::StatusOr<GeometricSampler> Create(double scale);

  int64_t Sample(RandomSource& rng) const { return internal::SampleGeometric(scale_, rng); }
  Rational scale() const { return scale_; }

 private:
  explicit GeometricSampler(Rational scale) : scale_(scale) {}
  Rational scale_;
};

}  // namespace dpq::dp

#endif  // DPQ_SERVER_DP_GEOMETRIC_H_
