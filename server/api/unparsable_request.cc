#include "server/api/unparsable_request.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace dpq::api {
namespace {

using grpc::experimental::InterceptionHookPoints;

class UnparsableRequestInterceptor final : public grpc::experimental::Interceptor {
 public:
  explicit UnparsableRequestInterceptor(grpc::experimental::ServerRpcInfo* info) : info_(info) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    // The sync server deserializes a unary request before the handler runs and hands the
    // interceptors a null message when that failed; the handler is then skipped and the call
    // finishes with the deserializer's INTERNAL status, which is rewritten here.
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE) &&
        methods->GetRecvMessage() == nullptr) {
      unparsable_ = true;
    }
    if (unparsable_ &&
        methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS) &&
        methods->GetSendStatus().error_code() == grpc::StatusCode::INTERNAL) {
      methods->ModifySendStatus(grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          absl::StrCat("the request is not a valid protobuf message for ", info_->method(),
                       " (malformed wire data, or a string field that is not UTF-8)")));
    }
    methods->Proceed();
  }

 private:
  grpc::experimental::ServerRpcInfo* info_;
  bool unparsable_ = false;
};

}  // namespace

grpc::experimental::Interceptor* UnparsableRequestInterceptorFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  if (info->type() != grpc::experimental::ServerRpcInfo::Type::UNARY) return nullptr;
  return new UnparsableRequestInterceptor(info);
}

}  // namespace dpq::api
