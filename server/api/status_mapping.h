// absl::Status -> grpc::Status. The codes are the same set (both follow google.rpc.Code), so the
// mapping is one-to-one; messages pass through unchanged (they never contain row data).
#ifndef DPQ_SERVER_API_STATUS_MAPPING_H_
#define DPQ_SERVER_API_STATUS_MAPPING_H_

#include <string>

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace dpq::api {

grpc::Status ToGrpcStatus(const absl::Status& status);

// "ok", "invalid_argument", "resource_exhausted", ...: the metrics outcome label; "limited" for a
// configured limit (limit_error.h).
std::string OutcomeLabel(const absl::Status& status);

}  // namespace dpq::api

#endif  // DPQ_SERVER_API_STATUS_MAPPING_H_
