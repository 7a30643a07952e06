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
#include "server/engine/charged_request.h"
#include "server/engine/noisy_release.h"
#include "server/engine/release_codec.h"
#include "server/query/epsilon_guidance.h"
#include "server/query/filter/type_checker.h"
#include "server/query/privacy_units.h"
#include "server/query/time_blocks/time_blocks.h"
#include "server/store/debit_admission.h"
#include "server/store/sharded_scan.h"

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

// An answer read back from its audit row (a replayed request id or a cache hit).
absl::StatusOr<QueryOutcome> FromStored(const query::QuerySpec& spec, store::Allocation stored,
                                        store::BudgetState budget, bool replayed, bool cached) {
  QueryOutcome out{spec, std::move(stored), std::move(budget), replayed, cached, {}, {}, {}};
  ASSIGN_OR_RETURN(out.rows, RowsOf(out.allocation));
  if (out.allocation.release.has_value()) {  // charged before its scan: the answer is the release
    out.allocation.value = out.allocation.release->value;
    out.allocation.ci_lower = out.allocation.release->ci_lower;
    out.allocation.ci_upper = out.allocation.release->ci_upper;
    out.allocation.result = out.allocation.release->result;
  }
  return out;
}

store::Allocation::Release ReleaseOf(const NoisyRelease& r) {
  store::Allocation::Release out;
  out.value = r.value;
  out.ci_lower = r.ci_lower;
  out.ci_upper = r.ci_upper;
  out.result = EncodeRows(r.rows);
  return out;
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
                                                              bool callers_id, bool use_cache,
                                                              const store::ProbedCache* probed) {
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
  absl::optional<store::CacheHit> hit;
  if (!callers_id && probed != nullptr && probed->fingerprint == fingerprint) {
    // The first statement probed for this very question, on the population and version of the
    // schema it read (the one `schema` is): its answer is the probe's.
    if (probed->request_id.has_value()) hit = store::CacheHit{*probed->request_id, false};
  } else {
    ASSIGN_OR_RETURN(
        hit, stores_.cache->Probe(schema.population_id, fingerprint, schema.version, principal.id,
                                  callers_id ? request_id : std::string()));
  }
  if (!hit.has_value()) return found;
  ASSIGN_OR_RETURN(absl::optional<store::Allocation> stored,
                   stores_.ledger->FindAllocation(schema.population_id, hit->request_id));
  (hit->own ? found.own : found.cached) = std::move(stored);
  return found;
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
  }
  if (schema.per_block_budget) RETURN_IF_ERROR(PayTimeBlocks(schema, q));
  if (q.filter.has_value()) {
    // The canonical filter joins the fingerprint: a filtered query is a different question (and
    // with time blocks, the blocks read are part of it).
    absl::StrAppend(&q.plan.fingerprint, "|where=", query::filter::CanonicalText(*q.filter));
  }
  q.plan.fingerprint = CompactFingerprint(std::move(q.plan.fingerprint));
  if (with_release) {
    ASSIGN_OR_RETURN(q.release, PrepareRelease(q.plan));
  }
  return q;
}

int64_t QueryEngine::Today() const {
  return today_ ? today_() : absl::ToUnixSeconds(absl::Now()) / (24 * 60 * 60);  // UTC day
}

absl::Status QueryEngine::PayTimeBlocks(const query::DatasetSchema& schema, Prepared& q) {
  if (schema.join != nullptr || !schema.time_blocks.has_value()) {
    return absl::UnimplementedError(absl::StrCat(
        "population ", schema.population,
        " has a budget per time block, and joins of its datasets cannot pay per block yet: query "
        "one dataset at a time"));
  }
  ASSIGN_OR_RETURN(q.blocks, query::BlocksToPay(schema, q.filter ? &*q.filter : nullptr, Today()));
  ASSIGN_OR_RETURN(q.filter, query::RestrictToBlocks(schema, q.filter, *q.blocks));
  // Only the paid blocks may decide the answer: the stored per-unit rank is drawn over all of a
  // person's rows, so it would let rows of unpaid blocks choose which paid rows count
  // (time_blocks.h). A filtered scan never bounds by it; say so in the plan too.
  q.plan.scan.bound_by_row_rank = false;
  return absl::OkStatus();
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
                                                bool use_cache, const store::ProbedCache* probed,
                                                const RequestSteps<Outcome>& steps) {
  // 2. A known request id: its stored answer, or, if it was charged and never answered (its scan
  //    failed), the scan it paid for, run once more without a second charge.
  // 3. Else the same analyst asked the same question on the same data before: that release, for
  //    free (result_cache.h says why the cache is per analyst).
  ASSIGN_OR_RETURN(Earlier earlier, FindEarlier(principal, schema, fingerprint, request_id,
                                                callers_id, use_cache, probed));
  if (earlier.own.has_value()) {
    store::Allocation& prior = *earlier.own;
    if (prior.fingerprint != fingerprint || prior.principal_id != principal.id) {
      return store::RequestIdTaken(request_id);
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
  // A shard that is down now would fail the paid scan: refuse before the charge instead (a shard
  // that fails after it follows the paid-scan rules: the retry with the request id re-runs it).
  if (!schema.shards.empty()) {
    if (stores_.shards == nullptr) {
      return absl::FailedPreconditionError("this server cannot reach shard servers");
    }
    RETURN_IF_ERROR(stores_.shards->CheckUp(schema.shards));
  }
  ASSIGN_OR_RETURN(store::Allocation a, steps.allocation());
  a.request_id = request_id;
  a.request_id_is_fresh = !callers_id;
  ASSIGN_OR_RETURN(store::DebitResult debit,
                   stores_.ledger->Debit(schema.population_id, std::move(a)));
  if (debit.replayed && debit.allocation.principal_id != principal.id) {
    return store::RequestIdTaken(request_id);
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
  const bool server_id = request_id.empty();
  ASSIGN_OR_RETURN(LookedUp looked, LookUp(principal, spec, server_id));
  const query::DatasetSchema& schema = looked.schema;
  ASSIGN_OR_RETURN(Prepared q, Prepare(spec, schema));
  if (server_id && spec.join == nullptr && principal.role == store::Role::kAnalyst &&
      (!looked.probed.has_value() || looked.probed->fingerprint != q.plan.fingerprint)) {
    recent_schemas_.Remember(schema);  // the guess was missing or wrong: the next one is right
  }
  ASSIGN_OR_RETURN(const bool callers_id, ResolveRequestId(request_id));
  absl::StatusOr<QueryOutcome> out =
      RunPrepared(principal, schema, q, request_id, callers_id, deadline,
                  looked.probed ? &*looked.probed : nullptr);
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
                                                      bool callers_id, absl::Time deadline,
                                                      const store::ProbedCache* probed) {
  RequestSteps<QueryOutcome> steps;
  steps.allocation = [&]() -> absl::StatusOr<store::Allocation> {
    store::Allocation a = AllocationFor(principal, schema, q.plan, q.release);
    if (q.blocks.has_value()) PayBlocks(schema, *q.blocks, a);
    return a;
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
                    /*use_cache=*/true, probed, steps);
}

// The batch path (query_batch.cc) runs the same request life.
template absl::StatusOr<BatchOutcome> QueryEngine::RunCharged<BatchOutcome>(
    const store::Principal& principal, const query::DatasetSchema& schema,
    const std::string& fingerprint, const std::string& request_id, bool callers_id, bool use_cache,
    const store::ProbedCache* probed, const RequestSteps<BatchOutcome>& steps);

}  // namespace dpq::engine
