// gRPC status code names as the gRPC documentation spells them ("RESOURCE_EXHAUSTED").
#ifndef DPQ_BENCH_LOAD_STATUS_NAMES_H_
#define DPQ_BENCH_LOAD_STATUS_NAMES_H_

#include <string>

#include "grpcpp/support/status.h"

namespace dpqbench {

std::string StatusCodeName(grpc::StatusCode code);

}  // namespace dpqbench

#endif  // DPQ_BENCH_LOAD_STATUS_NAMES_H_
