// The deadline of a gRPC call as an absl::Time, for the engine and stores, which stop work (and
// charge nothing when they stop before the debit) once it passes.
#ifndef DPQ_SERVER_API_CALL_DEADLINE_H_
#define DPQ_SERVER_API_CALL_DEADLINE_H_

#include "absl/time/time.h"
#include "grpcpp/server_context.h"

namespace dpq::api {

// gRPC reports "no deadline" as the largest time_point (or close to it): InfiniteFuture then.
absl::Time CallDeadline(const grpc::ServerContext& context);

}  // namespace dpq::api

#endif  // DPQ_SERVER_API_CALL_DEADLINE_H_
