#include "server/api/auth.h"

#include "absl/strings/match.h"
#include "server/api/request_log.h"
#include "absl/strings/str_cat.h"
#include "server/base/sha256.h"
#include "server/base/status_macros.h"
#include "server/dp/secure_random.h"

namespace dpq::api {

std::string NewToken() {
  std::string bytes;
  for (int i = 0; i < 4; ++i) {
    uint64_t r = dp::SecureRandom().NextUint64();
    bytes.append(reinterpret_cast<const char*>(&r), sizeof(r));
  }
  return absl::StrCat("dpq_", ToHex(bytes));
}

std::string TokenHash(const std::string& token) { return Sha256(token); }

absl::StatusOr<store::Principal> Authenticator::Authenticate(const grpc::ServerContext& context) const {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) {
    return absl::UnauthenticatedError("missing authorization metadata (expected: Bearer <token>)");
  }
  absl::string_view value(it->second.data(), it->second.size());
  constexpr absl::string_view kPrefix = "Bearer ";
  if (!absl::StartsWith(value, kPrefix) || value.size() == kPrefix.size() || value.size() > 512) {
    return absl::UnauthenticatedError("malformed authorization metadata (expected: Bearer <token>)");
  }
  value.remove_prefix(kPrefix.size());
  absl::StatusOr<store::Principal> principal = principals_->FindByTokenHash(TokenHash(std::string(value)));
  // For the call's log line, and for the wording of its failures (status_mapping.h).
  if (principal.ok()) NoteCallPrincipal(&context, principal->name, principal->role == store::Role::kAdmin);
  return principal;
}

absl::StatusOr<store::Principal> Authenticator::AuthenticateAdmin(const grpc::ServerContext& context) const {
  ASSIGN_OR_RETURN(store::Principal p, Authenticate(context));
  if (p.role != store::Role::kAdmin) {
    return absl::PermissionDeniedError(absl::StrCat(p.name, " is not an admin"));
  }
  return p;
}

}  // namespace dpq::api
