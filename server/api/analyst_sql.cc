// AnalystService.ExecuteSql and ExplainSql: thin handlers over engine/sql_execution.h.
#include "absl/time/clock.h"
#include "server/api/call_deadline.h"
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
  const absl::Time start = absl::Now();
  bool admitted = false;
  absl::Status status = [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal principal, o_.auth->Authenticate(*context));
    ASSIGN_OR_RETURN(QueryAdmission::Ticket ticket, o_.admission->Admit(principal.id, start));
    admitted = true;
    ASSIGN_OR_RETURN(engine::SqlOutcome outcome,
                     engine::ExecuteSql(*o_.engine, principal, request->statement(),
                                        request->request_id(), OptionsOf(*request),
                                        CallDeadline(*context)));
    ToProto(outcome, response);
    return absl::OkStatus();
  }();
  // As Query's metric: the dataset label only once it is known to exist (a successful call).
  const std::string outcome = status.ok() ? (response->replayed() ? "replayed"
                                             : response->cached() ? "cached"
                                                                  : "ok")
                                          : OutcomeLabel(status);
  o_.metrics->RecordQuery(admitted && status.ok() ? response->dataset() : "", "sql", outcome,
                          absl::ToDoubleSeconds(absl::Now() - start));
  if (!status.ok()) response->Clear();
  return ToGrpcStatus(*context, status);
}

grpc::Status AnalystService::ExplainSql(grpc::ServerContext* context, const v1::SqlRequest* request,
                                        v1::ExplainSqlResponse* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal principal, o_.auth->Authenticate(*context));
    ASSIGN_OR_RETURN(engine::SqlExplanation e,
                     engine::ExplainSql(*o_.engine, principal, request->statement(),
                                        OptionsOf(*request)));
    ToProto(e, response);
    return absl::OkStatus();
  }());
}

}  // namespace dpq::api
