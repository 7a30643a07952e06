#include "server/store/principal_store.h"

#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"

namespace dpq::store {
namespace {

const char* RoleName(Role role) { return role == Role::kAdmin ? "admin" : "analyst"; }

Principal FromRow(const pqxx::row& r) {
  return Principal{r[0].as<int64_t>(), r[1].as<std::string>(),
                   r[2].as<std::string>() == "admin" ? Role::kAdmin : Role::kAnalyst};
}

}  // namespace

absl::StatusOr<Principal> PrincipalStore::Create(const std::string& name, Role role,
                                                 const std::string& token_sha256) {
  Principal p;
  absl::Status status = db_->Run("create analyst", [&](pqxx::connection& c) {
    pqxx::work tx(c);
    p = FromRow(tx.exec_params1(
        "INSERT INTO principals (name, role, token_sha256) VALUES ($1, $2, $3) RETURNING id, name, role",
        name, RoleName(role), pqxx::binarystring(token_sha256)));
    tx.commit();
    return absl::OkStatus();
  });
  if (status.code() == absl::StatusCode::kAlreadyExists) {
    return absl::AlreadyExistsError(absl::StrCat("analyst ", name, " already exists"));
  }
  RETURN_IF_ERROR(status);
  return p;
}

absl::StatusOr<Principal> PrincipalStore::UpsertAdmin(const std::string& name,
                                                      const std::string& token_sha256) {
  Principal p;
  RETURN_IF_ERROR(db_->Run("bootstrap admin", [&](pqxx::connection& c) {
    pqxx::work tx(c);
    p = FromRow(tx.exec_params1(
        "INSERT INTO principals (name, role, token_sha256) VALUES ($1, 'admin', $2) "
        "ON CONFLICT (name) DO UPDATE SET role = 'admin', token_sha256 = EXCLUDED.token_sha256 "
        "RETURNING id, name, role",
        name, pqxx::binarystring(token_sha256)));
    tx.commit();
    return absl::OkStatus();
  }));
  return p;
}

absl::StatusOr<Principal> PrincipalStore::FindByTokenHash(const std::string& token_sha256) {
  absl::optional<Principal> p;
  RETURN_IF_ERROR(db_->Run("authenticate", [&](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    pqxx::result r = tx.exec_params("SELECT id, name, role FROM principals WHERE token_sha256 = $1",
                                    pqxx::binarystring(token_sha256));
    if (!r.empty()) p = FromRow(r[0]);
    return absl::OkStatus();
  }));
  if (!p) return absl::UnauthenticatedError("unknown token");
  return *p;
}

absl::Status PrincipalStore::Grant(const std::string& analyst, const std::string& dataset,
                                   absl::optional<int64_t> epsilon_cap_units,
                                   absl::optional<int64_t> delta_cap_units) {
  return db_->Run("grant", [&](pqxx::connection& c) -> absl::Status {
    pqxx::work tx(c);
    pqxx::result a = tx.exec_params("SELECT id FROM principals WHERE name = $1", analyst);
    if (a.empty()) return absl::NotFoundError(absl::StrCat("analyst ", analyst.substr(0, 64), " not found"));
    pqxx::result d = tx.exec_params("SELECT id FROM datasets WHERE name = $1", dataset);
    if (d.empty()) return absl::NotFoundError(absl::StrCat("dataset ", dataset.substr(0, 64), " not found"));
    const int64_t principal_id = a[0][0].as<int64_t>();
    const int64_t dataset_id = d[0][0].as<int64_t>();
    tx.exec_params0(
        "INSERT INTO grants (principal_id, dataset_id) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        principal_id, dataset_id);
    if (epsilon_cap_units || delta_cap_units) {
      // Locked like a debit does, so a cap change and a charge cannot interleave.
      pqxx::row g = tx.exec_params1(
          "SELECT epsilon_spent_units, delta_spent_units FROM grants "
          "WHERE principal_id = $1 AND dataset_id = $2 FOR UPDATE",
          principal_id, dataset_id);
      if ((epsilon_cap_units && *epsilon_cap_units < g[0].as<int64_t>()) ||
          (delta_cap_units && *delta_cap_units < g[1].as<int64_t>())) {
        return absl::FailedPreconditionError(absl::StrCat(
            "a cap cannot go below what analyst ", analyst, " already spent on dataset ", dataset));
      }
      const std::string eps = epsilon_cap_units ? absl::StrCat(*epsilon_cap_units) : "";
      const std::string del = delta_cap_units ? absl::StrCat(*delta_cap_units) : "";
      tx.exec_params0(
          "UPDATE grants SET epsilon_cap_units = coalesce(nullif($3, '')::bigint, epsilon_cap_units), "
          "delta_cap_units = coalesce(nullif($4, '')::bigint, delta_cap_units) "
          "WHERE principal_id = $1 AND dataset_id = $2",
          principal_id, dataset_id, eps, del);
    }
    tx.commit();
    return absl::OkStatus();
  });
}

absl::StatusOr<bool> PrincipalStore::HasGrant(int64_t principal_id, int64_t dataset_id) {
  bool granted = false;
  RETURN_IF_ERROR(db_->Run("check grant", [&](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    granted = !tx.exec_params("SELECT 1 FROM grants WHERE principal_id = $1 AND dataset_id = $2",
                              principal_id, dataset_id)
                   .empty();
    return absl::OkStatus();
  }));
  return granted;
}

}  // namespace dpq::store
