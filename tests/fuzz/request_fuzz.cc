// Fuzz target: what dpqd does with a decoded dpq.v1.QueryRequest before any database access:
// QuerySpecFromProto (server/api/proto_convert.h), then the engine's preparation
// (QueryEngine::Prepare: PlanQuery, the `--where` filter, PrepareRelease calibrating every
// mechanism). The dataset lookup is replaced by fixed schemas chosen by the request's `dataset`.
// Input: a QueryRequest in protobuf text format (what the seed corpus holds, readable) or, failing
// that, in binary wire format (what gRPC delivers).
// Invariants beyond "no crash, no sanitizer report":
//   - refusals are INVALID_ARGUMENT or OUT_OF_RANGE with a bounded message (no echo of the input);
//   - an accepted query has a finite epsilon in (0, kMaxEpsilon] charged exactly
//     (EpsilonFromUnits), delta in [0, 1), K and M in range, clamp bounds and bucket edges finite
//     within +-kMaxBoundMagnitude with lower < upper, finite positive sensitivities, and the
//     mechanisms' epsilons and deltas (components, partition selection, quantile selection) add up
//     to at most the charge;
//   - every calibrated mechanism has a finite positive noise scale and a finite interval;
//   - planning is deterministic, and the normalised spec plans to the same fingerprint.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "dpq/v1/dpq.pb.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/stubs/logging.h"
#include "google/protobuf/text_format.h"
#include "server/api/proto_convert.h"
#include "server/engine/noisy_release.h"
#include "server/query/dataset_schema.h"
#include "server/query/epsilon_guidance.h"
#include "server/query/filter/type_checker.h"
#include "server/query/planner.h"
#include "server/query/privacy_units.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using dpq::query::ColumnSchema;
using dpq::query::ColumnType;
using dpq::query::DatasetSchema;
using dpq::query::kMaxBoundMagnitude;

DatasetSchema People() {
  DatasetSchema s;
  s.id = 1;
  s.name = "people";
  s.privacy_unit = "person_id";
  s.has_row_rank = true;
  s.epsilon_preset = "census";
  s.columns = {
      {"person_id", ColumnType::kInteger, absl::nullopt, absl::nullopt, {}},
      {"age", ColumnType::kInteger, 0.0, 120.0, {}},
      {"wage", ColumnType::kDouble, 0.0, 1e6, {}},
      {"income", ColumnType::kDouble, absl::nullopt, absl::nullopt, {}},
      {"huge", ColumnType::kDouble, -kMaxBoundMagnitude, kMaxBoundMagnitude, {}},
      {"sex", ColumnType::kText, absl::nullopt, absl::nullopt, {"F", "M"}},
      {"region",
       ColumnType::kText,
       absl::nullopt,
       absl::nullopt,
       {"north", "south", "east", "west"}},
      {"city", ColumnType::kText, absl::nullopt, absl::nullopt, {}},
  };
  return s;
}

// Declared before the public magnitude limit existed: bounds beyond it, no row rank, text unit.
DatasetSchema Legacy() {
  DatasetSchema s;
  s.id = 2;
  s.name = "legacy";
  s.privacy_unit = "household";
  s.columns = {
      {"household", ColumnType::kText, absl::nullopt, absl::nullopt, {}},
      {"x", ColumnType::kDouble, -1e300, 1e300, {}},
      {"n", ColumnType::kInteger, -1.0, 1.0, {}},
      {"tag", ColumnType::kText, absl::nullopt, absl::nullopt, {}},
  };
  return s;
}

const DatasetSchema* Find(const std::string& name) {
  static const DatasetSchema* people = new DatasetSchema(People());
  static const DatasetSchema* legacy = new DatasetSchema(Legacy());
  if (name == people->name) return people;
  if (name == legacy->name) return legacy;
  return nullptr;
}

class SilentErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
  void AddWarning(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
};

bool Decode(const uint8_t* data, size_t size, dpq::v1::QueryRequest* request) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  google::protobuf::TextFormat::Parser parser;
  SilentErrors errors;
  parser.RecordErrorsTo(&errors);
  if (parser.ParseFromString(bytes, request)) return true;
  request->Clear();
  return request->ParseFromString(bytes);
}

constexpr size_t kMaxMessageBytes = 1024;

