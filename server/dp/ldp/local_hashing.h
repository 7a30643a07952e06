// Optimized local hashing, OLH (Wang, Blocki, Li, Jha 2017, "Locally Differentially Private
// Protocols for Frequency Estimation", USENIX Security, Sec. 4.4).
//
// The client draws a uniform 64-bit seed, hashes its value into [0, g) with g = max(2,
// round(e^eps + 1)) (Wang et al. Sec. 4.4: the g minimising the variance), and reports (seed, y)
// where y is k-ary randomized response over [0, g) of the hash with p' = e^eps / (e^eps + g - 1).
// A report supports v iff H(seed, v) == y: p = p', q = 1/g (Wang et al. Sec. 4.4).
//
// H is fixed by the wire format shared with the Python client (proto/dpq/v1/collection.proto):
//   H(seed, v) = (first 8 bytes, big-endian, of SHA-256(seed as 8 bytes BE || v as 4 bytes BE)) mod g
#ifndef DPQ_SERVER_DP_LDP_LOCAL_HASHING_H_
#define DPQ_SERVER_DP_LDP_LOCAL_HASHING_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "server/dp/exact_rational.h"
#include "server/dp/random_source.h"
#include "server/dp/randomized_response.h"

namespace dpq::dp::ldp {

// The hash range g for epsilon: max(2, round(e^eps + 1)). Epsilon must be finite, > 0 and at most
// kMaxLdpEpsilon (so g fits in 32 bits).
uint32_t OlhHashRange(double epsilon);

// H(seed, v) mod g as above; g >= 1.
uint32_t OlhHash(uint64_t seed, uint32_t value, uint32_t g);

struct OlhReport {
  uint64_t seed = 0;
  uint32_t hashed = 0;  // in [0, g)
};

class OptimizedLocalHashing {
 public:
  // INVALID_ARGUMENT naming "epsilon" (finite, in (0, kMaxLdpEpsilon]) or "domain_size" (>= 2).
  static absl::StatusOr<OptimizedLocalHashing> Create(double epsilon, int64_t domain_size);
  // INVALID_ARGUMENT naming "value" unless 0 <= value < domain_size.
  absl::StatusOr<OlhReport> Randomize(int64_t value, RandomSource& rng) const;
  // True when `report` supports `value` (H(seed, value) == hashed).
  bool Supports(const OlhReport& report, uint32_t value) const {
    return OlhHash(report.seed, value, g_) == report.hashed;
  }
  PureProtocol protocol() const;
  uint32_t hash_range() const { return g_; }
  int64_t domain_size() const { return k_; }

 private:
  OptimizedLocalHashing(double epsilon, uint32_t g, int64_t k, bool thin_keep, Rational gap)
      : epsilon_(epsilon), g_(g), k_(k), thin_keep_(thin_keep), gap_(gap) {}
  double epsilon_;
  uint32_t g_;
  int64_t k_;
  // The perturbation's rejection sampler (local_hashing.cc): which side is thinned, and by
  // exp(-gap).
  bool thin_keep_;
  Rational gap_;
};

// The largest per-report epsilon a collection accepts: e^20 + 1 < 2^32 keeps g in 32 bits, and
// nothing is private above it anyway.
inline constexpr double kMaxLdpEpsilon = 20;

}  // namespace dpq::dp::ldp

#endif  // DPQ_SERVER_DP_LDP_LOCAL_HASHING_H_
