#include "server/dp/uniform_int.h"

namespace dpq::dp {

uint64_t UniformBelow(uint64_t n, RandomSource& rng) {
  if (n == 0) return rng.NextUint64();  // the whole 64-bit range
  // Lemire 2019, Alg. 5: the high word of x*n is uniform once the low word avoids the
  // (2^64 mod n) values that would bias it.
  uint128 m = static_cast<uint128>(rng.NextUint64()) * n;
  uint64_t low = static_cast<uint64_t>(m);
  if (low < n) {
    const uint64_t threshold = (0 - n) % n;  // 2^64 mod n
    while (low < threshold) {
      m = static_cast<uint128>(rng.NextUint64()) * n;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

uint128 UniformBelow128(uint128 n, RandomSource& rng) {
  if (n >> 64 == 0) return UniformBelow(static_cast<uint64_t>(n), rng);
  if (n == (static_cast<uint128>(1) << 64)) return rng.NextUint64();
  // Mask to the bit length of n-1, reject values >= n.
  const uint64_t high_limit = static_cast<uint64_t>((n - 1) >> 64);
  const int high_bits = 64 - __builtin_clzll(high_limit);
  const uint64_t high_mask = high_bits == 64 ? ~0ULL : ((1ULL << high_bits) - 1);
  while (true) {
    const uint128 high = rng.NextUint64() & high_mask;
    const uint128 x = (high << 64) | rng.NextUint64();
    if (x < n) return x;
  }
}

bool UniformBit(RandomSource& rng) { return (rng.NextUint64() >> 63) != 0; }

bool BernoulliRational(uint128 num, uint128 den, RandomSource& rng) {
  if (num >= den) return true;
  if (num == 0) return false;
  return UniformBelow128(den, rng) < num;
}

}  // namespace dpq::dp
