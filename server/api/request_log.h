// One log line per RPC (issue 13, structured logs): `rpc`, `status`, `duration_ms`, and, when
// known, `analyst` (the authenticated principal), `dataset` and `request_id` (from the request).
// Never a token or a row value: the request's other fields are not logged, and a response never.
// A server interceptor sees every call, so no handler can forget to log; the principal's name is
// handed over by the Authenticator through NoteCallPrincipal.
#ifndef DPQ_SERVER_API_REQUEST_LOG_H_
#define DPQ_SERVER_API_REQUEST_LOG_H_

#include <memory>
#include <string>

#include <grpcpp/server_context.h>
#include <grpcpp/support/server_interceptor.h>

namespace dpq::api {

// Remembers which principal a call authenticated as, until the call's log line is written.
void NoteCallPrincipal(const grpc::ServerContextBase* call, const std::string& name);

class RequestLogFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;
};

}  // namespace dpq::api

#endif  // DPQ_SERVER_API_REQUEST_LOG_H_
