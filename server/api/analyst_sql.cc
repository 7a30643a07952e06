// AnalystService.ExecuteSql and ExplainSql: thin handlers over engine/sql_execution.h.
#include "server/api/call_deadline.h"
#include "server/api/query_call.h"
#include "server/api/services.h"
#include "server/api/sql_convert.h"
#include "server/api/status_mapping.h"
#include "server/base/status_macros.h"
#include "server/engine/sql_execution.h"

namespace dpq::api {
namespace {

engine::SqlOptions OptionsOf(const v1::SqlRequest& request) {
  engine::SqlOptions options;
  options.confidence = request.confidence();
  options.joint_delta = request.joint_delta();
  return options;
}

}  // namespace

grpc::Status AnalystService::ExecuteSql(grpc::ServerContext* context, const v1::SqlRequest* request,
                                        v1::SqlResponse* response) {
  // As Query's metric, but the dataset label only once the call succeeded: the statement names
  // the dataset, and the response says which one it was.
  return RunAdmittedQuery(
      *context, options_, {"", "sql"}, response,
      [&](const store::Principal& principal, QueryCallLabels* labels) -> absl::Status {
        ASSIGN_OR_RETURN(
            engine::SqlOutcome outcome,
            engine::ExecuteSql(*options_.engine, principal, request->statement(),
                               request->request_id(), OptionsOf(*request), CallDeadline(*context)));
        ToProto(outcome, response);
        labels->dataset = response->dataset();
        labels->replayed = response->replayed();
        labels->cached = response->cached();
        return absl::OkStatus();
      });
}

grpc::Status AnalystService::ExplainSql(grpc::ServerContext* context, const v1::SqlRequest* request,
                                        v1::ExplainSqlResponse* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal principal, Authenticate(*options_.auth, *context));
    ASSIGN_OR_RETURN(
        engine::SqlExplanation e,
        engine::ExplainSql(*options_.engine, principal, request->statement(), OptionsOf(*request)));
    ToProto(e, response);
    return absl::OkStatus();
  }());
}

}  // namespace dpq::api
