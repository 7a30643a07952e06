#include "server/engine/admin/access_admin.h"

#include <cstdint>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/base/status_macros.h"
#include "server/engine/admin/admin_action.h"
#include "server/engine/authenticator.h"
#include "server/query/privacy_units.h"

namespace dpq::engine {

absl::StatusOr<IssuedToken> AccessAdmin::CreatePrincipal(const store::Principal& admin,
                                                         const std::string& name,
                                                         store::Role role) {
  IssuedToken issued;
  issued.token = NewToken();
  const store::AdminAction log = Logged(
      admin, "analyst.create", name, role == store::Role::kAdmin ? "role=admin" : "role=analyst");
  ASSIGN_OR_RETURN(issued.principal,
                   principals_->Create(name, role, TokenHash(issued.token), &log));
  return issued;
}

absl::Status AccessAdmin::Grant(const store::Principal& admin, const std::string& analyst,
                                const std::string& dataset, const GrantCaps& caps) {
  absl::optional<int64_t> epsilon_cap, delta_cap;
  if (caps.epsilon_cap) {
    ASSIGN_OR_RETURN(epsilon_cap, query::EpsilonToUnits(*caps.epsilon_cap, "epsilon_cap",
                                                        query::kMaxEpsilonBudget));
  }
  if (caps.delta_cap) {
    ASSIGN_OR_RETURN(delta_cap, query::DeltaToUnits(*caps.delta_cap, "delta_cap"));
  }
  std::string details;
  if (caps.epsilon_cap) details = absl::StrFormat("epsilon_cap=%.12g", *caps.epsilon_cap);
  if (caps.delta_cap) {
    absl::StrAppend(&details, details.empty() ? "" : " ",
                    absl::StrFormat("delta_cap=%.12g", *caps.delta_cap));
  }
  const store::AdminAction log =
      Logged(admin, "grant", absl::StrCat(analyst, "/", dataset), details);
  return principals_->Grant(analyst, dataset, epsilon_cap, delta_cap, &log);
}

absl::Status AccessAdmin::Revoke(const store::Principal& caller, const std::string& name) {
  if (name == caller.name) {
    return absl::FailedPreconditionError(
        "an admin cannot revoke itself (another admin can; that keeps one admin able to act)");
  }
  const store::AdminAction log = Logged(caller, "analyst.revoke", name);
  return principals_->Revoke(name, &log);
}

absl::StatusOr<IssuedToken> AccessAdmin::RotateToken(const store::Principal& admin,
                                                     const std::string& name) {
  IssuedToken issued;
  issued.token = NewToken();
  const store::AdminAction log = Logged(admin, "token.rotate", name);
  ASSIGN_OR_RETURN(issued.principal, principals_->RotateToken(name, TokenHash(issued.token), &log));
  return issued;
}

absl::Status AccessAdmin::RevokeGrant(const store::Principal& admin, const std::string& analyst,
                                      const std::string& dataset) {
  const store::AdminAction log = Logged(admin, "grant.revoke", absl::StrCat(analyst, "/", dataset));
  return principals_->RevokeGrant(analyst, dataset, &log);
}

absl::StatusOr<std::vector<PrincipalAccess>> AccessAdmin::ListPrincipals() {
  ASSIGN_OR_RETURN(std::vector<store::PrincipalRecord> principals, principals_->List());
  ASSIGN_OR_RETURN(std::vector<store::GrantRecord> grants, principals_->ListGrants(absl::nullopt));
  std::map<std::string, std::vector<store::GrantRecord>> by_analyst;
  for (store::GrantRecord& g : grants) by_analyst[g.analyst].push_back(std::move(g));
  std::vector<PrincipalAccess> listed;
  listed.reserve(principals.size());
  for (store::PrincipalRecord& p : principals) {
    PrincipalAccess access{std::move(p), {}};
    auto it = by_analyst.find(access.record.principal.name);
    if (it != by_analyst.end()) access.grants = std::move(it->second);
    listed.push_back(std::move(access));
  }
  return listed;
}

absl::StatusOr<std::vector<store::GrantRecord>> AccessAdmin::ListGrants(
    absl::optional<std::string> dataset) {
  return principals_->ListGrants(std::move(dataset));
}

}  // namespace dpq::engine
