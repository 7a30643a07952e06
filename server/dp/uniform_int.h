// Exact uniform integers and rational Bernoulli coins from a RandomSource.
//
// These are the only places where raw random bits become numbers; everything above them is
// integer arithmetic, so every sampler in server/dp is exact (no floating point on the secret path).
#ifndef DPQ_SERVER_DP_UNIFORM_INT_H_
#define DPQ_SERVER_DP_UNIFORM_INT_H_

#include <cstdint>

#include "server/dp/random_source.h"

namespace dpq::dp {

using uint128 = unsigned __int128;
using int128 = __int128;

// Uniform on {0, ..., n-1}; n >= 1 (n == 0 is treated as 2^64). Unbiased: Lemire 2019,
// "Fast random integer generation in an interval", Algorithm 5 (multiply, reject the short tail).
uint64_t UniformBelow(uint64_t n, RandomSource& rng);

// Uniform on {0, ..., n-1} for 128-bit n >= 1, by rejection on the smallest covering power of two
// (expected fewer than 2 rounds).
uint128 UniformBelow128(uint128 n, RandomSource& rng);

// One fair coin.
bool UniformBit(RandomSource& rng);

// Bernoulli(num/den) exactly; requires den >= 1 and num <= den.
bool BernoulliRational(uint128 num, uint128 den, RandomSource& rng);

}  // namespace dpq::dp

#endif  // DPQ_SERVER_DP_UNIFORM_INT_H_
