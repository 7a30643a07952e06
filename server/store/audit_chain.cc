#include "server/store/audit_chain.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/base/sha256.h"

namespace dpq::store {
namespace {

std::string D(double v) { return absl::StrFormat("%.17g", v); }
std::string OptD(const absl::optional<double>& v) { return v ? D(*v) : "null"; }
// Length-prefixed, so no choice of strings can make two different records encode alike.
std::string S(const std::string& s) { return absl::StrCat(s.size(), ":", s); }

}  // namespace

std::string GenesisHash() { return std::string(32, '\0'); }

std::string CanonicalAllocation(int64_t population_id, const Allocation& a) {
  return absl::StrCat(
      "dpq-audit-v1|", population_id, "|", a.seq, "|", S(a.request_id), "|", a.principal_id, "|",
      S(a.analyst), "|", S(a.fingerprint), "|", S(a.aggregate), "|", S(a.column), "|",
      S(a.mechanism), "|", a.epsilon_units, "|", a.delta_units, "|", D(a.sensitivity), "|",
      D(a.noise_scale), "|", D(a.count_noise_scale), "|", D(a.value), "|", D(a.confidence), "|",
      D(a.ci_lower), "|", D(a.ci_upper), "|", OptD(a.clamp_lower), "|", OptD(a.clamp_upper), "|",
      a.max_contributions, "|", S(a.events),
      // Fields added by migration 0005; rows written before it (version 0, no result) hash as before.
      a.dataset_version == 0 && a.result.empty()
          ? std::string()
          : absl::StrCat("|", a.dataset_version, "|", S(a.result)),
      // Migration 0007: rows charged before their scan; earlier rows hash as before.
      a.release_deferred ? "|release-deferred" : "",
      // Migration 0014: the datasets a charge paid to read; earlier rows (none recorded) hash as
      // before.
      a.datasets.empty() ? std::string() : absl::StrCat("|datasets=", S(a.datasets)),
      // Migration 0016: the time blocks a charge paid; rows of other ledgers hash as before.
      a.blocks.empty() ? std::string() : absl::StrCat("|blocks=", S(a.blocks)));
}

std::string CanonicalRelease(int64_t population_id, int64_t seq, double value, double ci_lower,
                             double ci_upper, const std::string& result) {
  return absl::StrCat("dpq-release-v1|", population_id, "|", seq, "|", D(value), "|", D(ci_lower),
                      "|", D(ci_upper), "|", S(result));
}

std::string ReleaseHash(const std::string& audit_hash, int64_t population_id, int64_t seq,
                        double value, double ci_lower, double ci_upper, const std::string& result) {
  return Sha256(audit_hash +
                CanonicalRelease(population_id, seq, value, ci_lower, ci_upper, result));
}

std::string ChainHash(const std::string& prev_hash, int64_t population_id, const Allocation& a) {
  return Sha256(prev_hash + CanonicalAllocation(population_id, a));
}

std::string CanonicalAdminAction(int64_t seq, const AdminAction& a) {
  return absl::StrCat("dpq-admin-v1|", seq, "|", S(a.admin), "|", S(a.action), "|", S(a.target),
                      "|", S(a.details));
}

std::string AdminChainHash(const std::string& prev_hash, int64_t seq, const AdminAction& a) {
  return Sha256(prev_hash + CanonicalAdminAction(seq, a));
}

}  // namespace dpq::store
