// Exact discrete Laplace sampler on the integers: P(Z = z) ∝ exp(-|z| / scale).
//
// Canonne, Kamath, Steinke 2020, Algorithm 2. Integer arithmetic only; the scale is an exact
// rational (see exact_rational.h). Adding Z to an integer statistic with L1 sensitivity Δ (an
// integer) is (Δ/scale)-DP (CKS 2020, Sec. 2; the same ratio bound as the continuous Laplace of
// Dwork et al. 2006).
#ifndef DPQ_SERVER_DP_DISCRETE_LAPLACE_H_
#define DPQ_SERVER_DP_DISCRETE_LAPLACE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "server/dp/exact_rational.h"
#include "server/dp/random_source.h"

namespace dpq::dp {

namespace internal {
// Conditioned on |Z| < 2^62 (see geometric.h for the negligible truncated mass).
int64_t SampleDiscreteLaplace(Rational scale, RandomSource& rng);
}  // namespace internal

class DiscreteLaplaceSampler {
 public:
  // INVALID_ARGUMENT (names "scale") unless finite and > 0; OUT_OF_RANGE if scale > 2^62.
  // A scale that is not exactly num/den with parts <= 2^62 is rounded UP to a multiple of 2^-62.
  static absl::StatusOr<DiscreteLaplaceSampler> Create(double scale);

  int64_t Sample(RandomSource& rng) const { return internal::SampleDiscreteLaplace(scale_, rng); }
  Rational scale() const { return scale_; }

 private:
  explicit DiscreteLaplaceSampler(Rational scale) : scale_(scale) {}
  Rational scale_;
};

}  // namespace dpq::dp

#endif  // DPQ_SERVER_DP_DISCRETE_LAPLACE_H_
