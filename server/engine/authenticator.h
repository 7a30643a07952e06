// Bearer-token authentication: a token is looked up by its SHA-256 (tokens are never stored in
// clear). api/auth.h reads the `authorization` metadata of a call and hands its value here.
#ifndef DPQ_SERVER_ENGINE_AUTHENTICATOR_H_
#define DPQ_SERVER_ENGINE_AUTHENTICATOR_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/engine/recent_callers.h"
#include "server/store/principal_store.h"

namespace dpq::engine {

// 32 random bytes from the CSPRNG, as "dpq_" + 64 hex characters.
std::string NewToken();
// The value stored for a token: SHA-256 of its bytes.
std::string TokenHash(const std::string& token);

class Authenticator {
 public:
  explicit Authenticator(store::PrincipalStore* principals) : principals_(principals) {}

  // The principal of an `authorization` metadata value ("Bearer <token>"). UNAUTHENTICATED when
  // the value is malformed or the token unknown.
  absl::StatusOr<store::Principal> AuthenticateBearer(absl::string_view authorization) const;
  // As AuthenticateBearer for a call whose engine confirms the token in the query's first
  // statement (QueryEngine::Run): an analyst looked up less than 30 s ago is not looked up again
  // but returned with token_to_confirm set (recent_callers.h). Any other call must use
  // AuthenticateBearer: nothing would confirm the token.
  absl::StatusOr<store::Principal> AuthenticateQueryCaller(absl::string_view authorization) const;
  // PERMISSION_DENIED unless `principal` is an admin.
  static absl::Status RequireAdmin(const store::Principal& principal);

 private:
  // The token hash of a well-formed `authorization` value.
  static absl::StatusOr<std::string> BearerTokenHash(absl::string_view authorization);

  store::PrincipalStore* principals_;
  mutable RecentCallers recent_;
};

}  // namespace dpq::engine

#endif  // DPQ_SERVER_ENGINE_AUTHENTICATOR_H_
