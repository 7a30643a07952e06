#include "server/dp/discrete_laplace.h"

#include "server/base/status_macros.h"
#include "server/dp/geometric.h"
#include "server/dp/uniform_int.h"

namespace dpq::dp {
namespace internal {

int64_t SampleDiscreteLaplace(Rational scale, RandomSource& rng) {
  while (true) {
    // CKS 2020 Alg. 2: Y = |Z| is geometric with ratio exp(-1/scale), B a fair sign; rejecting
    // (B = 1, Y = 0) stops zero from being counted twice (once as +0, once as -0).
    const int64_t y = SampleGeometric(scale, rng);
    const bool negative = UniformBit(rng);
    if (negative && y == 0) continue;
    return negative ? -y : y;
  }
}

}  // namespace internal

absl::StatusOr<DiscreteLaplaceSampler> DiscreteLaplaceSampler::Create(double scale) {
  ASSIGN_OR_RETURN(Rational r, RationalAtLeast(scale, "scale"));
  return DiscreteLaplaceSampler(r);
}

}  // namespace dpq::dp
