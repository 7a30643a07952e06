// Which schema a query reads: the dataset the analyst may query (grant, public tables refused
// alone), or the joined schema of the tables a statement joins.
#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/engine/query_engine.h"
#include "server/query/join_source.h"

namespace dpq::engine {

absl::StatusOr<query::DatasetSchema> QueryEngine::AuthorizedDataset(
    const store::Principal& principal, const std::string& dataset) {
  ASSIGN_OR_RETURN(LookedUp found, GrantedDataset(principal, dataset, /*refuse_public=*/false));
  return std::move(found.schema);
}

absl::StatusOr<query::DatasetSchema> QueryEngine::QueriedDataset(const store::Principal& principal,
                                                                 const std::string& dataset) {
  ASSIGN_OR_RETURN(LookedUp found, GrantedDataset(principal, dataset, /*refuse_public=*/true));
  return std::move(found.schema);
}

absl::StatusOr<QueryEngine::LookedUp> QueryEngine::GrantedDataset(
    const store::Principal& principal, const std::string& dataset, bool refuse_public,
    const std::string& probe_fingerprint) {
  // A public table has no privacy unit and no ledger: a query of it alone would release nothing
  // private and charge no one, so it is refused (before the grant: a public table is public, and
  // the answer must not depend on who asks), whatever the caller's role.
  const auto public_alone = [](const std::string& name) {
    return absl::InvalidArgumentError(
        absl::StrCat("dataset ", name,
                     " is a public table: it is only ever joined to a private dataset (FROM d "
                     "JOIN ",
                     name, " ON ...), never queried alone"));
  };
  if (principal.role == store::Role::kAdmin) {
    RETURN_IF_ERROR(ConfirmCaller(principal));  // admins are never remembered: a no-op
    ASSIGN_OR_RETURN(query::DatasetSchema schema, stores_.datasets->Get(dataset));
    if (refuse_public && schema.is_public) return public_alone(schema.name);
    return LookedUp{std::move(schema), absl::nullopt};
  }
  // The schema, the grant, the remembered caller's token and the cache probe in one statement (a
  // round trip on every query, where they were three).
  absl::StatusOr<store::DatasetStore::Granted> found = stores_.datasets->GetWithGrant(
      dataset, {principal.id, principal.token_to_confirm, probe_fingerprint});
  if (absl::IsNotFound(found.status())) {
    // The statement read nothing but the dataset's absence: an unconfirmed token hears of it only
    // once it is confirmed, as when it was looked up first.
    RETURN_IF_ERROR(ConfirmCaller(principal));
  }
  if (!found.ok()) return found.status();
  if (!found->caller_confirmed) return store::UnknownOrRevokedToken();
  if (refuse_public && found->schema.is_public) return public_alone(found->schema.name);
  if (!found->granted) {
    return absl::PermissionDeniedError(absl::StrCat(
        "analyst ", principal.name, " has no grant on dataset ", found->schema.name,
        ": ask an admin to run `dpqctl grant ", principal.name, " ", found->schema.name, "`"));
  }
  return LookedUp{std::move(found->schema), std::move(found->probed)};
}

absl::StatusOr<std::vector<query::DatasetSchema>> QueryEngine::JoinedTables(
    const store::Principal& principal, const query::JoinRequest& join) {
  std::vector<query::DatasetSchema> out;
  for (const query::JoinRequest::Table& t : join.tables) {
    ASSIGN_OR_RETURN(query::DatasetSchema schema, stores_.datasets->Get(t.dataset));
    if (!schema.is_public) {
      ASSIGN_OR_RETURN(schema, AuthorizedDataset(principal, t.dataset));
    }
    out.push_back(std::move(schema));
  }
  return out;
}

absl::StatusOr<query::DatasetSchema> QueryEngine::SchemaFor(const store::Principal& principal,
                                                            const query::QuerySpec& spec) {
  if (spec.join == nullptr) return QueriedDataset(principal, spec.dataset);
  ASSIGN_OR_RETURN(std::vector<query::DatasetSchema> tables, JoinedTables(principal, *spec.join));
  ASSIGN_OR_RETURN(query::DatasetSchema joined, query::ResolveJoin(*spec.join, tables));
  if (joined.name != spec.dataset) {
    return absl::InvalidArgumentError(
        absl::StrCat("dataset must be ", joined.name, ", the first private table of the join"));
  }
  return joined;
}

}  // namespace dpq::engine
