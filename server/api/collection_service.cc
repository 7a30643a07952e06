#include "server/api/collection_service.h"
#include "server/api/call_deadline.h"

#include "absl/strings/str_cat.h"
#include "server/api/status_mapping.h"
#include "server/base/status_macros.h"
#include "server/dp/ldp/local_hashing.h"
#include "server/engine/admin/admin_action.h"

namespace dpq::api {
namespace {

using dp::ldp::LdpMechanism;

absl::StatusOr<LdpMechanism> MechanismFromProto(v1::LdpMechanism m) {
  switch (m) {
    case v1::LDP_MECHANISM_RR: return LdpMechanism::kRr;
    case v1::LDP_MECHANISM_KRR: return LdpMechanism::kKrr;
    case v1::LDP_MECHANISM_OUE: return LdpMechanism::kOue;
    case v1::LDP_MECHANISM_OLH: return LdpMechanism::kOlh;
    default: return absl::InvalidArgumentError("mechanism is required: rr, krr, oue or olh");
  }
}

v1::LdpMechanism MechanismToProto(LdpMechanism m) {
  switch (m) {
    case LdpMechanism::kRr: return v1::LDP_MECHANISM_RR;
    case LdpMechanism::kKrr: return v1::LDP_MECHANISM_KRR;
    case LdpMechanism::kOue: return v1::LDP_MECHANISM_OUE;
    case LdpMechanism::kOlh: return v1::LDP_MECHANISM_OLH;
  }
  return v1::LDP_MECHANISM_UNSPECIFIED;
}

dp::ldp::LdpReport ReportFromProto(const v1::LdpReport& r) {
  switch (r.report_case()) {
    case v1::LdpReport::kIndex: return dp::ldp::IndexReport{r.index()};
    case v1::LdpReport::kUnaryBits: return dp::ldp::UnaryReport{r.unary_bits()};
    case v1::LdpReport::kOlh: return dp::ldp::OlhReport{r.olh().seed(), r.olh().hashed()};
    default: return dp::ldp::LdpReport();
  }
}

void ToProto(const store::CollectionRecord& c, v1::Collection* out) {
  out->set_name(c.spec.name);
  for (const std::string& v : c.spec.domain) out->add_domain(v);
  out->set_epsilon(c.spec.epsilon);
  out->set_mechanism(MechanismToProto(c.spec.mechanism));
  out->set_reports_per_client(c.spec.reports_per_client);
  out->set_created_at(c.created_at);
  out->set_reports(c.reports);
  if (c.spec.mechanism == LdpMechanism::kOlh) {
    out->set_olh_hash_range(dp::ldp::OlhHashRange(c.spec.epsilon));
  }
}

}  // namespace

grpc::Status CollectionService::CreateCollection(grpc::ServerContext* context,
                                                 const v1::CreateCollectionRequest* request,
                                                 v1::Collection* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal admin, AuthenticateAdmin(*options_.auth, *context));
    store::CollectionSpec spec;
    spec.name = request->name();
    spec.domain.assign(request->domain().begin(), request->domain().end());
    spec.epsilon = request->epsilon();
    ASSIGN_OR_RETURN(spec.mechanism, MechanismFromProto(request->mechanism()));
    spec.reports_per_client =
        request->reports_per_client() == 0 ? 1 : request->reports_per_client();
    const store::AdminAction log =
        engine::Logged(admin, "collection.create", spec.name.substr(0, 64),
                       absl::StrCat("mechanism=", dp::ldp::LdpMechanismName(spec.mechanism),
                                    " epsilon=", spec.epsilon, " values=", spec.domain.size(),
                                    " reports_per_client=", spec.reports_per_client));
    ASSIGN_OR_RETURN(store::CollectionRecord created, options_.collections->Create(spec, &log));
    ToProto(created, response);
    return absl::OkStatus();
  }());
}

grpc::Status CollectionService::ListCollections(grpc::ServerContext* context,
                                                const v1::ListCollectionsRequest* /*request*/,
                                                v1::ListCollectionsResponse* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    RETURN_IF_ERROR(Authenticate(*options_.auth, *context).status());
    ASSIGN_OR_RETURN(std::vector<store::CollectionRecord> all, options_.collections->List());
    for (const store::CollectionRecord& c : all) ToProto(c, response->add_collections());
    return absl::OkStatus();
  }());
}

grpc::Status CollectionService::GetCollection(grpc::ServerContext* context,
                                              const v1::GetCollectionRequest* request,
                                              v1::Collection* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    RETURN_IF_ERROR(Authenticate(*options_.auth, *context).status());
    ASSIGN_OR_RETURN(store::CollectionRecord c, options_.collections->Get(request->name()));
    ToProto(c, response);
    return absl::OkStatus();
  }());
}

grpc::Status CollectionService::SubmitReport(grpc::ServerContext* context,
                                             const v1::SubmitReportRequest* request,
                                             v1::SubmitReportResponse* /*response*/) {
  const absl::Status status = [&]() -> absl::Status {
    RETURN_IF_ERROR(Authenticate(*options_.auth, *context).status());
    bool found = false;
    const absl::Status submitted = options_.collections->Submit(
        request->collection(), request->client_id(), ReportFromProto(request->report()), &found);
    // Label by collection only when it exists, so random names cannot grow the label set.
    options_.metrics->RecordLdpReport(found ? request->collection() : "",
                                      submitted.ok() ? "accepted" : OutcomeLabel(submitted));
    return submitted;
  }();
  return ToGrpcStatus(*context, status);
}

grpc::Status CollectionService::Estimate(grpc::ServerContext* context,
                                         const v1::EstimateRequest* request,
                                         v1::EstimateResponse* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    RETURN_IF_ERROR(Authenticate(*options_.auth, *context).status());
    const double confidence = request->confidence() == 0 ? 0.95 : request->confidence();
    ASSIGN_OR_RETURN(
        collection::CollectionEstimate e,
        options_.collections->Estimate(request->collection(), confidence, CallDeadline(*context)));
    ToProto(e.collection, response->mutable_collection());
    response->set_reports(e.reports);
    response->set_confidence(e.confidence);
    for (size_t i = 0; i < e.estimates.size(); ++i) {
      v1::FrequencyEstimate* out = response->add_estimates();
      out->set_value(e.collection.spec.domain[i]);
      out->set_estimate(e.estimates[i].count);
      out->set_ci_lower(e.estimates[i].lower);
      out->set_ci_upper(e.estimates[i].upper);
      out->set_standard_error(e.estimates[i].standard_error);
    }
    return absl::OkStatus();
  }());
}

}  // namespace dpq::api
