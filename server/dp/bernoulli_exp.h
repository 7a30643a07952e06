// Exact Bernoulli(exp(-x)) for rational x = num/den >= 0.
//
// Canonne, Kamath, Steinke 2020, "The Discrete Gaussian for Differential Privacy", Algorithm 1:
// for x in [0, 1] draw A_k ~ Bernoulli(x/k) for k = 1, 2, ... until the first A_k = 0 at k = K and
// return [K odd]; for x > 1 return the AND of floor(x) draws of Bernoulli(exp(-1)) and one draw of
// Bernoulli(exp(-(x - floor(x)))). Only integer arithmetic; expected O(1) random words for any x
// (the x > 1 loop stops at the first failure, which has probability 1 - 1/e per round).
#ifndef DPQ_SERVER_DP_BERNOULLI_EXP_H_
#define DPQ_SERVER_DP_BERNOULLI_EXP_H_

#include "server/dp/random_source.h"
#include "server/dp/uniform_int.h"

namespace dpq::dp {

// Bernoulli(exp(-num/den)); requires den >= 1. Any num (including 0, which returns true).
bool BernoulliExpNeg(uint128 num, uint128 den, RandomSource& rng);

}  // namespace dpq::dp

#endif  // DPQ_SERVER_DP_BERNOULLI_EXP_H_
