// Source of uniform random bits for every sampler in server/dp.
//
// Contract: NextUint64() returns 64 independent, uniformly distributed bits. Production code uses
// SecureRandom() (secure_random.h); tests use SeededRandom (testing/seeded_random.h), which is in a
// separate test-only target and never linked into dpqd.
#ifndef DPQ_SERVER_DP_RANDOM_SOURCE_H_
#define DPQ_SERVER_DP_RANDOM_SOURCE_H_

#include <cstdint>

namespace dpq::dp {

class RandomSource {
 public:
  virtual ~RandomSource() = default;
  virtual uint64_t NextUint64() = 0;
};

}  // namespace dpq::dp

#endif  // DPQ_SERVER_DP_RANDOM_SOURCE_H_
