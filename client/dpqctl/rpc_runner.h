// The one place dpqctl runs an RPC and reports its outcome, so that every command prints errors
// the same way: the message on stderr and, with --json, {"error": {"code", "message"}} as the
// only document on stdout.
#ifndef DPQ_CLIENT_DPQCTL_RPC_RUNNER_H_
#define DPQ_CLIENT_DPQCTL_RPC_RUNNER_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "client/dpqctl/channel.h"
#include "client/dpqctl/global_options.h"
#include "client/dpqctl/json_output.h"
#include "grpcpp/support/status.h"

namespace dpqctl {

// "OK", "INVALID_ARGUMENT", "RESOURCE_EXHAUSTED", ...; "UNKNOWN" for a code outside the
// canonical set.
std::string StatusCodeName(grpc::StatusCode code);

// Reports a failed call; returns kExitRpcError.
int ReportRpcError(const Output& output, const grpc::Status& status);

// Reports a local error found before anything was sent (code INVALID_ARGUMENT unless `status`
// says otherwise); returns kExitUsageError.
int ReportUsageError(const Output& output, const absl::Status& status);
int ReportUsageError(const Output& output, absl::string_view message);

// Opens a Connection, prepares one ClientContext, and runs
//   grpc::Status call(const std::shared_ptr<grpc::Channel>&, grpc::ClientContext*, Response*)
// On success prints to_json(response) with --json, else to_text(std::ostream&, response).
// Returns the process exit code.
template <typename Response, typename Call, typename ToJson, typename ToText>
int RunRpc(const GlobalOptions& options, const Output& output, double default_timeout_seconds,
           Call&& call, ToJson&& to_json, ToText&& to_text) {
  absl::StatusOr<Connection> connection = Connection::Open(options, default_timeout_seconds);
  if (!connection.ok()) return ReportUsageError(output, connection.status());
  grpc::ClientContext context;
  connection->Prepare(&context);
  Response response;
  grpc::Status status = call(connection->channel(), &context, &response);
  if (!status.ok()) return ReportRpcError(output, status);
  if (output.json) {
    WriteJson(output.out, to_json(response));
  } else {
    to_text(output.out, response);
  }
  return kExitOk;
}

}  // namespace dpqctl

#endif  // DPQ_CLIENT_DPQCTL_RPC_RUNNER_H_
