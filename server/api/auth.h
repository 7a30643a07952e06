// The caller of a gRPC call: its `authorization: Bearer <token>` metadata, checked by
// engine::Authenticator (server/engine/authenticator.h).
#ifndef DPQ_SERVER_API_AUTH_H_
#define DPQ_SERVER_API_AUTH_H_

#include <grpcpp/server_context.h>

#include "absl/status/statusor.h"
#include "server/engine/authenticator.h"

namespace dpq::api {

// UNAUTHENTICATED when the header is missing, malformed or the token unknown.
absl::StatusOr<store::Principal> Authenticate(const engine::Authenticator& auth,
                                              const grpc::ServerContext& context);
// As Authenticate for a call whose engine confirms the token in its query's first statement
// (engine::Authenticator::AuthenticateQueryCaller): only the Query call.
absl::StatusOr<store::Principal> AuthenticateQueryCaller(const engine::Authenticator& auth,
                                                         const grpc::ServerContext& context);
// As Authenticate, and PERMISSION_DENIED unless the principal is an admin.
absl::StatusOr<store::Principal> AuthenticateAdmin(const engine::Authenticator& auth,
                                                   const grpc::ServerContext& context);

}  // namespace dpq::api

#endif  // DPQ_SERVER_API_AUTH_H_
