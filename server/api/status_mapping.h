// absl::Status -> grpc::Status, and the one place where a failure is worded for whoever called.
//
// The codes are the same set (both follow google.rpc.Code). Messages of refusals (INVALID_ARGUMENT,
// NOT_FOUND, RESOURCE_EXHAUSTED, ...) are functions of the request, the schema and the ledger and
// pass through. Failures of the service are different: their own text (libpq's, naming the
// database's host and port; SQLSTATEs; a bug's description) is not a function of the request, so
// an analyst gets one fixed message per failure class instead, and the text goes to dpqd's log
// line of the call, next to its request id. Admins (trusted: they run the database) get the fixed
// message followed by the detail. docs/threat-model.md, "Failures of the service".
#ifndef DPQ_SERVER_API_STATUS_MAPPING_H_
#define DPQ_SERVER_API_STATUS_MAPPING_H_

#include <string>

#include <grpcpp/server_context.h>
#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace dpq::api {

// Who sees a status. Callers not (yet) authenticated count as analysts.
enum class Audience { kAnalyst, kAdmin };

// The trailing metadata key that carries the request id of a failure whose retry with that id is
// safe (UNAVAILABLE, DEADLINE_EXCEEDED), as it also appears in the message.
inline constexpr char kRequestIdTrailer[] = "dpq-request-id";

// The status `status` is shown as to `audience`:
//   - a retryable database failure (server/base/database_failure.h: unreachable, connection lost,
//     restarting, commit in doubt, conflict) is UNAVAILABLE with the fixed message of its class,
//     saying to retry with the same request id (and naming it when the status carries one);
//   - any other database failure keeps its code, with a fixed message for that code;
//   - INTERNAL (a bug) gets a fixed message;
//   - for kAdmin, each of these is followed by " [detail: <the status's own message>]";
//   - every other status is returned unchanged.
// Payloads are dropped (they never leave dpqd).
absl::Status ForAudience(const absl::Status& status, Audience audience);

// True when ForAudience rewrites the message of `status` (its own text is then logged instead).
bool IsServiceFailure(const absl::Status& status);

// What a handler returns: ForAudience for the caller `call` authenticated as (request_log.h
// NoteCallPrincipal; none noted: kAnalyst), the request id in the trailing metadata
// kRequestIdTrailer when the status names one, and, for a service failure, the status's own
// message and request id handed to the call's log line (request_log.h).
grpc::Status ToGrpcStatus(grpc::ServerContextBase& call, const absl::Status& status);

// "ok", "invalid_argument", "resource_exhausted", ...: the metrics outcome label; "limited" for a
// configured limit (limit_error.h).
std::string OutcomeLabel(const absl::Status& status);

}  // namespace dpq::api

#endif  // DPQ_SERVER_API_STATUS_MAPPING_H_
