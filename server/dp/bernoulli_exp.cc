#include "server/dp/bernoulli_exp.h"

#include <cstdint>

namespace dpq::dp {
namespace {

// CKS 2020 Alg. 1, case x = num/den in [0, 1]. P(K > k) = x^k / k!, so
// P(K odd) = sum_j (x^(2j)/(2j)! - x^(2j+1)/(2j+1)!) = exp(-x).
bool BernoulliExpNegAtMostOne(uint128 num, uint128 den, RandomSource& rng) {
  uint64_t k = 1;
  while (true) {
    // Bernoulli(x/k) as the AND of independent Bernoulli(1/k) and Bernoulli(num/den): the
    // product of the probabilities is x/k, and no product den*k can overflow.
    const bool a = UniformBelow(k, rng) == 0 && BernoulliRational(num, den, rng);
    if (!a) break;
    ++k;
  }
  return (k & 1) == 1;
}

}  // namespace

bool BernoulliExpNeg(uint128 num, uint128 den, RandomSource& rng) {
  if (num <= den) return BernoulliExpNegAtMostOne(num, den, rng);
  // CKS 2020 Alg. 1, case x > 1: exp(-x) = exp(-1)^floor(x) * exp(-frac(x)).
  const uint128 whole = num / den;
  const uint128 remainder = num % den;
  for (uint128 i = 0; i < whole; ++i) {
    if (!BernoulliExpNegAtMostOne(1, 1, rng)) return false;
  }
  return BernoulliExpNegAtMostOne(remainder, den, rng);
}

}  // namespace dpq::dp
