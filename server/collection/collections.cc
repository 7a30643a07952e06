#include "server/collection/collections.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"

namespace dpq::collection {
namespace {

bool IsPrintable(absl::string_view s, bool allow_space) {
  for (char ch : s) {
    const unsigned char u = static_cast<unsigned char>(ch);
    if (u < (allow_space ? 0x20 : 0x21) || u > 0x7e) return false;
  }
  return true;
}

absl::Status ValidateDomain(const std::vector<std::string>& domain) {
  std::set<std::string> seen;
  for (size_t i = 0; i < domain.size(); ++i) {
    const std::string& v = domain[i];
    if (v.empty() || v.size() > kMaxDomainValueBytes || !IsPrintable(v, /*allow_space=*/true)) {
      return absl::InvalidArgumentError(
          absl::StrCat("domain[", i, "] must be 1 to ", kMaxDomainValueBytes,
                       " printable ASCII characters, got ", QuoteForMessage(v)));
    }
    if (!seen.insert(v).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("domain[", i, "] repeats the value ", QuoteForMessage(v)));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateClientId(const std::string& client_id) {
  if (client_id.empty() || client_id.size() > kMaxClientIdBytes ||
      !IsPrintable(client_id, /*allow_space=*/false)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "client_id must be 1 to ", kMaxClientIdBytes,
        " printable ASCII characters without spaces, got ", QuoteForMessage(client_id)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<dp::ldp::FrequencyOracle> OracleOf(const store::CollectionSpec& spec) {
  return dp::ldp::FrequencyOracle::Create(spec.mechanism, spec.epsilon,
                                          static_cast<int64_t>(spec.domain.size()));
}

absl::StatusOr<store::CollectionRecord> Collections::Create(const store::CollectionSpec& spec,
                                                            const store::AdminAction* log) {
  RETURN_IF_ERROR(ValidateIdentifier(spec.name, "name"));
  RETURN_IF_ERROR(OracleOf(spec).status());  // epsilon, domain size, rr needs 2 values
  RETURN_IF_ERROR(ValidateDomain(spec.domain));
  if (spec.reports_per_client < 1 || spec.reports_per_client > kMaxReportsPerClient) {
    return absl::InvalidArgumentError(absl::StrCat("reports_per_client must be in [1, ",
                                                   kMaxReportsPerClient, "], got ",
                                                   spec.reports_per_client));
  }
  return store_->Create(spec, log);
}

absl::StatusOr<store::CollectionRecord> Collections::Get(const std::string& name) {
  RETURN_IF_ERROR(ValidateIdentifier(name, "name"));
  return store_->Get(name);
}

absl::StatusOr<std::vector<store::CollectionRecord>> Collections::List() { return store_->List(); }

absl::Status Collections::Submit(const std::string& name, const std::string& client_id,
                                 const dp::ldp::LdpReport& report, bool* found) {
  if (found != nullptr) *found = false;
  RETURN_IF_ERROR(ValidateIdentifier(name, "collection"));
  ASSIGN_OR_RETURN(const store::CollectionRecord collection, store_->Get(name));
  if (found != nullptr) *found = true;
  RETURN_IF_ERROR(ValidateClientId(client_id));
  ASSIGN_OR_RETURN(const dp::ldp::FrequencyOracle oracle, OracleOf(collection.spec));
  RETURN_IF_ERROR(oracle.Validate(report));
  return store_->Submit(collection, client_id, report);
}

absl::StatusOr<CollectionEstimate> Collections::Estimate(const std::string& name, double confidence,
                                                         absl::Time deadline) {
  RETURN_IF_ERROR(ValidateIdentifier(name, "collection"));
  RETURN_IF_ERROR(ValidateInOpenRange(confidence, 0, 1, "confidence"));
  CollectionEstimate out;
  ASSIGN_OR_RETURN(out.collection, store_->Get(name));
  ASSIGN_OR_RETURN(const dp::ldp::FrequencyOracle oracle, OracleOf(out.collection.spec));
  // Tallied in C++ while streaming the reports: OUE bits and OLH hashes (SHA-256 per report and
  // value) would need a second implementation in SQL; one tally, shared with the tests, is safer.
  std::vector<int64_t> support(out.collection.spec.domain.size(), 0);
  ASSIGN_OR_RETURN(
      out.reports,
      store_->ForEachReport(
          out.collection.id, [&](const dp::ldp::LdpReport& r) { oracle.AddSupport(r, support); },
          deadline));
  out.confidence = confidence;
  ASSIGN_OR_RETURN(out.estimates, dp::ldp::EstimateFrequencies(oracle.protocol(), support,
                                                               out.reports, confidence));
  return out;
}

}  // namespace dpq::collection
