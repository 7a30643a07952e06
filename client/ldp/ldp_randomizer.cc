#include "client/ldp/ldp_randomizer.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/base/status_macros.h"
#include "server/dp/ldp/frequency_oracle.h"
#include "server/dp/secure_random.h"

namespace dpq::ldp_client {
namespace {

absl::StatusOr<dp::ldp::LdpMechanism> MechanismOf(v1::LdpMechanism m) {
  switch (m) {
    case v1::LDP_MECHANISM_RR: return dp::ldp::LdpMechanism::kRr;
    case v1::LDP_MECHANISM_KRR: return dp::ldp::LdpMechanism::kKrr;
    case v1::LDP_MECHANISM_OUE: return dp::ldp::LdpMechanism::kOue;
    case v1::LDP_MECHANISM_OLH: return dp::ldp::LdpMechanism::kOlh;
    default: return absl::InvalidArgumentError("the collection names no known mechanism");
  }
}

}  // namespace

absl::StatusOr<v1::LdpReport> RandomizeReport(const v1::Collection& collection,
                                              absl::string_view value) {
  return RandomizeReport(collection, value, dp::SecureRandom());
}

absl::StatusOr<v1::LdpReport> RandomizeReport(const v1::Collection& collection,
                                              absl::string_view value, dp::RandomSource& rng) {
  int64_t index = -1;
  for (int i = 0; i < collection.domain_size(); ++i) {
    if (collection.domain(i) == value) index = i;
  }
  if (index < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("value '", value.substr(0, 64), "' is not in the domain of collection '",
                     collection.name(), "' (", absl::StrJoin(collection.domain(), ", "), ")"));
  }
  ASSIGN_OR_RETURN(const dp::ldp::LdpMechanism mechanism, MechanismOf(collection.mechanism()));
  ASSIGN_OR_RETURN(
      const dp::ldp::FrequencyOracle oracle,
      dp::ldp::FrequencyOracle::Create(mechanism, collection.epsilon(), collection.domain_size()));
  ASSIGN_OR_RETURN(const dp::ldp::LdpReport report, oracle.Randomize(index, rng));
  v1::LdpReport out;
  if (const auto* r = absl::get_if<dp::ldp::IndexReport>(&report)) {
    out.set_index(r->index);
  } else if (const auto* u = absl::get_if<dp::ldp::UnaryReport>(&report)) {
    out.set_unary_bits(u->bits);
  } else if (const auto* o = absl::get_if<dp::ldp::OlhReport>(&report)) {
    out.mutable_olh()->set_seed(o->seed);
    out.mutable_olh()->set_hashed(o->hashed);
  }
  return out;
}

}  // namespace dpq::ldp_client
