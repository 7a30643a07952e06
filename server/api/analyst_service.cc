#include "server/api/call_deadline.h"
#include "server/api/proto_convert.h"
#include "server/api/services.h"
#include "server/api/status_mapping.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace dpq::api {
namespace {

// Records the query metric and returns the call's status; a failed call's response is cleared, so
// nothing of it leaves the server.
template <typename Response>
grpc::Status FinishQuery(grpc::ServerContextBase& call, metrics::Metrics& metrics,
                         const std::string& dataset,
                         const std::string& aggregate, const absl::Status& status, bool replayed,
                         bool cached, absl::Time start, Response* response) {
  // These outcomes arise only after the dataset was resolved (callers pass "" for a request refused
  // before, e.g. by its analyst's rate limit), so its name is a known one; other outcomes get no
  // dataset label, which keeps the label cardinality bounded.
  const bool known = status.ok() || status.code() == absl::StatusCode::kResourceExhausted ||
                     status.code() == absl::StatusCode::kAlreadyExists;
  const std::string outcome =
      status.ok() ? (replayed ? "replayed" : cached ? "cached" : "ok") : OutcomeLabel(status);
  metrics.RecordQuery(known ? dataset : "", aggregate, outcome,
                      absl::ToDoubleSeconds(absl::Now() - start));
  if (!status.ok()) response->Clear();
  return ToGrpcStatus(call, status);
}

}  // namespace

grpc::Status AnalystService::WhoAmI(grpc::ServerContext* context, const v1::WhoAmIRequest* /*request*/,
                                    v1::WhoAmIResponse* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal principal, o_.auth->Authenticate(*context));
    response->set_name(principal.name);
    response->set_role(principal.role == store::Role::kAdmin ? v1::ROLE_ADMIN : v1::ROLE_ANALYST);
    absl::optional<int64_t> only_granted;
    if (principal.role != store::Role::kAdmin) only_granted = principal.id;
    ASSIGN_OR_RETURN(auto schemas, o_.datasets->List(only_granted));
    for (const auto& s : schemas) response->add_datasets(s.name);
    return absl::OkStatus();
  }());
}

grpc::Status AnalystService::Query(grpc::ServerContext* context, const v1::QueryRequest* request,
                                   v1::QueryResponse* response) {
  const absl::Time start = absl::Now();
  std::string aggregate = "unknown";
  bool admitted = false;
  absl::Status status = [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal principal, o_.auth->Authenticate(*context));
    ASSIGN_OR_RETURN(QueryAdmission::Ticket ticket, o_.admission->Admit(principal.id, start));
    admitted = true;
    ASSIGN_OR_RETURN(query::QuerySpec spec, QuerySpecFromProto(*request));
    aggregate = std::string(query::AggregateName(spec.aggregate));
    ASSIGN_OR_RETURN(engine::QueryOutcome outcome,
                     o_.engine->Run(principal, spec, request->request_id(), CallDeadline(*context)));
    ToProto(outcome, response);
    return absl::OkStatus();
  }();
  return FinishQuery(*context, *o_.metrics, admitted ? request->dataset() : "", aggregate, status,
                     response->replayed(), response->cached(), start, response);
}

grpc::Status AnalystService::QueryBatch(grpc::ServerContext* context,
                                        const v1::QueryBatchRequest* request,
                                        v1::QueryBatchResponse* response) {
  const absl::Time start = absl::Now();
  bool admitted = false;
  absl::Status status = [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal principal, o_.auth->Authenticate(*context));
    ASSIGN_OR_RETURN(QueryAdmission::Ticket ticket, o_.admission->Admit(principal.id, start));
    admitted = true;
    std::vector<query::QuerySpec> specs;
    for (int i = 0; i < request->queries_size(); ++i) {
      const v1::QueryRequest& q = request->queries(i);
      if (!q.request_id().empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "queries[", i, "]: request_id must be empty (the batch has one request_id)"));
      }
      absl::StatusOr<query::QuerySpec> spec = QuerySpecFromProto(q);
      if (!spec.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("queries[", i, "]: ", spec.status().message()));
      }
      specs.push_back(*std::move(spec));
    }
    ASSIGN_OR_RETURN(engine::BatchOutcome outcome,
                     o_.engine->RunBatch(principal, request->dataset(), std::move(specs),
                                         request->delta(), request->request_id(), CallDeadline(*context)));
    ToProto(outcome, response);
    return absl::OkStatus();
  }();
  return FinishQuery(*context, *o_.metrics, admitted ? request->dataset() : "", "batch", status,
                     response->replayed(), /*cached=*/false, start, response);
}

grpc::Status AnalystService::Plan(grpc::ServerContext* context, const v1::PlanRequest* request,
                                  v1::PlanResponse* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal principal, o_.auth->Authenticate(*context));
    ASSIGN_OR_RETURN(query::QuerySpec spec, QuerySpecFromProto(request->query()));
    ASSIGN_OR_RETURN(engine::AccuracyPlan plan,
                     o_.engine->PlanAccuracy(principal, spec, request->target_error(),
                                             request->expected_count()));
    ToProto(plan, response);
    return absl::OkStatus();
  }());
}

grpc::Status AnalystService::ListDatasets(grpc::ServerContext* context,
                                          const v1::ListDatasetsRequest* request,
                                          v1::ListDatasetsResponse* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
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
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal principal, o_.auth->Authenticate(*context));
    RETURN_IF_ERROR(ValidateIdentifier(request->name(), "name"));
    ASSIGN_OR_RETURN(query::DatasetSchema schema,
                     o_.engine->AuthorizedDataset(principal, request->name()));
    ToProto(schema, response);
    return absl::OkStatus();
  }());
}

grpc::Status AnalystService::GetBudget(grpc::ServerContext* context,
                                       const v1::GetBudgetRequest* request, v1::Budget* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal principal, o_.auth->Authenticate(*context));
    ASSIGN_OR_RETURN(query::DatasetSchema schema,
                     o_.engine->AuthorizedDataset(principal, request->dataset()));
    ASSIGN_OR_RETURN(store::BudgetState budget, o_.ledger->Get(schema.id));
    ToProto(budget, response);
    response->set_preset(schema.epsilon_preset);
    return absl::OkStatus();
  }());
}

}  // namespace dpq::api
