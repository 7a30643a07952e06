// Bearer-token authentication: `authorization: Bearer <token>` metadata, looked up by its SHA-256
// (tokens are never stored in clear).
#ifndef DPQ_SERVER_API_AUTH_H_
#define DPQ_SERVER_API_AUTH_H_

#include <string>

#include <grpcpp/server_context.h>

#include "absl/status/statusor.h"
#include "server/store/principal_store.h"

namespace dpq::api {

// 32 random bytes from the CSPRNG, as "dpq_" + 64 hex characters.
std::string NewToken();
// The value stored for a token: SHA-256 of its bytes.
std::string TokenHash(const std::string& token);

class Authenticator {
 public:
  explicit Authenticator(store::PrincipalStore* principals) : principals_(principals) {}

  // UNAUTHENTICATED when the header is missing, malformed or the token unknown.
  absl::StatusOr<store::Principal> Authenticate(const grpc::ServerContext& context) const;
  // As Authenticate, and PERMISSION_DENIED unless the principal is an admin.
  absl::StatusOr<store::Principal> AuthenticateAdmin(const grpc::ServerContext& context) const;

 private:
  store::PrincipalStore* principals_;
};

}  // namespace dpq::api

#endif  // DPQ_SERVER_API_AUTH_H_
