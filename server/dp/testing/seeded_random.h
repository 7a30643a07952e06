// TEST ONLY: deterministic random bits for reproducible tests. NOT SECURE, NOT PRIVATE.
// Lives in the `dpq_dp_testing` target, which production targets must never link.
//
// xoshiro256** (Blackman & Vigna 2018) seeded through splitmix64 (Steele, Lea, Flood 2014).
#ifndef DPQ_SERVER_DP_TESTING_SEEDED_RANDOM_H_
#define DPQ_SERVER_DP_TESTING_SEEDED_RANDOM_H_

#include <cstdint>

#include "server/dp/random_source.h"

namespace dpq::dp {

class SeededRandom final : public RandomSource {
 public:
  explicit SeededRandom(uint64_t seed);
  uint64_t NextUint64() override;

 private:
  uint64_t state_[4];
};

}  // namespace dpq::dp

#endif  // DPQ_SERVER_DP_TESTING_SEEDED_RANDOM_H_
