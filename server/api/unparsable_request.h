// A request that does not parse as its method's protobuf message (invalid UTF-8 in a `string`
// field, a wrong wire type, a truncated message) is INVALID_ARGUMENT naming the method. gRPC's own
// answer is INTERNAL with an empty message (grpcpp GenericDeserialize), which says "the server
// failed" for what is the caller's malformed request.
//
// Unary methods only: gRPC's sync streaming reader reports an unparsable message like the end of
// the stream, indistinguishably to an interceptor.
#ifndef DPQ_SERVER_API_UNPARSABLE_REQUEST_H_
#define DPQ_SERVER_API_UNPARSABLE_REQUEST_H_

#include <grpcpp/support/server_interceptor.h>

namespace dpq::api {

class UnparsableRequestInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;
};

}  // namespace dpq::api

#endif  // DPQ_SERVER_API_UNPARSABLE_REQUEST_H_
