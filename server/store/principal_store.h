// Admins and analysts, their token hashes and their dataset grants.
#ifndef DPQ_SERVER_STORE_PRINCIPAL_STORE_H_
#define DPQ_SERVER_STORE_PRINCIPAL_STORE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/optional.h"
#include "server/store/audit_chain.h"
#include "server/store/database.h"

namespace dpq::store {

enum class Role { kAnalyst, kAdmin };

struct Principal {
  int64_t id = 0;
  std::string name;
  Role role = Role::kAnalyst;
  // Empty when the principal was just read by its token. Set to the token's SHA-256 when a query
  // call was admitted on a principal remembered from a recent lookup (engine/recent_callers.h):
  // the query's first statement must then confirm that this token still names it, unrevoked.
  std::string token_to_confirm;
};

// A principal as `dpqctl analyst list` shows it. Times are RFC 3339 UTC; empty when unset.
// UNAUTHENTICATED for a token that names no principal, or a revoked one: the same status
// whichever it is, and wherever the token is checked.
absl::Status UnknownOrRevokedToken();

struct PrincipalRecord {
  Principal principal;
  std::string created_at;
  std::string last_used_at;  // written at most once a minute per principal
  std::string revoked_at;
};

// One grant, in force or revoked, with the analyst's spend against its cap (units of
// privacy_units.h): on the population, or with time blocks in the block where it is largest.
struct GrantRecord {
  std::string analyst;
  std::string dataset;
  absl::optional<int64_t> epsilon_cap_units, delta_cap_units;  // nullopt: no cap
  int64_t epsilon_spent_units = 0, delta_spent_units = 0;
  std::string created_at;
  std::string revoked_at;  // empty while in force
};

// Mutating calls take an optional AdminAction, appended to the admin log (admin_log.h) in the same
// transaction as the change.
class PrincipalStore {
 public:
  explicit PrincipalStore(Database* db) : db_(db) {}

  // ALREADY_EXISTS when the name is taken.
  absl::StatusOr<Principal> Create(const std::string& name, Role role,
                                   const std::string& token_sha256,
                                   const AdminAction* log = nullptr);
  // Creates or re-keys the bootstrap admin `name` (its token comes from the operator at start-up).
  absl::StatusOr<Principal> UpsertAdmin(const std::string& name, const std::string& token_sha256);
  // UNAUTHENTICATED when no principal that is not revoked holds this token hash (one message for
  // both, so a caller cannot tell a revoked token from a wrong one). Records the use (last_used_at)
  // at most once a minute.
  absl::StatusOr<Principal> FindByTokenHash(const std::string& token_sha256);
  // Every principal, revoked ones included, by name.
  absl::StatusOr<std::vector<PrincipalRecord>> List();
  // Every grant (of `dataset` only, when given), revoked ones included, by dataset then analyst.
  // NOT_FOUND for an unknown dataset.
  absl::StatusOr<std::vector<GrantRecord>> ListGrants(absl::optional<std::string> dataset);
  // Revokes `name`: its token stops authenticating; its audit rows and grants stay. NOT_FOUND for
  // an unknown name, FAILED_PRECONDITION when already revoked.
  absl::Status Revoke(const std::string& name, const AdminAction* log = nullptr);
  // Replaces `name`'s token hash. NOT_FOUND, or FAILED_PRECONDITION for a revoked principal.
  absl::StatusOr<Principal> RotateToken(const std::string& name, const std::string& token_sha256,
                                        const AdminAction* log = nullptr);
  // Ends `analyst`'s grant on `dataset`, keeping its spend. NOT_FOUND when no grant is in force.
  absl::Status RevokeGrant(const std::string& analyst, const std::string& dataset,
                           const AdminAction* log = nullptr);
  // NOT_FOUND for an unknown analyst or dataset. Granting twice keeps one grant (a revoked one is
  // restored, with its spend); caps (units of privacy_units.h) given here replace the stored ones,
  // absent ones are kept. FAILED_PRECONDITION when a cap would fall below what the analyst already
  // spent on the dataset, or when the analyst is revoked.
  absl::Status Grant(const std::string& analyst, const std::string& dataset,
                     absl::optional<int64_t> epsilon_cap_units = absl::nullopt,
                     absl::optional<int64_t> delta_cap_units = absl::nullopt,
                     const AdminAction* log = nullptr);
  // True when a grant in force exists.
  absl::StatusOr<bool> HasGrant(int64_t principal_id, int64_t dataset_id);
  // The highest migration applied to the database (schema_migrations).
  absl::StatusOr<int64_t> SchemaVersion();

 private:
  Database* db_;
};

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_PRINCIPAL_STORE_H_
