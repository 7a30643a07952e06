// What every query-running call (Query, QueryBatch, ExecuteSql) does around its engine call:
// authenticate, admit it under the caller's concurrency and rate limits (query_admission.h),
// record the query metric, and clear a failed call's response so nothing of it leaves the server.
#ifndef DPQ_SERVER_API_QUERY_CALL_H_
#define DPQ_SERVER_API_QUERY_CALL_H_

#include <functional>
#include <string>

#include <google/protobuf/message.h>
#include <grpcpp/server_context.h>

#include "absl/status/status.h"
#include "server/api/services.h"

namespace dpq::api {

// The query metric's labels, filled in by the call as it learns them.
struct QueryCallLabels {
  std::string dataset;    // the dataset the call names; a label only once it is known to exist
  std::string aggregate;  // e.g. "unknown" until the request is parsed, "batch", "sql"
  bool replayed = false;
  bool cached = false;
};

// "replayed", "cached" or "ok" for a successful call, else OutcomeLabel(status).
std::string QueryOutcomeLabel(const absl::Status& status, bool replayed, bool cached);

// `dataset` for an admitted call whose outcome arises only after the dataset was resolved (OK,
// RESOURCE_EXHAUSTED, ALREADY_EXISTS), so the name is a known one; "" otherwise (a request refused
// before, e.g. by its analyst's rate limit), which keeps the label cardinality bounded.
std::string QueryDatasetLabel(const absl::Status& status, bool admitted,
                              const std::string& dataset);

// Runs `run` for the admitted caller while its admission ticket is held.
using AdmittedQuery =
    std::function<absl::Status(const store::Principal& caller, QueryCallLabels* labels)>;

// How the caller's token is checked: by a lookup now, or (kInQuery, the Query call only) on a
// recently looked-up principal that engine::QueryEngine::Run confirms in its first statement.
enum class CallerCheck { kNow, kInQuery };

// Authenticates the caller, admits it (RESOURCE_EXHAUSTED at a limit), runs `run`, records the
// query metric with `labels` as `run` left them, and returns the call's status; a failed call's
// `response` is cleared.
grpc::Status RunAdmittedQuery(grpc::ServerContext& context, const ServiceOptions& options,
                              QueryCallLabels labels, google::protobuf::Message* response,
                              const AdmittedQuery& run, CallerCheck check = CallerCheck::kNow);

}  // namespace dpq::api

#endif  // DPQ_SERVER_API_QUERY_CALL_H_
