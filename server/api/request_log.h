// One log line per RPC: `rpc`, `status`, `duration_ms`, and, when known, `analyst` (the
// authenticated principal), `dataset` and `request_id` (from the request, or the one the server
// drew when a failure names it), and `error`, the own message of a failure of the service that
// the caller saw as a fixed message (status_mapping.h): driver text, SQLSTATE, host and port,
// which the operator matches to the call by its request id. Never a token or a row value: the
// request's other fields are not logged, a response never, and store messages are built without
// row data (store/postgres/pqxx_status.h). A server interceptor sees every call, so no handler can
// forget to log; the principal is handed over by the Authenticator through NoteCallPrincipal.
#ifndef DPQ_SERVER_API_REQUEST_LOG_H_
#define DPQ_SERVER_API_REQUEST_LOG_H_

#include <memory>
#include <string>

#include <grpcpp/server_context.h>
#include <grpcpp/support/server_interceptor.h>

namespace dpq::api {

// Remembers which principal a call authenticated as (and whether it is an admin), until the
// call's log line is written.
void NoteCallPrincipal(const grpc::ServerContextBase* call, const std::string& name, bool admin);
// Whether `call` authenticated as an admin (false before or without authentication).
bool CallIsAdmin(const grpc::ServerContextBase* call);
// The own message of the failure `call` ends with, and its request id ("" if none), for the
// call's log line.
void NoteCallFailure(const grpc::ServerContextBase* call, const std::string& detail,
                     const std::string& request_id);

class RequestLogFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;
};

}  // namespace dpq::api

#endif  // DPQ_SERVER_API_REQUEST_LOG_H_
