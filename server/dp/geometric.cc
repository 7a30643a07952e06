#include "server/dp/geometric.h"

#include "server/base/status_macros.h"
#include "server/dp/bernoulli_exp.h"
#include "server/dp/uniform_int.h"

namespace dpq::dp {
namespace internal {

int64_t SampleGeometric(Rational scale, RandomSource& rng) {
  const uint64_t t = scale.num;
  const uint64_t s = scale.den;
  while (true) {
    // CKS 2020 Alg. 2, lines 3-4: U with P(U = u) ∝ exp(-u/t) on {0..t-1}.
    const uint64_t u = UniformBelow(t, rng);
    if (!BernoulliExpNeg(u, t, rng)) continue;
    // Lines 5-6: V geometric with ratio e^-1 (count successes of Bernoulli(exp(-1))).
    uint64_t v = 0;
    while (BernoulliExpNeg(1, 1, rng)) ++v;
    // Line 7: X = U + t*V has P(X = x) ∝ exp(-x/t); floor(X/s) has ratio exp(-s/t).
    const uint128 x = static_cast<uint128>(u) + static_cast<uint128>(t) * v;
    const uint128 y = x / s;
    if (y >= kMaxRationalPart) continue;  // truncation documented in the header
    return static_cast<int64_t>(y);
  }
}

}  // namespace internal

absl::StatusOr<GeometricSampler> GeometricSampler::Create(double scale) {
  ASSIGN_OR_RETURN(Rational r, RationalAtLeast(scale, "scale"));
  return GeometricSampler(r);
}

}  // namespace dpq::dp
