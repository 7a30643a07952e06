// Admins and analysts, their token hashes and their dataset grants.
#ifndef DPQ_SERVER_STORE_PRINCIPAL_STORE_H_
#define DPQ_SERVER_STORE_PRINCIPAL_STORE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/optional.h"
#include "server/store/database.h"

namespace dpq::store {

enum class Role { kAnalyst, kAdmin };

struct Principal {
  int64_t id = 0;
  std::string name;
  Role role = Role::kAnalyst;
};

class PrincipalStore {
 public:
  explicit PrincipalStore(Database* db) : db_(db) {}

  // ALREADY_EXISTS when the name is taken.
  absl::StatusOr<Principal> Create(const std::string& name, Role role, const std::string& token_sha256);
  // Creates or re-keys the bootstrap admin `name` (its token comes from the operator at start-up).
  absl::StatusOr<Principal> UpsertAdmin(const std::string& name, const std::string& token_sha256);
  // UNAUTHENTICATED when no principal holds this token hash.
  absl::StatusOr<Principal> FindByTokenHash(const std::string& token_sha256);
  // NOT_FOUND for an unknown analyst or dataset. Granting twice keeps one grant; caps (units of
  // privacy_units.h) given here replace the stored ones, absent ones are kept. FAILED_PRECONDITION
  // when a cap would fall below what the analyst already spent on the dataset.
  absl::Status Grant(const std::string& analyst, const std::string& dataset,
                     absl::optional<int64_t> epsilon_cap_units = absl::nullopt,
                     absl::optional<int64_t> delta_cap_units = absl::nullopt);
  absl::StatusOr<bool> HasGrant(int64_t principal_id, int64_t dataset_id);

 private:
  Database* db_;
};

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_PRINCIPAL_STORE_H_
