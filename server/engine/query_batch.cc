// A batch of queries on one dataset (QueryBatchRequest, and a SQL script): planned together,
// priced jointly, charged once before any scan, answered and stored as one release.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/base/database_failure.h"
#include "server/base/sha256.h"
#include "server/base/status_macros.h"
#include "server/dp/accounting/accountant.h"
#include "server/engine/charged_request.h"
#include "server/engine/query_engine.h"
#include "server/engine/release_codec.h"

namespace dpq::engine {
namespace {

constexpr size_t kMaxBatchQueries = 1000;
constexpr int64_t kMaxBudgetUnits = static_cast<int64_t>(query::kMaxEpsilonBudget) * 1000000000000;
constexpr int64_t kDeltaUnitsPerOne = 1000000000000000000;

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

}  // namespace

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
    // A per-block population: the batch's one charge pays every block any of its queries reads
    // (the hull of their ranges: a block between two paid ones is paid too, never less).
    absl::optional<query::BlockRange> hull;
    for (const Prepared& q : batch.prepared) {
      if (!q.blocks.has_value()) continue;
      if (!hull.has_value()) hull = q.blocks;
      hull->first = std::min(hull->first, q.blocks->first);
      hull->last = std::max(hull->last, q.blocks->last);
    }
    if (hull.has_value()) PayBlocks(batch.schema, *hull, a);
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
                    cache == BatchCache::kUse, /*probed=*/nullptr, steps);
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
