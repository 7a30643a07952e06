#include "server/api/auth.h"

#include "server/api/request_log.h"
#include "server/base/status_macros.h"

namespace dpq::api {

absl::StatusOr<store::Principal> Authenticate(const engine::Authenticator& auth,
                                              const grpc::ServerContext& context) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) {
    return absl::UnauthenticatedError("missing authorization metadata (expected: Bearer <token>)");
  }
  absl::StatusOr<store::Principal> principal =
      auth.AuthenticateBearer(absl::string_view(it->second.data(), it->second.size()));
  // For the call's log line, and for the wording of its failures (status_mapping.h).
  if (principal.ok())
    NoteCallPrincipal(&context, principal->name, principal->role == store::Role::kAdmin);
  return principal;
}

absl::StatusOr<store::Principal> AuthenticateAdmin(const engine::Authenticator& auth,
                                                   const grpc::ServerContext& context) {
  ASSIGN_OR_RETURN(store::Principal p, Authenticate(auth, context));
  RETURN_IF_ERROR(engine::Authenticator::RequireAdmin(p));
  return p;
}

}  // namespace dpq::api
