// A query's first statement: who asks (a remembered caller's token confirmed), what they may read
// (the schema and the grant) and whether they asked it before (the result cache), in one round
// trip where the query allows it.
#include "server/base/status_macros.h"
#include "server/engine/query_engine.h"

namespace dpq::engine {

absl::Status QueryEngine::ConfirmCaller(const store::Principal& principal) {
  if (principal.token_to_confirm.empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(store::Principal now,
                   stores_.principals->FindByTokenHash(principal.token_to_confirm));
  // The token now names another principal only if it was re-issued to it: not this caller.
  if (now.id != principal.id) return store::UnknownOrRevokedToken();
  return absl::OkStatus();
}

absl::StatusOr<QueryEngine::LookedUp> QueryEngine::LookUp(const store::Principal& principal,
                                                          const query::QuerySpec& spec,
                                                          bool server_id) {
  if (spec.join != nullptr) {
    // A join reads several schemas, public tables first without a grant: the token is confirmed
    // before any of them, by a statement of its own (joins are the rarer query).
    RETURN_IF_ERROR(ConfirmCaller(principal));
    ASSIGN_OR_RETURN(query::DatasetSchema joined, SchemaFor(principal, spec));
    return LookedUp{std::move(joined), absl::nullopt};
  }
  // The cache probe needs the query's fingerprint, a function of the request and the schema, and
  // the schema is what the statement reads: plan on the schema read last time. Admins query
  // without a grant (DatasetStore::Get), so their queries probe on their own.
  std::string guess;
  if (server_id && principal.role == store::Role::kAnalyst) {
    if (std::shared_ptr<const query::DatasetSchema> last = recent_schemas_.Find(spec.dataset)) {
      absl::StatusOr<Prepared> planned = Prepare(spec, *last, /*with_release=*/false);
      if (planned.ok()) guess = std::move(planned->plan.fingerprint);
    }
  }
  return GrantedDataset(principal, spec.dataset, /*refuse_public=*/true, guess);
}

}  // namespace dpq::engine
