// The admin's actions on principals and grants: create analysts and admins, grant datasets (with
// per-analyst caps), revoke, rotate tokens, and the lists of them. Each change appends its
// admin-log entry in the same transaction (store/principal_store.h). No gRPC.
#ifndef DPQ_SERVER_ENGINE_ADMIN_ACCESS_ADMIN_H_
#define DPQ_SERVER_ENGINE_ADMIN_ACCESS_ADMIN_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/optional.h"
#include "server/store/principal_store.h"

namespace dpq::engine {

// A principal and its new token, shown once: only the token's hash is stored.
struct IssuedToken {
  store::Principal principal;
  std::string token;
};

// An analyst's caps on one dataset's budget; unset: no cap.
struct GrantCaps {
  absl::optional<double> epsilon_cap;
  absl::optional<double> delta_cap;
};

// A principal with its grants (revoked ones included).
struct PrincipalAccess {
  store::PrincipalRecord record;
  std::vector<store::GrantRecord> grants;
};

class AccessAdmin {
 public:
  explicit AccessAdmin(store::PrincipalStore* principals) : principals_(principals) {}

  // Logged as "analyst.create" with the role.
  absl::StatusOr<IssuedToken> CreatePrincipal(const store::Principal& admin,
                                              const std::string& name, store::Role role);
  // Grants `analyst` the dataset, logged as "grant" with the caps. INVALID_ARGUMENT names
  // "epsilon_cap" or "delta_cap" for a cap out of range.
  absl::Status Grant(const store::Principal& admin, const std::string& analyst,
                     const std::string& dataset, const GrantCaps& caps);
  // Revokes `name`, logged as "analyst.revoke". FAILED_PRECONDITION when `caller` is `name`.
  absl::Status Revoke(const store::Principal& caller, const std::string& name);
  // A new token for `name` (the old one stops authenticating), logged as "token.rotate".
  absl::StatusOr<IssuedToken> RotateToken(const store::Principal& admin, const std::string& name);
  // Logged as "grant.revoke".
  absl::Status RevokeGrant(const store::Principal& admin, const std::string& analyst,
                           const std::string& dataset);
  // Every principal, each with its grants, in the store's order.
  absl::StatusOr<std::vector<PrincipalAccess>> ListPrincipals();
  // The grants on `dataset`, or on every dataset.
  absl::StatusOr<std::vector<store::GrantRecord>> ListGrants(absl::optional<std::string> dataset);

 private:
  store::PrincipalStore* principals_;
};

}  // namespace dpq::engine

#endif  // DPQ_SERVER_ENGINE_ADMIN_ACCESS_ADMIN_H_
