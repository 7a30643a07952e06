#include "server/api/grpc_metrics_interceptor.h"

#include <google/protobuf/descriptor.h>

#include "absl/strings/str_cat.h"

namespace dpq::api {
namespace {

class RpcMetricsInterceptor : public grpc::experimental::Interceptor {
 public:
  RpcMetricsInterceptor(metrics::Metrics* metrics, std::string method)
      : metrics_(metrics), method_(std::move(method)) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_STATUS)) {
      metrics_->RecordRpc(method_, GrpcCodeName(methods->GetSendStatus().error_code()));
    }
    methods->Proceed();
  }

 private:
  metrics::Metrics* metrics_;
  const std::string method_;
};

}  // namespace

const char* GrpcCodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return "OK";
    case grpc::StatusCode::CANCELLED: return "CANCELLED";
    case grpc::StatusCode::UNKNOWN: return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED: return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE: return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL: return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS: return "DATA_LOSS";
    default: return "UNKNOWN";
  }
}

RpcMetricsInterceptorFactory::RpcMetricsInterceptorFactory(metrics::Metrics* metrics,
                                                           const std::vector<std::string>& services)
    : metrics_(metrics) {
  // gRPC's built-in health service is not in the generated descriptor pool.
  known_.insert("/grpc.health.v1.Health/Check");
  known_.insert("/grpc.health.v1.Health/Watch");
  for (const std::string& name : services) {
    const google::protobuf::ServiceDescriptor* service =
        google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(name);
    if (service == nullptr) continue;
    for (int i = 0; i < service->method_count(); ++i) {
      known_.insert(absl::StrCat("/", service->full_name(), "/", service->method(i)->name()));
    }
  }
}

grpc::experimental::Interceptor* RpcMetricsInterceptorFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  const char* method = info->method();
  const bool known = method != nullptr && known_.count(absl::string_view(method)) > 0;
  return new RpcMetricsInterceptor(metrics_, known ? method : "unknown");
}

}  // namespace dpq::api
