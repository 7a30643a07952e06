#include "server/api/call_deadline.h"
#include "server/api/proto_convert.h"
#include "server/api/query_call.h"
#include "server/api/services.h"
#include "server/api/status_mapping.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"

#include <vector>

#include "absl/strings/str_cat.h"

namespace dpq::api {

grpc::Status AnalystService::WhoAmI(grpc::ServerContext* context,
                                    const v1::WhoAmIRequest* /*request*/,
                                    v1::WhoAmIResponse* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal principal, Authenticate(*options_.auth, *context));
    response->set_name(principal.name);
    response->set_role(RoleToProto(principal.role));
    ASSIGN_OR_RETURN(auto schemas, options_.datasets->Visible(principal));
    for (const auto& s : schemas) response->add_datasets(s.name);
    return absl::OkStatus();
  }());
}

grpc::Status AnalystService::Query(grpc::ServerContext* context, const v1::QueryRequest* request,
                                   v1::QueryResponse* response) {
  return RunAdmittedQuery(
      *context, options_, {request->dataset(), "unknown"}, response,
      [&](const store::Principal& principal, QueryCallLabels* labels) -> absl::Status {
        ASSIGN_OR_RETURN(query::QuerySpec spec, QuerySpecFromProto(*request));
        labels->aggregate = std::string(query::AggregateName(spec.aggregate));
        ASSIGN_OR_RETURN(
            engine::QueryOutcome outcome,
            options_.engine->Run(principal, spec, request->request_id(), CallDeadline(*context)));
        ToProto(outcome, response);
        labels->replayed = response->replayed();
        labels->cached = response->cached();
        return absl::OkStatus();
      },
      CallerCheck::kInQuery);
}

grpc::Status AnalystService::QueryBatch(grpc::ServerContext* context,
                                        const v1::QueryBatchRequest* request,
                                        v1::QueryBatchResponse* response) {
  return RunAdmittedQuery(
      *context, options_, {request->dataset(), "batch"}, response,
      [&](const store::Principal& principal, QueryCallLabels* labels) -> absl::Status {
        std::vector<query::QuerySpec> specs;
        for (int i = 0; i < request->queries_size(); ++i) {
          const v1::QueryRequest& q = request->queries(i);
          if (!q.request_id().empty()) {
            return absl::InvalidArgumentError(absl::StrCat(
                "queries[", i, "]: request_id must be empty (the batch has one request_id)"));
          }
          absl::StatusOr<query::QuerySpec> spec = QuerySpecFromProto(q);
          if (!spec.ok()) {
            return absl::InvalidArgumentError(
                absl::StrCat("queries[", i, "]: ", spec.status().message()));
          }
          specs.push_back(*std::move(spec));
        }
        ASSIGN_OR_RETURN(engine::BatchOutcome outcome,
                         options_.engine->RunBatch(principal, request->dataset(), std::move(specs),
                                                   request->delta(), request->request_id(),
                                                   CallDeadline(*context)));
        ToProto(outcome, response);
        labels->replayed = response->replayed();  // never cached: query-batch bypasses the cache
        return absl::OkStatus();
      });
}

grpc::Status AnalystService::Plan(grpc::ServerContext* context, const v1::PlanRequest* request,
                                  v1::PlanResponse* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal principal, Authenticate(*options_.auth, *context));
    ASSIGN_OR_RETURN(query::QuerySpec spec, QuerySpecFromProto(request->query()));
    ASSIGN_OR_RETURN(engine::AccuracyPlan plan,
                     options_.engine->PlanAccuracy(principal, spec, request->target_error(),
                                                   request->expected_count()));
    ToProto(plan, response);
    return absl::OkStatus();
  }());
}

grpc::Status AnalystService::ListDatasets(grpc::ServerContext* context,
                                          const v1::ListDatasetsRequest* request,
                                          v1::ListDatasetsResponse* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal principal, Authenticate(*options_.auth, *context));
    ASSIGN_OR_RETURN(auto schemas, options_.datasets->Visible(principal));
    for (const auto& s : schemas) ToProto(s, response->add_datasets());
    return absl::OkStatus();
  }());
}

grpc::Status AnalystService::GetDataset(grpc::ServerContext* context,
                                        const v1::GetDatasetRequest* request,
                                        v1::Dataset* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal principal, Authenticate(*options_.auth, *context));
    RETURN_IF_ERROR(ValidateIdentifier(request->name(), "name"));
    ASSIGN_OR_RETURN(query::DatasetSchema schema,
                     options_.engine->AuthorizedDataset(principal, request->name()));
    ToProto(schema, response);
    return absl::OkStatus();
  }());
}

grpc::Status AnalystService::GetBudget(grpc::ServerContext* context,
                                       const v1::GetBudgetRequest* request, v1::Budget* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal principal, Authenticate(*options_.auth, *context));
    ASSIGN_OR_RETURN(engine::DatasetBudget budget,
                     options_.budgets->Get(principal, request->dataset(), request->blocks(),
                                           request->last_blocks()));
    ToProto(budget, response);
    return absl::OkStatus();
  }());
}

}  // namespace dpq::api
