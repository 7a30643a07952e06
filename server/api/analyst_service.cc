#include "server/api/proto_convert.h"
#include "server/api/services.h"
#include "server/api/status_mapping.h"
#include "server/base/status_macros.h"

#include "absl/time/clock.h"

namespace dpq::api {
namespace {

// The call's deadline; gRPC reports "none" as the largest time_point.
absl::Time Deadline(const grpc::ServerContext& context) {
  const auto d = context.deadline();
  if (d >= std::chrono::system_clock::time_point::max() - std::chrono::hours(24 * 365)) {
    return absl::InfiniteFuture();
  }
  return absl::FromChrono(d);
}

}  // namespace

grpc::Status AnalystService::Query(grpc::ServerContext* context, const v1::QueryRequest* request,
                                   v1::QueryResponse* response) {
  const absl::Time start = absl::Now();
  std::string aggregate = "unknown";
  std::string dataset_label;  // stays empty unless the dataset exists: bounded label cardinality
  absl::Status status = [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal principal, o_.auth->Authenticate(*context));
    ASSIGN_OR_RETURN(query::QuerySpec spec, QuerySpecFromProto(*request));
    aggregate = std::string(query::AggregateName(spec.aggregate));
    ASSIGN_OR_RETURN(engine::QueryOutcome outcome,
                     o_.engine->Run(principal, spec, request->request_id(), Deadline(*context)));
    ToProto(outcome, response);
    return absl::OkStatus();
  }();
  // These outcomes arise only after the dataset was resolved, so its name is a known one.
  if (status.ok() || status.code() == absl::StatusCode::kResourceExhausted ||
      status.code() == absl::StatusCode::kAlreadyExists) {
    dataset_label = request->dataset();
  }
  const std::string outcome =
      status.ok() ? (response->replayed() ? "replayed" : "ok") : OutcomeLabel(status);
  o_.metrics->RecordQuery(dataset_label, aggregate, outcome, absl::ToDoubleSeconds(absl::Now() - start));
  if (!status.ok()) response->Clear();  // nothing of a failed query leaves the server
  return ToGrpcStatus(status);
}

grpc::Status AnalystService::ListDatasets(grpc::ServerContext* context,
                                          const v1::ListDatasetsRequest* request,
                                          v1::ListDatasetsResponse* response) {
  return ToGrpcStatus([&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal principal, o_.auth->Authenticate(*context));
    absl::optional<int64_t> only_granted;
    if (principal.role != store::Role::kAdmin) only_granted = principal.id;
    ASSIGN_OR_RETURN(auto schemas, o_.datasets->List(only_granted));
    for (const auto& s : schemas) ToProto(s, response->add_datasets());
    return absl::OkStatus();
  }());
}

grpc::Status AnalystService::GetDataset(grpc::ServerContext* context,
                                        const v1::GetDatasetRequest* request, v1::Dataset* response) {
  return ToGrpcStatus([&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal principal, o_.auth->Authenticate(*context));
    ASSIGN_OR_RETURN(query::DatasetSchema schema,
                     o_.engine->AuthorizedDataset(principal, request->name()));
    ToProto(schema, response);
    return absl::OkStatus();
  }());
}

grpc::Status AnalystService::GetBudget(grpc::ServerContext* context,
                                       const v1::GetBudgetRequest* request, v1::Budget* response) {
  return ToGrpcStatus([&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal principal, o_.auth->Authenticate(*context));
    ASSIGN_OR_RETURN(query::DatasetSchema schema,
                     o_.engine->AuthorizedDataset(principal, request->dataset()));
    ASSIGN_OR_RETURN(store::BudgetState budget, o_.ledger->Get(schema.id));
    ToProto(budget, response);
    return absl::OkStatus();
  }());
}

}  // namespace dpq::api
