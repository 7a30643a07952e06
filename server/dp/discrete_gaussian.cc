#include "server/dp/discrete_gaussian.h"

#include "server/base/status_macros.h"
#include "server/dp/bernoulli_exp.h"
#include "server/dp/discrete_laplace.h"
#include "server/dp/uniform_int.h"

namespace dpq::dp {
namespace internal {

int64_t SampleDiscreteGaussian(Rational sigma, RandomSource& rng) {
  const uint64_t p = sigma.num;
  const uint64_t q = sigma.den;
  while (true) {
    const int64_t y = SampleDiscreteLaplace(sigma, rng);
    const uint128 abs_y = static_cast<uint128>(y < 0 ? -y : y);
    // (|y| - sigma) / sigma = d / p with d = q|y| - p; |d| < 2^62 * 2^62 fits easily.
    const int128 d = static_cast<int128>(q * abs_y) - static_cast<int128>(p);
    const uint128 abs_d = static_cast<uint128>(d < 0 ? -d : d);
    // Split |d|/p = a + r/p so that (d/p)^2 / 2 = a^2/2 + a*r/p + r^2/(2 p^2); each term stays
    // below 2^127 and exp(-sum) is the AND of three independent exact coins.
    const uint128 a = abs_d / p;
    const uint128 r = abs_d % p;
    if (a >= (static_cast<uint128>(1) << 32)) continue;  // truncation, see header
    if (!BernoulliExpNeg(a * a, 2, rng)) continue;
    if (!BernoulliExpNeg(a * r, p, rng)) continue;
    if (!BernoulliExpNeg(r * r, 2 * static_cast<uint128>(p) * p, rng)) continue;
    return y;
  }
}

}  // namespace internal

absl::StatusOr<DiscreteGaussianSampler> DiscreteGaussianSampler::Create(double sigma) {
  ASSIGN_OR_RETURN(Rational r, RationalAtLeast(sigma, "sigma"));
  return DiscreteGaussianSampler(r);
}

}  // namespace dpq::dp
