#include "server/api/grpc_metrics_interceptor.h"

#include <google/protobuf/descriptor.h>

#include "absl/status/status.h"
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

std::string GrpcCodeName(grpc::StatusCode code) {
  // grpc::StatusCode and absl::StatusCode share the canonical numbering (google.rpc.Code), and
  // absl spells the names as gRPC documents them.
  const int number = static_cast<int>(code);
  if (number < 0 || number > static_cast<int>(grpc::StatusCode::UNAUTHENTICATED)) return "UNKNOWN";
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(number));
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
