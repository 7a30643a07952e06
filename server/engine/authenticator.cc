#include "server/engine/authenticator.h"

#include <cstdint>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/base/sha256.h"
#include "server/base/status_macros.h"
#include "server/dp/secure_random.h"

namespace dpq::engine {

std::string NewToken() {
  std::string bytes;
  for (int i = 0; i < 4; ++i) {
    uint64_t r = dp::SecureRandom().NextUint64();
    bytes.append(reinterpret_cast<const char*>(&r), sizeof(r));
  }
  return absl::StrCat("dpq_", ToHex(bytes));
}

std::string TokenHash(const std::string& token) { return Sha256(token); }

absl::StatusOr<std::string> Authenticator::BearerTokenHash(absl::string_view authorization) {
  constexpr absl::string_view kPrefix = "Bearer ";
  if (!absl::StartsWith(authorization, kPrefix) || authorization.size() == kPrefix.size() ||
      authorization.size() > 512) {
    return absl::UnauthenticatedError(
        "malformed authorization metadata (expected: Bearer <token>)");
  }
  authorization.remove_prefix(kPrefix.size());
  return TokenHash(std::string(authorization));
}

absl::StatusOr<store::Principal> Authenticator::AuthenticateBearer(
    absl::string_view authorization) const {
  ASSIGN_OR_RETURN(const std::string hash, BearerTokenHash(authorization));
  return principals_->FindByTokenHash(hash);
}

absl::StatusOr<store::Principal> Authenticator::AuthenticateQueryCaller(
    absl::string_view authorization) const {
  ASSIGN_OR_RETURN(const std::string hash, BearerTokenHash(authorization));
  const absl::Time now = absl::Now();
  if (absl::optional<store::Principal> known = recent_.Find(hash, now)) return *std::move(known);
  ASSIGN_OR_RETURN(store::Principal p, principals_->FindByTokenHash(hash));
  recent_.Remember(hash, p, now);
  return p;
}

absl::Status Authenticator::RequireAdmin(const store::Principal& principal) {
  if (principal.role != store::Role::kAdmin) {
    return absl::PermissionDeniedError(absl::StrCat(principal.name, " is not an admin"));
  }
  return absl::OkStatus();
}

}  // namespace dpq::engine
