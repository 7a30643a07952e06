#include "server/store/principal_store.h"

#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/store/admin_log.h"

namespace dpq::store {
namespace {

const char* RoleName(Role role) { return role == Role::kAdmin ? "admin" : "analyst"; }

Principal FromRow(const pqxx::row& r) {
  return Principal{r[0].as<int64_t>(), r[1].as<std::string>(),
                   r[2].as<std::string>() == "admin" ? Role::kAdmin : Role::kAnalyst};
}

// RFC 3339 UTC of a timestamptz column, '' when NULL.
std::string Rfc3339(absl::string_view column) {
  return absl::StrCat("coalesce(to_char(", column,
                      " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), '')");
}

absl::optional<int64_t> OptionalUnits(const pqxx::field& f) {
  if (f.is_null()) return absl::nullopt;
  return f.as<int64_t>();
}

absl::Status AnalystNotFound(const std::string& name) {
  return absl::NotFoundError(absl::StrCat("analyst ", name.substr(0, 64),
                                          " not found (`dpqctl analyst list` lists them)"));
}

absl::Status DatasetNotFound(const std::string& name) {
  return absl::NotFoundError(absl::StrCat("dataset ", name.substr(0, 64),
                                          " not found (`dpqctl dataset list` lists them)"));
}

}  // namespace

absl::StatusOr<Principal> PrincipalStore::Create(const std::string& name, Role role,
                                                 const std::string& token_sha256,
                                                 const AdminAction* log) {
  Principal p;
  absl::Status status = db_->Run("create analyst", [&](pqxx::connection& c) {
    pqxx::work tx(c);
    p = FromRow(tx.exec_params1(
        "INSERT INTO principals (name, role, token_sha256) VALUES ($1, $2, $3) RETURNING id, name, role",
        name, RoleName(role), pqxx::binarystring(token_sha256)));
    if (log != nullptr) AppendAdminAction(tx, *log);
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
        "ON CONFLICT (name) DO UPDATE SET role = 'admin', token_sha256 = EXCLUDED.token_sha256, "
        "revoked_at = NULL "
        "RETURNING id, name, role",
        name, pqxx::binarystring(token_sha256)));
    tx.commit();
    return absl::OkStatus();
  }));
  return p;
}

absl::Status UnknownOrRevokedToken() {
  return absl::UnauthenticatedError("unknown or revoked token");
}

absl::StatusOr<Principal> PrincipalStore::FindByTokenHash(const std::string& token_sha256) {
  absl::optional<Principal> p;
  bool stale_use = false;
  RETURN_IF_ERROR(db_->Run("authenticate", [&](pqxx::connection& c) {
    // One statement: autocommit, no BEGIN/ROLLBACK round trips, prepared once per connection
    // (parsed and planned once, not on every call: it runs on every RPC).
    c.prepare(
        "dpq_authenticate",
        "SELECT id, name, role, last_used_at IS NULL OR last_used_at < now() - interval '1 minute' "
        "FROM principals WHERE token_sha256 = $1 AND revoked_at IS NULL");
    pqxx::nontransaction tx(c);
    pqxx::result r = tx.exec_prepared("dpq_authenticate", pqxx::binarystring(token_sha256));
    if (!r.empty()) {
      p = FromRow(r[0]);
      stale_use = r[0][3].as<bool>();
    }
    return absl::OkStatus();
  }));
  if (!p) return UnknownOrRevokedToken();
  if (stale_use) {
    // Best effort: a failure to record the use must not refuse a valid token.
    (void)db_->Run("record token use", [&](pqxx::connection& c) {
      pqxx::work tx(c);
      tx.exec_params0("UPDATE principals SET last_used_at = now() WHERE id = $1", p->id);
      tx.commit();
      return absl::OkStatus();
    });
  }
  return *p;
}

absl::StatusOr<std::vector<PrincipalRecord>> PrincipalStore::List() {
  std::vector<PrincipalRecord> out;
  RETURN_IF_ERROR(db_->Run("list analysts", [&](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    for (const pqxx::row& r : tx.exec(absl::StrCat(
             "SELECT id, name, role, ", Rfc3339("created_at"), ", ", Rfc3339("last_used_at"), ", ",
             Rfc3339("revoked_at"), " FROM principals ORDER BY name"))) {
      out.push_back(
          {FromRow(r), r[3].as<std::string>(), r[4].as<std::string>(), r[5].as<std::string>()});
    }
    return absl::OkStatus();
  }));
  return out;
}

