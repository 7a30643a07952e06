#include "server/api/query_call.h"

#include "absl/time/clock.h"
#include "server/api/auth.h"
#include "server/api/status_mapping.h"
#include "server/base/status_macros.h"

namespace dpq::api {

std::string QueryOutcomeLabel(const absl::Status& status, bool replayed, bool cached) {
  return status.ok() ? (replayed ? "replayed" : cached ? "cached" : "ok") : OutcomeLabel(status);
}

std::string QueryDatasetLabel(const absl::Status& status, bool admitted,
                              const std::string& dataset) {
  const bool known = status.ok() || status.code() == absl::StatusCode::kResourceExhausted ||
                     status.code() == absl::StatusCode::kAlreadyExists;
  return admitted && known ? dataset : "";
}

grpc::Status RunAdmittedQuery(grpc::ServerContext& context, const ServiceOptions& options,
                              QueryCallLabels labels, google::protobuf::Message* response,
                              const AdmittedQuery& run, CallerCheck check) {
  const absl::Time start = absl::Now();
  bool admitted = false;
  absl::Status status = [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal principal,
                     check == CallerCheck::kInQuery
                         ? AuthenticateQueryCaller(*options.auth, context)
                         : Authenticate(*options.auth, context));
    ASSIGN_OR_RETURN(QueryAdmission::Ticket ticket, options.admission->Admit(principal.id, start));
    admitted = true;
    return run(principal, &labels);
  }();
  options.metrics->RecordQuery(QueryDatasetLabel(status, admitted, labels.dataset),
                               labels.aggregate,
                               QueryOutcomeLabel(status, labels.replayed, labels.cached),
                               absl::ToDoubleSeconds(absl::Now() - start));
  if (!status.ok()) response->Clear();
  return ToGrpcStatus(context, status);
}

}  // namespace dpq::api
