#include "server/api/status_mapping.h"

#include "absl/strings/ascii.h"
#include "server/base/limit_error.h"

namespace dpq::api {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

std::string OutcomeLabel(const absl::Status& status) {
  if (IsLimitError(status)) return "limited";  // not a budget rejection (limit_error.h)
  return absl::AsciiStrToLower(absl::StatusCodeToString(status.code()));
}

}  // namespace dpq::api
