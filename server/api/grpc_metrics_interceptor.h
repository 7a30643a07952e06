// Counts every finished gRPC call by service, method and status code
// (dpq_grpc_server_handled_total{grpc_service,grpc_method,grpc_code}), for every service dpqd
// serves, health and reflection included, and for calls that never reach a handler (refused
// before it, unimplemented). Methods dpqd does not serve are counted as "unknown": a client
// choosing paths cannot grow the label set.
#ifndef DPQ_SERVER_API_GRPC_METRICS_INTERCEPTOR_H_
#define DPQ_SERVER_API_GRPC_METRICS_INTERCEPTOR_H_

#include <memory>
#include <set>
#include <string>
#include <vector>

#include <grpcpp/support/server_interceptor.h>

#include "absl/strings/string_view.h"
#include "server/metrics/metrics.h"

namespace dpq::api {

// The upper-case canonical name of a gRPC status code ("OK", "RESOURCE_EXHAUSTED").
std::string GrpcCodeName(grpc::StatusCode code);

class RpcMetricsInterceptorFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  // `services`: full names of the protobuf services registered on the server (their methods come
  // from the generated descriptor pool); gRPC's health service is always known.
  RpcMetricsInterceptorFactory(metrics::Metrics* metrics, const std::vector<std::string>& services);

  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;

 private:
  metrics::Metrics* metrics_;
  std::set<std::string, std::less<>> known_;  // "/package.Service/Method"
};

}  // namespace dpq::api

#endif  // DPQ_SERVER_API_GRPC_METRICS_INTERCEPTOR_H_
