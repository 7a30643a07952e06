#include "server/api/auth.h"

#include "server/api/request_log.h"
#include "server/base/status_macros.h"

namespace dpq::api {

namespace {

absl::StatusOr<store::Principal> AuthenticateCall(const engine::Authenticator& auth,
                                                  const grpc::ServerContext& context,
                                                  bool query_caller) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) {
    return absl::UnauthenticatedError("missing authorization metadata (expected: Bearer <token>)");
  }
  const absl::string_view value(it->second.data(), it->second.size());
  absl::StatusOr<store::Principal> principal =
      query_caller ? auth.AuthenticateQueryCaller(value) : auth.AuthenticateBearer(value);
  // For the call's log line, and for the wording of its failures (status_mapping.h).
  if (principal.ok())
    NoteCallPrincipal(&context, principal->name, principal->role == store::Role::kAdmin);
  return principal;
}

}  // namespace

absl::StatusOr<store::Principal> Authenticate(const engine::Authenticator& auth,
                                              const grpc::ServerContext& context) {
  return AuthenticateCall(auth, context, /*query_caller=*/false);
}

absl::StatusOr<store::Principal> AuthenticateQueryCaller(const engine::Authenticator& auth,
                                                         const grpc::ServerContext& context) {
  return AuthenticateCall(auth, context, /*query_caller=*/true);
}

absl::StatusOr<store::Principal> AuthenticateAdmin(const engine::Authenticator& auth,
                                                   const grpc::ServerContext& context) {
  ASSIGN_OR_RETURN(store::Principal p, Authenticate(auth, context));
  RETURN_IF_ERROR(engine::Authenticator::RequireAdmin(p));
  return p;
}

}  // namespace dpq::api
