#include "server/engine/query_engine.h"

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "server/base/database_failure.h"
#include "server/base/limit_error.h"
#include "server/base/logging.h"
#include "server/base/sha256.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"
#include "server/dp/accounting/accountant.h"
#include "server/dp/dp_quantile.h"
#include "server/engine/noisy_release.h"
#include "server/engine/release_codec.h"
#include "server/query/epsilon_guidance.h"
#include "server/query/filter/type_checker.h"
#include "server/query/privacy_units.h"

namespace dpq::engine {
namespace {

// 128 random bits: ids assigned by the server never collide in practice.
std::string NewRequestId(dp::RandomSource& rng) {
  return absl::StrFormat("q-%016x%016x", rng.NextUint64(), rng.NextUint64());
}

// The audit column `fingerprint` leads a btree index (audit_cache_lookup, migration 0005), whose
// entries hold at most 2704 bytes: a longer fingerprint (a histogram with 1001 irregular edges,
// thousands of declared keys, a long filter) failed the debit with INTERNAL (SQLSTATE 54000). Past
// kMaxFingerprintBytes the tail is replaced by the SHA-256 of the whole text, so two fingerprints
// are still equal iff their questions are.
constexpr size_t kMaxFingerprintBytes = 1024;

std::string CompactFingerprint(std::string fingerprint) {
  if (fingerprint.size() <= kMaxFingerprintBytes) return fingerprint;
  return absl::StrCat(fingerprint.substr(0, kMaxFingerprintBytes / 2),
                      "|sha256=", absl::BytesToHexString(Sha256(fingerprint)));
}

// The per-query key of the scan's random choice of groups per unit (aggregate_scanner.h).
std::string NewPartitionSeed(dp::RandomSource& rng) {
  return absl::StrFormat("%016x%016x", rng.NextUint64(), rng.NextUint64());
}

// Deliberately the same message whether the id was used for another query or by another analyst:
// the answer must not reveal what someone else asked.
absl::Status RequestIdTaken(const std::string& request_id) {
  return absl::AlreadyExistsError(
      absl::StrCat("request_id ", request_id,
                   " is already taken by a different query or analyst; use a new id"));
}

// An answer read back from its audit row (a replayed request id or a cache hit).
absl::StatusOr<QueryOutcome> FromStored(const query::QuerySpec& spec, store::Allocation stored,
                                        store::BudgetState budget, bool replayed, bool cached) {
  QueryOutcome out{spec, std::move(stored), std::move(budget), replayed, cached, {}, {}};
  ASSIGN_OR_RETURN(out.rows, RowsOf(out.allocation));
  if (out.allocation.release.has_value()) {  // charged before its scan: the answer is the release
    out.allocation.value = out.allocation.release->value;
    out.allocation.ci_lower = out.allocation.release->ci_lower;
    out.allocation.ci_upper = out.allocation.release->ci_upper;
    out.allocation.result = out.allocation.release->result;
  }
  return out;
}

// After the charge the data is touched, and the cost stays whatever happens (pay before you look).
// The error tells the analyst only what they observe anyway (their deadline passed, or the service
// failed) and how to get what they paid for; never the scan's own message, which a failure could
// fill with something of the data. Operators find the cause's code in the log, and the message
// of a database failure (built without row data, store/postgres/pqxx_status.h), never another
// message: logs never hold row values.
absl::Status ChargedButUnanswered(const absl::Status& cause, const std::string& request_id,
                                  absl::Time deadline) {
  LogWarning(absl::StrCat(
      "request ", request_id, ": charged, not answered: ", absl::StatusCodeToString(cause.code()),
      DatabaseFailureOf(cause).has_value() ? absl::StrCat(" (", cause.message(), ")")
                                           : std::string()));
  const bool late = absl::Now() >= deadline ||
                    cause.code() == absl::StatusCode::kDeadlineExceeded ||
                    cause.code() == absl::StatusCode::kCancelled;
  const std::string why = late ? "its deadline passed before the answer was ready"
                               : "the database failed while answering";
  const std::string text = absl::StrCat(
      "request ", request_id, " was charged but not answered (", why,
      "); retry with the same request_id to receive the answer it paid for, at no further charge");
  return late ? absl::DeadlineExceededError(text) : absl::UnavailableError(text);
}

constexpr size_t kMaxBatchQueries = 1000;
constexpr int64_t kMaxBudgetUnits = static_cast<int64_t>(query::kMaxEpsilonBudget) * 1000000000000;
constexpr int64_t kDeltaUnitsPerOne = 1000000000000000000;

// The audit row of a query, charged before its scan: everything in it is a function of the plan
// (bounds, K, mechanisms, events), nothing of the data. Its answer is stored later (StoreRelease).
store::Allocation AllocationFor(const store::Principal& principal,
                                const query::DatasetSchema& schema, const query::QueryPlan& plan,
                                const ReleasePlan& release) {
  store::Allocation a;
  a.principal_id = principal.id;
  a.analyst = principal.name;
  a.fingerprint = plan.fingerprint;
  a.aggregate = std::string(query::AggregateName(plan.spec.aggregate));
  a.column = plan.spec.column;
  // Quantiles: the exponential mechanism chooses up to kMaxSelectedQuantiles levels; more are
  // read off the noisy histogram, whose mechanism is then the one used.
  a.mechanism = plan.spec.aggregate == query::AggregateKind::kQuantile && plan.quantile_epsilon > 0
                    ? "exponential"
                    : std::string(query::MechanismName(plan.spec.mechanism));
  a.epsilon_units = plan.epsilon_units;
  a.delta_units = plan.delta_units;
  a.sensitivity = release.sensitivity;
  a.noise_scale = release.noise_scale;
  a.count_noise_scale = release.count_noise_scale;
  a.confidence = plan.spec.confidence;
  a.clamp_lower = plan.spec.lower;
  a.clamp_upper = plan.spec.upper;
  a.max_contributions = plan.spec.max_contributions;
  a.events = absl::StrJoin(release.events, ";");
  a.dataset_version = schema.version;
  a.datasets = schema.ReadDatasets();
  a.release_deferred = true;
  return a;
}

store::Allocation::Release ReleaseOf(const NoisyRelease& r) {
  store::Allocation::Release out;
  out.value = r.value;
  out.ci_lower = r.ci_lower;
  out.ci_upper = r.ci_upper;
  out.result = EncodeRows(r.rows);
  return out;
}

// One answer of a batch as a QueryOutcome (for the API's QueryResponse).
QueryOutcome AnswerOutcome(const query::QuerySpec& spec, const store::Allocation& batch,
                           const BatchAnswer& b, size_t index) {
  QueryOutcome out;
  out.spec = spec;
  store::Allocation& a = out.allocation;
  a.request_id = absl::StrCat(batch.request_id, "#", index);
  a.aggregate = b.aggregate;
  a.column = b.column;
  a.mechanism = b.mechanism;
  a.epsilon_units = b.epsilon_units;
  a.delta_units = b.delta_units;
  a.noise_scale = b.noise_scale;
  a.count_noise_scale = b.count_noise_scale;
  a.sensitivity = b.sensitivity;
  a.confidence = b.confidence;
  a.clamp_lower = b.lower;
  a.clamp_upper = b.upper;
  a.max_contributions = b.max_contributions;
  out.spec.max_partitions = b.max_partitions;
  if (b.rows.size() == 1) {
    a.value = b.rows[0].value;
    a.ci_lower = b.rows[0].ci_lower;
    a.ci_upper = b.rows[0].ci_upper;
  }
  out.rows = b.rows;
  return out;
}

struct JointCharge {
  int64_t epsilon_units = 0;
  int64_t delta_units = 0;
  std::string events;  // what the ledger's accountant composes
};

// The batch's charge (QueryBatchRequest in the proto): the smaller of the queries' own charges
// added up and the joint (epsilon, delta) at the batch delta by RDP (valid for every event,
// including the discrete Gaussian; Canonne, Kamath, Steinke 2020, Thm. 4) and by PLD (only when
// every event has an exact PLD). The whole list is fixed before any answer is released, so
// composing it as one non-adaptive mechanism is valid (Koskela et al. 2020; Doroshenko et al. 2022).
absl::StatusOr<JointCharge> PriceJointly(const std::vector<std::string>& event_specs,
                                         int64_t eps_sum, int64_t delta_sum,
                                         int64_t batch_delta_units) {
  JointCharge sum{eps_sum, delta_sum, absl::StrJoin(event_specs, ";")};
  if (batch_delta_units == 0) return sum;
  // Identical events compose as one event with a count: the accountants' cost stays small.
  std::map<std::string, int64_t> counted;
  for (const std::string& e : event_specs) ++counted[e];
  std::vector<dp::accounting::PrivacyEvent> events;
  bool pld_exact = true;
  for (const auto& [spec, n] : counted) {
    ASSIGN_OR_RETURN(dp::accounting::PrivacyEvent e, dp::accounting::ParsePrivacyEvent(spec));
    e.count *= n;
    pld_exact = pld_exact && e.kind != dp::accounting::EventKind::kApproxDp &&
                e.kind != dp::accounting::EventKind::kGaussian;
    events.push_back(e);
  }
  const double delta = query::MechanismDelta(batch_delta_units);
  double best = std::numeric_limits<double>::infinity();
  for (dp::accounting::AccountantKind kind :
       {dp::accounting::AccountantKind::kRdp, dp::accounting::AccountantKind::kPld}) {
    if (kind == dp::accounting::AccountantKind::kPld && !pld_exact) continue;
    std::unique_ptr<dp::accounting::Accountant> acc = dp::accounting::CreateAccountant(kind);
    absl::Status composed = absl::OkStatus();
    for (const auto& e : events) {
      composed = acc->Compose(e);
      if (!composed.ok()) break;
    }
    if (!composed.ok()) continue;  // an event this accountant cannot represent
    absl::StatusOr<double> eps = acc->Epsilon(delta);
    if (eps.ok() && *eps < best) best = *eps;
  }
  if (!(best <= query::kMaxEpsilonBudget)) return sum;
  // Charged in whole 1e-12 units, rounded up so the ledger never shows less than the bound.
  const int64_t joint_units =
      static_cast<int64_t>(std::ceil(static_cast<long double>(best) * 1e12L));
  if (joint_units >= eps_sum) return sum;
  const double charged = query::EpsilonFromUnits(joint_units);
  return JointCharge{joint_units, batch_delta_units,
                     dp::accounting::PrivacyEvent::ApproxDp(charged, delta).ToSpec()};
}

// The dataset's largest epsilon per query (SetBudgetRequest.max_query_epsilon), a declared
// setting: the refusal depends on the request and the setting only, and comes before any charge.
absl::Status CheckQueryEpsilonLimit(const query::QueryPlan& plan,
                                    const query::DatasetSchema& schema) {
  if (schema.max_query_epsilon_units == 0 || plan.epsilon_units <= schema.max_query_epsilon_units) {
    return absl::OkStatus();
  }
  const double limit = query::EpsilonFromUnits(schema.max_query_epsilon_units);
  return LimitError(absl::StrFormat(
      "epsilon %.12g is more than dataset %s allows for one query (at most %.12g, its "
      "max_query_epsilon): ask for less, or ask an admin to raise it with `dpqctl budget set %s "
      "--max-query-epsilon E`",
      query::EpsilonFromUnits(plan.epsilon_units), schema.name, limit, schema.name));
}

}  // namespace

absl::StatusOr<QueryEngine::Earlier> QueryEngine::FindEarlier(const store::Principal& principal,
                                                              const query::DatasetSchema& schema,
                                                              const std::string& fingerprint,
                                                              const std::string& request_id,
                                                              bool callers_id, bool use_cache) {
  Earlier found;
  // An id the server drew just now (128 random bits) names no earlier allocation: looking it up
  // would be a round trip on every query for nothing. Should it ever collide, the audit table's
  // unique (dataset_id, request_id) key fails the debit, which charges nothing and replays nothing
  // (DebitGroupCommitTest.AFreshRequestIdIsNotLookedUpAndACollisionChargesNothing).
  if (callers_id) {
    ASSIGN_OR_RETURN(found.own, stores_.ledger->FindAllocation(schema.population_id, request_id));
  }
  if (found.own.has_value() || !use_cache) return found;
  // The cache probe looks for the caller's own id too: a twin of this request (the same id,
  // retried at once on another dpqd) may have charged it since the lookup above, and a reply to
  // an id that is charged is a replay, never a cache hit.
  ASSIGN_OR_RETURN(absl::optional<store::CacheHit> hit,
                   stores_.cache->Probe(schema.population_id, fingerprint, schema.version,
                                        principal.id, callers_id ? request_id : std::string()));
  if (!hit.has_value()) return found;
  ASSIGN_OR_RETURN(absl::optional<store::Allocation> stored,
                   stores_.ledger->FindAllocation(schema.population_id, hit->request_id));
  (hit->own ? found.own : found.cached) = std::move(stored);
  return found;
}

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

absl::StatusOr<QueryEngine::Prepared> QueryEngine::Prepare(const query::QuerySpec& spec,
                                                           const query::DatasetSchema& schema,
                                                           bool with_release) {
  absl::StatusOr<Prepared> q = PrepareOnSchema(spec, schema, with_release);
  // A joined schema's refusals name columns as the statement writes them (p.age, not p__age).
  if (!q.ok() && schema.join != nullptr) return schema.join->WithWrittenNames(q.status());
  return q;
}

absl::StatusOr<QueryEngine::Prepared> QueryEngine::PrepareOnSchema(
    const query::QuerySpec& spec, const query::DatasetSchema& schema, bool with_release) {
  Prepared q;
  ASSIGN_OR_RETURN(q.plan, query::PlanQuery(spec, schema));
  RETURN_IF_ERROR(CheckQueryEpsilonLimit(q.plan, schema));
  if (!spec.where.empty()) {
    ASSIGN_OR_RETURN(q.filter, query::filter::ParseAndCheckFilter(spec.where, schema));
    // The canonical filter joins the fingerprint: a filtered query is a different question.
    absl::StrAppend(&q.plan.fingerprint, "|where=", query::filter::CanonicalText(*q.filter));
  }
  q.plan.fingerprint = CompactFingerprint(std::move(q.plan.fingerprint));
  if (with_release) {
    ASSIGN_OR_RETURN(q.release, PrepareRelease(q.plan));
  }
  return q;
}

absl::StatusOr<NoisyRelease> QueryEngine::Execute(const Prepared& q, absl::Time deadline) {
  ASSIGN_OR_RETURN(store::ScanResult exact,
                   stores_.scanner->Scan(q.plan.scan, deadline, q.filter ? &*q.filter : nullptr,
                                         NewPartitionSeed(*rng_)));
  if (!exact.recovered_data_error.empty()) {
    // A bug by the argument of store/scan_arithmetic.h: the operator must hear of it. The analyst
    // still gets the answer (from the numeric scan), so nothing they see depends on the value.
    Log(LogLevel::kError, "scan raised a data exception; answered by the numeric fallback",
        {{"dataset", q.plan.spec.dataset},
         {"sqlstate", exact.recovered_data_error},
         {"aggregate", std::string(query::AggregateName(q.plan.spec.aggregate))}});
    if (on_scan_data_error_) on_scan_data_error_(q.plan.spec.dataset);
  }
  return ReleaseWithNoise(q.plan, q.release, exact, *rng_);
}

absl::StatusOr<QueryOutcome> QueryEngine::Answer(const Prepared& q,
                                                 const query::DatasetSchema& schema,
                                                 const store::Allocation& paid,
                                                 store::BudgetState budget, bool replayed,
                                                 absl::Time deadline) {
  absl::StatusOr<NoisyRelease> release = Execute(q, deadline);
  if (!release.ok()) return ChargedButUnanswered(release.status(), paid.request_id, deadline);
  absl::StatusOr<store::Allocation> stored =
      stores_.ledger->StoreRelease(schema.population_id, paid, ReleaseOf(*release));
  if (!stored.ok()) return ChargedButUnanswered(stored.status(), paid.request_id, deadline);
  return FromStored(q.plan.spec, *std::move(stored), std::move(budget), replayed, /*cached=*/false);
}

absl::StatusOr<bool> QueryEngine::ResolveRequestId(std::string& request_id) {
  RETURN_IF_ERROR(ValidateRequestId(request_id));
  const bool callers_id = !request_id.empty();
  if (!callers_id) request_id = NewRequestId(*rng_);
  return callers_id;
}

template <typename Outcome>
absl::StatusOr<Outcome> QueryEngine::RunCharged(const store::Principal& principal,
                                                const query::DatasetSchema& schema,
                                                const std::string& fingerprint,
                                                const std::string& request_id, bool callers_id,
                                                bool use_cache,
                                                const RequestSteps<Outcome>& steps) {
  // 2. A known request id: its stored answer, or, if it was charged and never answered (its scan
  //    failed), the scan it paid for, run once more without a second charge.
  // 3. Else the same analyst asked the same question on the same data before: that release, for
  //    free (result_cache.h says why the cache is per analyst).
  ASSIGN_OR_RETURN(Earlier earlier,
                   FindEarlier(principal, schema, fingerprint, request_id, callers_id, use_cache));
  if (earlier.own.has_value()) {
    store::Allocation& prior = *earlier.own;
    if (prior.fingerprint != fingerprint || prior.principal_id != principal.id) {
      return RequestIdTaken(request_id);
    }
    ASSIGN_OR_RETURN(store::BudgetState budget, stores_.ledger->Get(schema.population_id));
    if (prior.released()) {
      return steps.from_stored(std::move(prior), std::move(budget), /*replayed=*/true);
    }
    return steps.answer(prior, std::move(budget), /*replayed=*/true);
  }
  if (earlier.cached.has_value()) {
    ASSIGN_OR_RETURN(store::BudgetState budget, stores_.ledger->Get(schema.population_id));
    ASSIGN_OR_RETURN(Outcome out, steps.from_stored(*std::move(earlier.cached), std::move(budget),
                                                    /*replayed=*/false));
    steps.mark_cached(out);
    out.allocation.request_id = request_id;  // the caller's own id, not the earlier one
    return out;
  }

  // 4. Pay before you look: the charge commits (lock, check, audit row) before the scan starts, so
  //    a scan that fails for any reason, or a dpqd killed mid-scan, never returns its cost. A
  //    refusal (RESOURCE_EXHAUSTED) here has touched no data.
  ASSIGN_OR_RETURN(store::Allocation a, steps.allocation());
  a.request_id = request_id;
  a.request_id_is_fresh = !callers_id;
  ASSIGN_OR_RETURN(store::DebitResult debit,
                   stores_.ledger->Debit(schema.population_id, std::move(a)));
  if (debit.replayed && debit.allocation.principal_id != principal.id) {
    return RequestIdTaken(request_id);
  }
  if (debit.replayed && debit.allocation.released()) {  // a concurrent twin committed and answered
    return steps.from_stored(std::move(debit.allocation), std::move(debit.budget),
                             /*replayed=*/true);
  }
  // 5. Scan, noise, store the release (the first one stored for this charge is its answer for
  //    ever), and only then let it leave.
  return steps.answer(debit.allocation, std::move(debit.budget), debit.replayed);
}

absl::StatusOr<QueryOutcome> QueryEngine::Run(const store::Principal& principal,
                                              const query::QuerySpec& spec, std::string request_id,
                                              absl::Time deadline) {
  // 1. Everything that can refuse the query, before any data is read: authorisation, the plan
  //    (bounds, grids, limits), the calibrated mechanisms and the events to charge.
  ASSIGN_OR_RETURN(query::DatasetSchema schema, SchemaFor(principal, spec));
  ASSIGN_OR_RETURN(Prepared q, Prepare(spec, schema));
  ASSIGN_OR_RETURN(const bool callers_id, ResolveRequestId(request_id));
  absl::StatusOr<QueryOutcome> out =
      RunPrepared(principal, schema, q, request_id, callers_id, deadline);
  // A failure whose retry is safe names the id to retry with: one the server drew is otherwise
  // unknown to the caller, and only that id finds a charge that may have committed.
  if (!out.ok()) return WithRequestId(out.status(), request_id);
  out->warnings = query::QueryWarnings(q.plan.spec.epsilon, schema.epsilon_preset);
  out->components = ComponentsOf(q.plan, q.release.components);
  return out;
}

absl::StatusOr<QueryOutcome> QueryEngine::RunPrepared(const store::Principal& principal,
                                                      const query::DatasetSchema& schema,
                                                      const Prepared& q,
                                                      const std::string& request_id,
                                                      bool callers_id, absl::Time deadline) {
  RequestSteps<QueryOutcome> steps;
  steps.allocation = [&]() -> absl::StatusOr<store::Allocation> {
    return AllocationFor(principal, schema, q.plan, q.release);
  };
  steps.from_stored = [&](store::Allocation stored, store::BudgetState budget, bool replayed) {
    return FromStored(q.plan.spec, std::move(stored), std::move(budget), replayed,
                      /*cached=*/false);
  };
  steps.answer = [&](const store::Allocation& paid, store::BudgetState budget, bool replayed) {
    return Answer(q, schema, paid, std::move(budget), replayed, deadline);
  };
  steps.mark_cached = [](QueryOutcome& out) { out.cached = true; };
  return RunCharged(principal, schema, q.plan.fingerprint, request_id, callers_id,
                    /*use_cache=*/true, steps);
}

absl::StatusOr<QueryEngine::PreparedBatch> QueryEngine::PrepareBatch(
    const store::Principal& principal, const std::string& dataset,
    std::vector<query::QuerySpec> specs, double delta) {
  if (specs.empty() || specs.size() > kMaxBatchQueries) {
    return absl::InvalidArgumentError(absl::StrCat("queries: a batch holds 1..", kMaxBatchQueries,
                                                   " queries, got ", specs.size()));
  }
  PreparedBatch b;
  // A batch of joined queries (a SQL script over a join) reads one join: its first query's.
  const std::string join_text = specs[0].join != nullptr ? specs[0].join->CanonicalText() : "";
  if (specs[0].join != nullptr) {
    ASSIGN_OR_RETURN(b.schema, SchemaFor(principal, specs[0]));
  } else {
    ASSIGN_OR_RETURN(b.schema, QueriedDataset(principal, dataset));
  }
  ASSIGN_OR_RETURN(b.delta_units, query::DeltaToUnits(delta, "delta"));
  std::string fingerprints;
  for (size_t i = 0; i < specs.size(); ++i) {
    const auto in_query = [i](const absl::Status& s) {
      absl::Status out(s.code(), absl::StrCat("queries[", i, "]: ", s.message()));
      s.ForEachPayload([&out](absl::string_view url, const absl::Cord& payload) {
        out.SetPayload(url, payload);
      });
      return out;
    };
    if (!specs[i].dataset.empty() && specs[i].dataset != b.schema.name) {
      return absl::InvalidArgumentError(absl::StrCat("queries[", i, "]: dataset must be empty or ",
                                                     b.schema.name, " (one dataset per batch)"));
    }
    if ((specs[i].join != nullptr ? specs[i].join->CanonicalText() : "") != join_text) {
      return absl::InvalidArgumentError(
          absl::StrCat("queries[", i, "]: every query of a batch reads the same tables"));
    }
    specs[i].dataset = b.schema.name;
    absl::StatusOr<Prepared> q = Prepare(specs[i], b.schema);
    if (!q.ok()) return in_query(q.status());
    // Each charge is at most 1e18 units; the sum must stay a chargeable budget (and an int64).
    if (q->plan.epsilon_units > kMaxBudgetUnits - b.epsilon_sum_units) {
      return absl::InvalidArgumentError(
          absl::StrCat("queries: their epsilons add up to more than the largest budget, ",
                       query::kMaxEpsilonBudget));
    }
    b.epsilon_sum_units += q->plan.epsilon_units;
    b.delta_sum_units += q->plan.delta_units;  // each < 1e18, checked below after each addition
    if (b.delta_sum_units >= kDeltaUnitsPerOne) {
      return absl::InvalidArgumentError("queries: their deltas add up to 1 or more");
    }
    absl::StrAppend(&fingerprints, q->plan.fingerprint.size(), ":", q->plan.fingerprint, ";");
    b.prepared.push_back(*std::move(q));
  }
  b.fingerprint = absl::StrCat("batch-v1|delta=", b.delta_units,
                               "e-18|sha256=", absl::BytesToHexString(Sha256(fingerprints)));
  return b;
}

absl::StatusOr<BatchPrice> QueryEngine::PriceOf(const PreparedBatch& b) {
  // Priced from the prepared events alone (no data).
  std::vector<std::string> events;
  for (const Prepared& q : b.prepared) {
    events.insert(events.end(), q.release.events.begin(), q.release.events.end());
  }
  ASSIGN_OR_RETURN(JointCharge charge,
                   PriceJointly(events, b.epsilon_sum_units, b.delta_sum_units, b.delta_units));
  BatchPrice out;
  out.epsilon_units = charge.epsilon_units;
  out.delta_units = charge.delta_units;
  out.epsilon_sum_units = b.epsilon_sum_units;
  out.delta_sum_units = b.delta_sum_units;
  out.events = std::move(charge.events);
  return out;
}

absl::StatusOr<BatchPrice> QueryEngine::PriceBatch(const store::Principal& principal,
                                                   const std::string& dataset,
                                                   std::vector<query::QuerySpec> specs,
                                                   double delta) {
  ASSIGN_OR_RETURN(PreparedBatch b, PrepareBatch(principal, dataset, std::move(specs), delta));
  return PriceOf(b);
}

absl::StatusOr<BatchOutcome> QueryEngine::RunBatch(const store::Principal& principal,
                                                   const std::string& dataset,
                                                   std::vector<query::QuerySpec> specs,
                                                   double delta, std::string request_id,
                                                   absl::Time deadline, BatchCache cache) {
  ASSIGN_OR_RETURN(PreparedBatch batch, PrepareBatch(principal, dataset, std::move(specs), delta));
  ASSIGN_OR_RETURN(const bool callers_id, ResolveRequestId(request_id));
  absl::StatusOr<BatchOutcome> out =
      RunPreparedBatch(principal, batch, request_id, callers_id, deadline, cache);
  if (!out.ok()) return WithRequestId(out.status(), request_id);  // as Run: the id to retry with
  for (size_t i = 0; i < out->answers.size() && i < batch.prepared.size(); ++i) {
    out->answers[i].components =
        ComponentsOf(batch.prepared[i].plan, batch.prepared[i].release.components);
  }
  return out;
}

absl::StatusOr<BatchOutcome> QueryEngine::RunPreparedBatch(const store::Principal& principal,
                                                           const PreparedBatch& batch,
                                                           const std::string& request_id,
                                                           bool callers_id, absl::Time deadline,
                                                           BatchCache cache) {
  RequestSteps<BatchOutcome> steps;
  // The charge, priced from the prepared events (no data), committed before any scan.
  steps.allocation = [&]() -> absl::StatusOr<store::Allocation> {
    ASSIGN_OR_RETURN(BatchPrice charge, PriceOf(batch));
    store::Allocation a;
    a.principal_id = principal.id;
    a.analyst = principal.name;
    a.fingerprint = batch.fingerprint;
    a.aggregate = "batch";
    a.mechanism = "batch";
    a.epsilon_units = charge.epsilon_units;
    a.delta_units = charge.delta_units;
    a.confidence = batch.prepared[0].plan.spec.confidence;
    a.events = charge.events;
    a.dataset_version = batch.schema.version;
    a.datasets = batch.schema.ReadDatasets();
    a.release_deferred = true;
    return a;
  };
  steps.from_stored = [&](store::Allocation stored, store::BudgetState budget, bool replayed) {
    return BatchFromStored(batch, std::move(stored), std::move(budget), replayed);
  };
  steps.answer = [&](const store::Allocation& paid, store::BudgetState budget, bool replayed) {
    return AnswerBatch(principal, batch, paid, std::move(budget), replayed, deadline);
  };
  steps.mark_cached = [](BatchOutcome& out) {
    out.cached = true;
    for (QueryOutcome& a : out.answers) a.cached = true;
  };
  // The cache only for SQL scripts (RunBatch says why).
  return RunCharged(principal, batch.schema, batch.fingerprint, request_id, callers_id,
                    cache == BatchCache::kUse, steps);
}

absl::StatusOr<BatchOutcome> QueryEngine::BatchFromStored(const PreparedBatch& batch,
                                                          store::Allocation a,
                                                          store::BudgetState budget,
                                                          bool replayed) {
  BatchOutcome out;
  const std::string& result = a.release.has_value() ? a.release->result : a.result;
  ASSIGN_OR_RETURN(std::vector<BatchAnswer> answers, DecodeBatch(result));
  if (answers.size() != batch.prepared.size()) {
    return absl::InternalError("stored batch has another size");
  }
  for (size_t i = 0; i < answers.size(); ++i) {
    out.answers.push_back(AnswerOutcome(batch.prepared[i].plan.spec, a, answers[i], i));
    out.answers.back().replayed = replayed;
  }
  out.allocation = std::move(a);
  out.budget = std::move(budget);
  out.replayed = replayed;
  out.epsilon_sum_units = batch.epsilon_sum_units;
  out.delta_sum_units = batch.delta_sum_units;
  return out;
}

absl::StatusOr<BatchOutcome> QueryEngine::AnswerBatch(const store::Principal& principal,
                                                      const PreparedBatch& batch,
                                                      const store::Allocation& paid,
                                                      store::BudgetState budget, bool replayed,
                                                      absl::Time deadline) {
  std::vector<BatchAnswer> answers;
  for (const Prepared& q : batch.prepared) {
    absl::StatusOr<NoisyRelease> r = Execute(q, deadline);
    if (!r.ok()) return ChargedButUnanswered(r.status(), paid.request_id, deadline);
    const store::Allocation one = AllocationFor(principal, batch.schema, q.plan, q.release);
    BatchAnswer b;
    b.aggregate = one.aggregate;
    b.column = one.column;
    b.mechanism = one.mechanism;
    b.epsilon_units = one.epsilon_units;
    b.delta_units = one.delta_units;
    b.noise_scale = one.noise_scale;
    b.count_noise_scale = one.count_noise_scale;
    b.sensitivity = one.sensitivity;
    b.confidence = one.confidence;
    b.lower = one.clamp_lower;
    b.upper = one.clamp_upper;
    b.max_contributions = one.max_contributions;
    b.max_partitions = q.plan.spec.max_partitions;
    b.rows = std::move(r->rows);
    answers.push_back(std::move(b));
  }
  store::Allocation::Release release;
  release.result = EncodeBatch(answers);
  absl::StatusOr<store::Allocation> stored =
      stores_.ledger->StoreRelease(batch.schema.population_id, paid.seq, release);
  if (!stored.ok()) return ChargedButUnanswered(stored.status(), paid.request_id, deadline);
  return BatchFromStored(batch, *std::move(stored), std::move(budget), replayed);
}

}  // namespace dpq::engine
