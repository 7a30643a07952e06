#include "server/engine/charged_request.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "server/base/database_failure.h"
#include "server/base/logging.h"

namespace dpq::engine {

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

void PayBlocks(const query::DatasetSchema& schema, const query::BlockRange& range,
               store::Allocation& a) {
  a.blocks = query::FormatBlockRange(schema.time_blocks->width, range);
  a.block_starts = query::BlockStarts(schema.time_blocks->width, range);
}

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

}  // namespace dpq::engine