void CheckRefusal(const absl::Status& status, const char* stage) {
  DPQ_FUZZ_CHECK(status.code() == absl::StatusCode::kInvalidArgument ||
                     status.code() == absl::StatusCode::kOutOfRange,
                 "%s: %s", stage, status.ToString().c_str());
  DPQ_FUZZ_CHECK(status.message().size() <= kMaxMessageBytes, "%s: message of %zu bytes", stage,
                 status.message().size());
}

bool FiniteWithinLimit(double x) { return std::isfinite(x) && std::fabs(x) <= kMaxBoundMagnitude; }

void CheckPlan(const dpq::query::QueryPlan& plan, const dpq::engine::ReleasePlan& release) {
  using dpq::query::QuerySpec;
  const QuerySpec& spec = plan.spec;
  DPQ_FUZZ_CHECK(
      std::isfinite(spec.epsilon) && spec.epsilon > 0 && spec.epsilon <= dpq::query::kMaxEpsilon,
      "epsilon %.17g", spec.epsilon);
  DPQ_FUZZ_CHECK(
      plan.epsilon_units >= 1 && spec.epsilon == dpq::query::EpsilonFromUnits(plan.epsilon_units),
      "epsilon %.17g charged as %lld units", spec.epsilon,
      static_cast<long long>(plan.epsilon_units));
  DPQ_FUZZ_CHECK(spec.delta >= 0 && spec.delta < 1 && plan.delta_units >= 0 &&
                     spec.delta == dpq::query::DeltaFromUnits(plan.delta_units),
                 "delta %.17g charged as %lld units", spec.delta,
                 static_cast<long long>(plan.delta_units));
  DPQ_FUZZ_CHECK(spec.confidence > 0 && spec.confidence < 1, "confidence %.17g", spec.confidence);
  DPQ_FUZZ_CHECK(plan.scan.max_contributions >= 1 && plan.scan.max_contributions <= 1000000, "K %d",
                 plan.scan.max_contributions);
  DPQ_FUZZ_CHECK(
      plan.scan.max_partitions >= 1 && plan.scan.max_partitions <= dpq::query::kMaxPartitionsLimit,
      "M %d", plan.scan.max_partitions);
  if (!plan.scan.value_column.empty()) {
    DPQ_FUZZ_CHECK(FiniteWithinLimit(plan.scan.clamp_lower) &&
                       FiniteWithinLimit(plan.scan.clamp_upper) &&
                       plan.scan.clamp_lower < plan.scan.clamp_upper,
                   "clamp [%.17g, %.17g]", plan.scan.clamp_lower, plan.scan.clamp_upper);
    DPQ_FUZZ_CHECK(std::isfinite(plan.scan.center), "center %.17g", plan.scan.center);
  }
  for (size_t i = 0; i < plan.scan.bucket_edges.size(); ++i) {
    const double e = plan.scan.bucket_edges[i];
    DPQ_FUZZ_CHECK(FiniteWithinLimit(e), "bucket edge %.17g", e);
    DPQ_FUZZ_CHECK(i == 0 || plan.scan.bucket_edges[i - 1] <= e, "bucket edges decrease at %zu", i);
  }
  if (spec.aggregate == dpq::query::AggregateKind::kHistogram && !spec.bins.empty()) {
    for (size_t i = 1; i < spec.bins.size(); ++i) {
      DPQ_FUZZ_CHECK(spec.bins[i - 1] < spec.bins[i], "bins not strictly increasing at %zu", i);
    }
  }
  DPQ_FUZZ_CHECK(plan.declared_keys.size() <= dpq::query::kMaxKeys, "%zu declared keys",
                 plan.declared_keys.size());
  DPQ_FUZZ_CHECK(!plan.components.empty(), "no noise component");

  // Basic composition of everything the release spends; long double so the sum is not rounded up.
  long double epsilon_spent = 0, delta_spent = 0;
  for (const dpq::query::NoiseComponent& c : plan.components) {
    DPQ_FUZZ_CHECK(std::isfinite(c.epsilon) && c.epsilon > 0, "component epsilon %.17g", c.epsilon);
    DPQ_FUZZ_CHECK(std::isfinite(c.delta) && c.delta >= 0 && c.delta < 1, "component delta %.17g",
                   c.delta);
    DPQ_FUZZ_CHECK(std::isfinite(c.sensitivity) && c.sensitivity > 0, "sensitivity %.17g",
                   c.sensitivity);
    DPQ_FUZZ_CHECK(c.changed_coordinates >= 1, "changed coordinates %d", c.changed_coordinates);
    epsilon_spent += c.epsilon;
    delta_spent += c.delta;
  }
  if (plan.selection.needed) {
    epsilon_spent += plan.selection.epsilon;
    delta_spent += plan.selection.delta;
  }
  epsilon_spent += static_cast<long double>(plan.quantile_epsilon) * plan.scan.max_partitions;
  DPQ_FUZZ_CHECK(epsilon_spent <= static_cast<long double>(spec.epsilon),
                 "mechanisms spend epsilon %.20Lg > charged %.17g", epsilon_spent, spec.epsilon);
  DPQ_FUZZ_CHECK(delta_spent <= static_cast<long double>(spec.delta),
                 "mechanisms spend delta %.20Lg > charged %.17g", delta_spent, spec.delta);

  DPQ_FUZZ_CHECK(release.components.size() == plan.components.size(),
                 "%zu mechanisms for %zu components", release.components.size(),
                 plan.components.size());
  for (size_t i = 0; i < release.components.size(); ++i) {
    const auto& m = release.components[i];
    DPQ_FUZZ_CHECK(m.mechanism != nullptr, "component %zu has no mechanism", i);
    DPQ_FUZZ_CHECK(std::isfinite(m.mechanism->noise_scale()) && m.mechanism->noise_scale() > 0,
                   "noise scale %.17g", m.mechanism->noise_scale());
    DPQ_FUZZ_CHECK(m.mechanism->epsilon() <= plan.components[i].epsilon,
                   "mechanism epsilon %.17g > component's %.17g", m.mechanism->epsilon(),
                   plan.components[i].epsilon);
    DPQ_FUZZ_CHECK(std::isfinite(m.half_width) && m.half_width >= 0, "half width %.17g",
                   m.half_width);
  }
  DPQ_FUZZ_CHECK(std::isfinite(release.noise_scale) && std::isfinite(release.count_noise_scale) &&
                     std::isfinite(release.sensitivity),
                 "release scales %.17g %.17g %.17g", release.noise_scale, release.count_noise_scale,
                 release.sensitivity);
  DPQ_FUZZ_CHECK(!release.events.empty(), "nothing to charge");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = [] {
    google::protobuf::SetLogHandler(nullptr);  // invalid UTF-8 in a string field is logged
    return true;
  }();
  (void)quiet;

  dpq::v1::QueryRequest request;
  if (!Decode(data, size, &request)) return 0;  // gRPC refuses it before dpqd sees it

  absl::StatusOr<dpq::query::QuerySpec> spec = dpq::api::QuerySpecFromProto(request);
  if (!spec.ok()) {
    CheckRefusal(spec.status(), "convert");
    return 0;
  }
  const DatasetSchema* schema = Find(spec->dataset);
  if (schema == nullptr) return 0;  // NOT_FOUND comes from the database

  // QueryEngine::Prepare, step by step.
  absl::StatusOr<dpq::query::QueryPlan> plan = dpq::query::PlanQuery(*spec, *schema);
  if (!plan.ok()) {
    CheckRefusal(plan.status(), "plan");
    return 0;
  }
  if (!spec->where.empty()) {
    absl::StatusOr<dpq::query::filter::TypedFilter> filter =
        dpq::query::filter::ParseAndCheckFilter(spec->where, *schema);
    if (!filter.ok()) {
      CheckRefusal(filter.status(), "where");
      return 0;
    }
  }
  absl::StatusOr<dpq::engine::ReleasePlan> release = dpq::engine::PrepareRelease(*plan);
  if (!release.ok()) {
    CheckRefusal(release.status(), "release");
    return 0;
  }
  CheckPlan(*plan, *release);
  (void)dpq::query::QueryWarnings(plan->spec.epsilon, schema->epsilon_preset);

  absl::StatusOr<dpq::query::QueryPlan> again = dpq::query::PlanQuery(*spec, *schema);
  DPQ_FUZZ_CHECK(again.ok() && again->fingerprint == plan->fingerprint,
                 "planning is not deterministic");
  absl::StatusOr<dpq::query::QueryPlan> normalised = dpq::query::PlanQuery(plan->spec, *schema);
  DPQ_FUZZ_CHECK(normalised.ok(), "the normalised spec is refused: %s (%s)",
                 normalised.status().ToString().c_str(), plan->fingerprint.c_str());
  DPQ_FUZZ_CHECK(normalised->fingerprint == plan->fingerprint, "fingerprint moves: %s -> %s",
                 plan->fingerprint.c_str(), normalised->fingerprint.c_str());
  return 0;
}