absl::StatusOr<std::vector<GrantRecord>> PrincipalStore::ListGrants(
    absl::optional<std::string> dataset) {
  std::vector<GrantRecord> out;
  RETURN_IF_ERROR(db_->Run("list grants", [&](pqxx::connection& c) -> absl::Status {
    pqxx::read_transaction tx(c);
    if (dataset.has_value() &&
        tx.exec_params("SELECT 1 FROM datasets WHERE name = $1 AND dropped_at IS NULL", *dataset)
            .empty()) {
      return DatasetNotFound(*dataset);
    }
    for (const pqxx::row& r : tx.exec_params(
             absl::StrCat("SELECT p.name, d.name, c.epsilon_cap_units, c.delta_cap_units, "
                          "coalesce(g.epsilon_spent_units, 0), coalesce(g.delta_spent_units, 0), ",
                          Rfc3339("gr.created_at"), ", ", Rfc3339("gr.revoked_at"),
                          " FROM grants gr JOIN principals p ON p.id = gr.principal_id "
                          "JOIN datasets d ON d.id = gr.dataset_id "
                          "LEFT JOIN population_caps c ON c.population_id = d.population_id "
                          "AND c.principal_id = gr.principal_id "
                          "LEFT JOIN cap_spend g ON g.population_id = d.population_id "
                          "AND g.principal_id = gr.principal_id "
                          "WHERE d.dropped_at IS NULL AND ($1 = '' OR d.name = $1) "
                          "ORDER BY d.name, p.name"),
             dataset.value_or(""))) {
      out.push_back({r[0].as<std::string>(), r[1].as<std::string>(), OptionalUnits(r[2]),
                     OptionalUnits(r[3]), r[4].as<int64_t>(), r[5].as<int64_t>(),
                     r[6].as<std::string>(), r[7].as<std::string>()});
    }
    return absl::OkStatus();
  }));
  return out;
}

absl::Status PrincipalStore::Revoke(const std::string& name, const AdminAction* log) {
  return db_->Run("revoke analyst", [&](pqxx::connection& c) -> absl::Status {
    pqxx::work tx(c);
    pqxx::result r = tx.exec_params(absl::StrCat("SELECT ", Rfc3339("revoked_at"),
                                                 " FROM principals WHERE name = $1 FOR UPDATE"),
                                    name);
    if (r.empty()) return AnalystNotFound(name);
    if (!r[0][0].as<std::string>().empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "analyst ", name, " is already revoked (since ", r[0][0].as<std::string>(), ")"));
    }
    tx.exec_params0("UPDATE principals SET revoked_at = now() WHERE name = $1", name);
    if (log != nullptr) AppendAdminAction(tx, *log);
    tx.commit();
    return absl::OkStatus();
  });
}

absl::StatusOr<Principal> PrincipalStore::RotateToken(const std::string& name,
                                                      const std::string& token_sha256,
                                                      const AdminAction* log) {
  Principal p;
  RETURN_IF_ERROR(db_->Run("rotate token", [&](pqxx::connection& c) -> absl::Status {
    pqxx::work tx(c);
    pqxx::result r = tx.exec_params(
        "SELECT id, name, role, revoked_at IS NOT NULL FROM principals WHERE name = $1 FOR UPDATE",
        name);
    if (r.empty()) return AnalystNotFound(name);
    if (r[0][3].as<bool>()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "analyst ", name, " is revoked: its token cannot be rotated (create a new analyst)"));
    }
    p = FromRow(r[0]);
    tx.exec_params0("UPDATE principals SET token_sha256 = $2 WHERE id = $1", p.id,
                    pqxx::binarystring(token_sha256));
    if (log != nullptr) AppendAdminAction(tx, *log);
    tx.commit();
    return absl::OkStatus();
  }));
  return p;
}

absl::Status PrincipalStore::RevokeGrant(const std::string& analyst, const std::string& dataset,
                                         const AdminAction* log) {
  return db_->Run("revoke grant", [&](pqxx::connection& c) -> absl::Status {
    pqxx::work tx(c);
    if (tx.exec_params("SELECT 1 FROM principals WHERE name = $1", analyst).empty()) {
      return AnalystNotFound(analyst);
    }
    if (tx.exec_params("SELECT 1 FROM datasets WHERE name = $1 AND dropped_at IS NULL", dataset)
            .empty()) {
      return DatasetNotFound(dataset);
    }
    const pqxx::result r = tx.exec_params(
        "UPDATE grants g SET revoked_at = now() FROM principals p, datasets d "
        "WHERE g.principal_id = p.id AND g.dataset_id = d.id AND p.name = $1 AND d.name = $2 "
        "AND d.dropped_at IS NULL AND g.revoked_at IS NULL RETURNING 1",
        analyst, dataset);
    if (r.empty()) {
      return absl::NotFoundError(absl::StrCat("analyst ", analyst, " holds no grant on dataset ",
                                              dataset, " (`dpqctl grant list ", dataset, "`)"));
    }
    if (log != nullptr) AppendAdminAction(tx, *log);
    tx.commit();
    return absl::OkStatus();
  });
}

