#include "bench/load/status_names.h"

#include "absl/status/status.h"

namespace dpqbench {

std::string StatusCodeName(grpc::StatusCode code) {
  // grpc::StatusCode and absl::StatusCode share the canonical numbering (google.rpc.Code), and
  // absl spells the names as gRPC documents them.
  const int number = static_cast<int>(code);
  if (number < 0 || number > static_cast<int>(grpc::StatusCode::UNAUTHENTICATED)) {
    return "UNKNOWN_CODE";
  }
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(number));
}

}  // namespace dpqbench
