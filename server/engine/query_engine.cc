#include "server/engine/query_engine.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "server/base/status_macros.h"
#include "server/engine/noisy_release.h"
#include "server/query/filter/type_checker.h"

namespace dpq::engine {
namespace {

constexpr size_t kMaxRequestIdLength = 128;

absl::Status ValidateRequestId(const std::string& id) {
  if (id.size() > kMaxRequestIdLength) {
    return absl::InvalidArgumentError(
        absl::StrCat("request_id must be at most ", kMaxRequestIdLength, " characters"));
  }
  for (char c : id) {
    if (c < 0x21 || c > 0x7e) {
      return absl::InvalidArgumentError("request_id must be printable ASCII without spaces");
    }
  }
  return absl::OkStatus();
}

// 128 random bits: ids assigned by the server never collide in practice.
std::string NewRequestId(dp::RandomSource& rng) {
  return absl::StrFormat("q-%016x%016x", rng.NextUint64(), rng.NextUint64());
}

// Deliberately the same message whether the id was used for another query or by another analyst:
// the answer must not reveal what someone else asked.
absl::Status RequestIdTaken(const std::string& request_id) {
  return absl::AlreadyExistsError(absl::StrCat(
      "request_id ", request_id, " is already taken by a different query or analyst; use a new id"));
}

QueryOutcome Replay(const query::QuerySpec& spec, store::Allocation stored, store::BudgetState budget) {
  return QueryOutcome{spec, std::move(stored), std::move(budget), /*replayed=*/true};
}

}  // namespace

absl::StatusOr<query::DatasetSchema> QueryEngine::AuthorizedDataset(const store::Principal& principal,
                                                                   const std::string& dataset) {
  ASSIGN_OR_RETURN(query::DatasetSchema schema, s_.datasets->Get(dataset));
  if (principal.role != store::Role::kAdmin) {
    ASSIGN_OR_RETURN(bool granted, s_.principals->HasGrant(principal.id, schema.id));
    if (!granted) {
      return absl::PermissionDeniedError(
          absl::StrCat("analyst ", principal.name, " has no grant on dataset ", schema.name));
    }
  }
  return schema;
}

absl::StatusOr<QueryOutcome> QueryEngine::Run(const store::Principal& principal,
                                              const query::QuerySpec& spec, std::string request_id,
                                              absl::Time deadline) {
  ASSIGN_OR_RETURN(query::DatasetSchema schema, AuthorizedDataset(principal, spec.dataset));
  ASSIGN_OR_RETURN(query::QueryPlan plan, query::PlanQuery(spec, schema));
  absl::optional<query::filter::TypedFilter> filter;
  if (!spec.where.empty()) {
    ASSIGN_OR_RETURN(filter, query::filter::ParseAndCheckFilter(spec.where, schema));
    // The canonical filter joins the fingerprint: a filtered query is a different question.
    absl::StrAppend(&plan.fingerprint, "|where=", query::filter::CanonicalText(*filter));
  }
  RETURN_IF_ERROR(ValidateRequestId(request_id));
  if (request_id.empty()) request_id = NewRequestId(*rng_);

  // A known request id: answer from the audit row, before any scan or charge.
  ASSIGN_OR_RETURN(absl::optional<store::Allocation> prior,
                   s_.ledger->FindAllocation(schema.id, request_id));
  if (prior.has_value()) {
    if (prior->fingerprint != plan.fingerprint || prior->principal_id != principal.id) {
      return RequestIdTaken(request_id);
    }
    ASSIGN_OR_RETURN(store::BudgetState budget, s_.ledger->Get(schema.id));
    return Replay(plan.spec, *std::move(prior), std::move(budget));
  }

  // Cheap pre-check without the lock so a doomed query does not scan; Debit re-checks under it.
  ASSIGN_OR_RETURN(store::BudgetState before, s_.ledger->Get(schema.id));
  // Basic composition knows the exact charge; other accountants are checked under the lock.
  const bool doomed = before.accountant == "basic"
                          ? plan.epsilon_units > before.epsilon_remaining_units() ||
                                plan.delta_units > before.delta_remaining_units()
                          : before.epsilon_remaining_units() == 0;
  if (doomed) return store::BudgetExhausted(before, plan.epsilon_units, plan.delta_units);

  ASSIGN_OR_RETURN(store::ScanResult exact, s_.scanner->Scan(plan.scan, deadline, filter ? &*filter : nullptr));
  ASSIGN_OR_RETURN(NoisyRelease release, ReleaseWithNoise(plan, exact, *rng_));

  store::Allocation a;
  a.request_id = request_id;
  a.principal_id = principal.id;
  a.analyst = principal.name;
  a.fingerprint = plan.fingerprint;
  a.aggregate = std::string(query::AggregateName(plan.spec.aggregate));
  a.column = plan.spec.column;
  a.mechanism = std::string(query::MechanismName(plan.spec.mechanism));
  a.epsilon_units = plan.epsilon_units;
  a.delta_units = plan.delta_units;
  a.sensitivity = release.sensitivity;
  a.noise_scale = release.noise_scale;
  a.count_noise_scale = release.count_noise_scale;
  a.value = release.value;
  a.confidence = plan.spec.confidence;
  a.ci_lower = release.ci_lower;
  a.ci_upper = release.ci_upper;
  a.clamp_lower = plan.spec.lower;
  a.clamp_upper = plan.spec.upper;
  a.max_contributions = plan.spec.max_contributions;
  a.events = absl::StrJoin(release.events, ";");

  ASSIGN_OR_RETURN(store::DebitResult debit, s_.ledger->Debit(schema.id, std::move(a)));
  if (debit.replayed && debit.allocation.principal_id != principal.id) {
    return RequestIdTaken(request_id);
  }
  // Reaching here means COMMIT succeeded (or the id was committed by a concurrent twin, whose
  // stored answer we return instead of ours): only now may the value leave the server.
  return QueryOutcome{plan.spec, std::move(debit.allocation), std::move(debit.budget), debit.replayed};
}

}  // namespace dpq::engine
