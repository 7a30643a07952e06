// Which schema a query reads: the dataset the analyst may query (grant, public tables refused
// alone), or the joined schema of the tables a statement joins.
#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/engine/query_engine.h"
#include "server/query/join_source.h"

namespace dpq::engine {

absl::StatusOr<query::DatasetSchema> QueryEngine::AuthorizedDataset(
    const store::Principal& principal, const std::string& dataset) {
  return GrantedDataset(principal, dataset, /*refuse_public=*/false);
}

absl::StatusOr<query::DatasetSchema> QueryEngine::QueriedDataset(const store::Principal& principal,
                                                                 const std::string& dataset) {
  return GrantedDataset(principal, dataset, /*refuse_public=*/true);
}

absl::StatusOr<query::DatasetSchema> QueryEngine::GrantedDataset(const store::Principal& principal,
                                                                 const std::string& dataset,
                                                                 bool refuse_public) {
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
    ASSIGN_OR_RETURN(query::DatasetSchema schema, stores_.datasets->Get(dataset));
    if (refuse_public && schema.is_public) return public_alone(schema.name);
    return schema;
  }
  // The schema and the grant in one statement (a round trip less on every query).
  ASSIGN_OR_RETURN(store::DatasetStore::Granted found,
                   stores_.datasets->GetWithGrant(dataset, principal.id));
  if (refuse_public && found.schema.is_public) return public_alone(found.schema.name);
  if (!found.granted) {
    return absl::PermissionDeniedError(absl::StrCat(
        "analyst ", principal.name, " has no grant on dataset ", found.schema.name,
        ": ask an admin to run `dpqctl grant ", principal.name, " ", found.schema.name, "`"));
  }
  return std::move(found.schema);
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
