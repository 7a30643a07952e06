#include "client/dpqctl/rpc_runner.h"

#include "absl/status/status.h"

namespace dpqctl {
namespace internal {
namespace {

int Report(const Output& output, absl::string_view code_name, absl::string_view message,
           int exit_code) {
  output.err << "dpqctl: " << code_name << ": " << message << '\n';
  if (output.json) WriteJson(output.out, ErrorToJson(code_name, message));
  return exit_code;
}

}  // namespace
}  // namespace internal

std::string StatusCodeName(grpc::StatusCode code) {
  // grpc::StatusCode and absl::StatusCode share the canonical numbering (google.rpc.Code), and
  // absl spells the names the way gRPC documents them.
  const int number = static_cast<int>(code);
  if (number < 0 || number > static_cast<int>(grpc::StatusCode::UNAUTHENTICATED)) {
    return "UNKNOWN";
  }
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(number));
}

int ReportRpcError(const Output& output, const grpc::Status& status) {
  return internal::Report(output, StatusCodeName(status.error_code()), status.error_message(),
                          kExitRpcError);
}

int ReportUsageError(const Output& output, const absl::Status& status) {
  const absl::StatusCode code = status.ok() ? absl::StatusCode::kInvalidArgument : status.code();
  return internal::Report(output, absl::StatusCodeToString(code), status.message(),
                          kExitUsageError);
}

int ReportUsageError(const Output& output, absl::string_view message) {
  return ReportUsageError(output, absl::InvalidArgumentError(message));
}

}  // namespace dpqctl