absl::StatusOr<int64_t> PrincipalStore::SchemaVersion() {
  int64_t version = 0;
  RETURN_IF_ERROR(db_->Run("schema version", [&](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    version = tx.exec1("SELECT coalesce(max(version), 0) FROM schema_migrations")[0].as<int64_t>();
    return absl::OkStatus();
  }));
  return version;
}

absl::Status PrincipalStore::Grant(const std::string& analyst, const std::string& dataset,
                                   absl::optional<int64_t> epsilon_cap_units,
                                   absl::optional<int64_t> delta_cap_units,
                                   const AdminAction* log) {
  return db_->Run("grant", [&](pqxx::connection& c) -> absl::Status {
    pqxx::work tx(c);
    pqxx::result a = tx.exec_params(
        "SELECT id, revoked_at IS NOT NULL FROM principals WHERE name = $1", analyst);
    if (a.empty()) return AnalystNotFound(analyst);
    if (a[0][1].as<bool>()) {
      return absl::FailedPreconditionError(absl::StrCat("analyst ", analyst, " is revoked"));
    }
    pqxx::result d = tx.exec_params(
        "SELECT id, population_id, is_public FROM datasets WHERE name = $1 AND dropped_at IS NULL",
        dataset);
    if (d.empty()) return DatasetNotFound(dataset);  // a dropped dataset can be granted no more
    if (d[0][2].as<bool>()) {
      return absl::InvalidArgumentError(
          absl::StrCat("dataset ", dataset,
                       " is a public table: it needs no grant (any analyst may join it) "
                       "and is never queried on its own"));
    }
    const int64_t principal_id = a[0][0].as<int64_t>();
    const int64_t dataset_id = d[0][0].as<int64_t>();
    const int64_t population_id = d[0][1].as<int64_t>();
    tx.exec_params0(
        "INSERT INTO grants (principal_id, dataset_id) VALUES ($1, $2) "
        "ON CONFLICT (principal_id, dataset_id) DO UPDATE SET revoked_at = NULL",
        principal_id, dataset_id);
    // The analyst's cap and spend on the population: one row however many of its datasets are
    // granted, kept across revokes (a cap cannot be reset by revoking and granting again).
    tx.exec_params0(
        "INSERT INTO population_caps (principal_id, population_id) VALUES ($1, $2) "
        "ON CONFLICT DO NOTHING",
        principal_id, population_id);
    if (epsilon_cap_units || delta_cap_units) {
      // Locked like a debit does, so a cap change and a charge cannot interleave: the debit
      // writes the analyst's block spends (block_caps) only under this row's lock too.
      tx.exec_params1(
          "SELECT 1 FROM population_caps WHERE principal_id = $1 AND population_id = $2 FOR UPDATE",
          principal_id, population_id);
      // What counts against the cap (migration 0017): on a per-block population, the most spent
      // in any one block.
      pqxx::row g = tx.exec_params1(
          "SELECT epsilon_spent_units, delta_spent_units FROM cap_spend "
          "WHERE principal_id = $1 AND population_id = $2",
          principal_id, population_id);
      if ((epsilon_cap_units && *epsilon_cap_units < g[0].as<int64_t>()) ||
          (delta_cap_units && *delta_cap_units < g[1].as<int64_t>())) {
        return absl::FailedPreconditionError(absl::StrCat(
            "a cap cannot go below what analyst ", analyst,
            " already spent on the population of dataset ", dataset,
            " (with time blocks: in the block where the analyst spent most); choose a cap at "
            "least that large (`dpqctl grant list ",
            dataset, "` shows the spend)"));
      }
      const std::string eps = epsilon_cap_units ? absl::StrCat(*epsilon_cap_units) : "";
      const std::string del = delta_cap_units ? absl::StrCat(*delta_cap_units) : "";
      tx.exec_params0(
          "UPDATE population_caps SET "
          "epsilon_cap_units = coalesce(nullif($3, '')::bigint, epsilon_cap_units), "
          "delta_cap_units = coalesce(nullif($4, '')::bigint, delta_cap_units) "
          "WHERE principal_id = $1 AND population_id = $2",
          principal_id, population_id, eps, del);
    }
    if (log != nullptr) AppendAdminAction(tx, *log);
    tx.commit();
    return absl::OkStatus();
  });
}

absl::StatusOr<bool> PrincipalStore::HasGrant(int64_t principal_id, int64_t dataset_id) {
  bool granted = false;
  RETURN_IF_ERROR(db_->Run("check grant", [&](pqxx::connection& c) {
    // One statement: autocommit, no BEGIN/ROLLBACK round trips (it runs on every query).
    pqxx::nontransaction tx(c);
    granted = !tx.exec_params(
                     "SELECT 1 FROM grants WHERE principal_id = $1 AND dataset_id = $2 "
                     "AND revoked_at IS NULL",
                     principal_id, dataset_id)
                   .empty();
    return absl::OkStatus();
  }));
  return granted;
}

}  // namespace dpq::store
