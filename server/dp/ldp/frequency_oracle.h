// One local-DP collection's frequency oracle: the mechanism fixed at creation (rr, krr, oue, olh;
// Wang, Blocki, Li, Jha 2017, USENIX Security), what a well-formed report of it is, which domain
// values a report supports, and the client-side randomizer that produces reports.
//
// Reports are wire-independent here (this layer includes no protobuf); the wire format is
// dpq.v1.LdpReport (proto/dpq/v1/collection.proto), converted field for field:
//   rr, krr: index of the reported value in [0, k)
//   oue:     k bits, bit j = byte[j/8] >> (j%8) & 1 (LSB first), exactly ceil(k/8) bytes, padding 0
//   olh:     (seed, hashed) with hashed in [0, g)
#ifndef DPQ_SERVER_DP_LDP_FREQUENCY_ORACLE_H_
#define DPQ_SERVER_DP_LDP_FREQUENCY_ORACLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/variant.h"
#include "server/dp/ldp/local_hashing.h"
#include "server/dp/random_source.h"
#include "server/dp/randomized_response.h"

namespace dpq::dp::ldp {

enum class LdpMechanism { kRr, kKrr, kOue, kOlh };

// "rr", "krr", "oue", "olh".
const char* LdpMechanismName(LdpMechanism mechanism);
// INVALID_ARGUMENT naming "mechanism" for anything but the four names above.
absl::StatusOr<LdpMechanism> ParseLdpMechanism(absl::string_view name);

// An index report (rr, krr).
struct IndexReport {
  uint32_t index = 0;
};
// An OUE report: the packed bit vector as sent.
struct UnaryReport {
  std::string bits;
};
// absl::monostate: the client sent no report at all.
using LdpReport = absl::variant<absl::monostate, IndexReport, UnaryReport, OlhReport>;

// Bytes of an OUE report over k values: ceil(k/8).
int64_t UnaryReportBytes(int64_t domain_size);

// The largest declared domain: a report's support is computed for every value (k SHA-256 per OLH
// report), and an OUE report is k bits.
inline constexpr int64_t kMaxLdpDomainSize = 1024;

class FrequencyOracle {
 public:
  // INVALID_ARGUMENT naming "epsilon" (finite, in (0, kMaxLdpEpsilon]) or "domain" (2 values for
  // rr; 2 to kMaxLdpDomainSize values otherwise).
  static absl::StatusOr<FrequencyOracle> Create(LdpMechanism mechanism, double epsilon,
                                                int64_t domain_size);

  // OK when `report` is a well-formed report of this mechanism; INVALID_ARGUMENT saying what is
  // wrong (no report, the wrong kind, an index or hash out of range, a bit vector of the wrong
  // length or with padding bits set). Depends only on the report, never on stored data.
  absl::Status Validate(const LdpReport& report) const;

  // Adds 1 to support[v] for every value v that `report` supports (Wang et al. 2017 Sec. 3.2:
  // "support"). `report` must have passed Validate; support.size() == domain_size().
  void AddSupport(const LdpReport& report, std::vector<int64_t>& support) const;

  // The client's randomizer: a report of the value with index `value`. INVALID_ARGUMENT naming
  // "value" unless 0 <= value < domain_size().
  absl::StatusOr<LdpReport> Randomize(int64_t value, RandomSource& rng) const;

  // (p, q) of the mechanism (randomized_response.h).
  PureProtocol protocol() const;
  LdpMechanism mechanism() const { return mechanism_; }
  int64_t domain_size() const { return k_; }
  double epsilon() const { return epsilon_; }

 private:
  FrequencyOracle(LdpMechanism mechanism, double epsilon, int64_t k, KaryRandomizedResponse krr,
                  OptimizedUnaryEncoding oue, OptimizedLocalHashing olh)
      : mechanism_(mechanism), epsilon_(epsilon), k_(k), krr_(krr), oue_(oue), olh_(olh) {}

  LdpMechanism mechanism_;
  double epsilon_;
  int64_t k_;
  // All three are built (cheap, and Create validated their parameters); only the mechanism's
  // own one is used.
  KaryRandomizedResponse krr_;
  OptimizedUnaryEncoding oue_;
  OptimizedLocalHashing olh_;
};

}  // namespace dpq::dp::ldp

#endif  // DPQ_SERVER_DP_LDP_FREQUENCY_ORACLE_H_
