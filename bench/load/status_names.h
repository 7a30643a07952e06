// gRPC status code names as the gRPC documentation spells them ("RESOURCE_EXHAUSTED").
#ifndef DPQ_BENCH_LOAD_STATUS_NAMES_H_
#define DPQ_BENCH_LOAD_STATUS_NAMES_H_

#include "absl/strings/string_view.h"
#include "grpcpp/support/status.h"

namespace dpqbench {

absl::string_view StatusCodeName(grpc::StatusCode code);

}  // namespace dpqbench

#endif  // DPQ_BENCH_LOAD_STATUS_NAMES_H_
