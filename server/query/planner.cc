#include "server/query/planner.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"
#include "server/query/privacy_units.h"
#include "server/query/sensitivity.h"

namespace dpq::query {
namespace {

constexpr int kMaxContributionsLimit = 1000000;

absl::Status ValidatePrivacyParameters(const QuerySpec& spec) {
  RETURN_IF_ERROR(ValidateIsPositive(spec.epsilon, "epsilon"));
  if (spec.mechanism == MechanismKind::kLaplace) {
    if (spec.delta != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "delta must be 0 for the laplace mechanism (pure epsilon-DP), got ", spec.delta));
    }
  } else {
    RETURN_IF_ERROR(ValidateInOpenRange(spec.delta, 0, 1, "delta"));
  }
  RETURN_IF_ERROR(ValidateInOpenRange(spec.confidence, 0, 1, "confidence"));
  if (spec.max_contributions < 1 || spec.max_contributions > kMaxContributionsLimit) {
    return absl::InvalidArgumentError(absl::StrCat("max_contributions must lie in [1, ",
                                                   kMaxContributionsLimit, "], got ",
                                                   spec.max_contributions));
  }
  return absl::OkStatus();
}

// Resolves the clamp range: requested bounds must sit inside the declared ones, so an analyst can
// narrow but never widen what the data owner declared public.
absl::Status ResolveBounds(const ColumnSchema& column, QuerySpec& spec) {
  if (spec.lower.has_value() != spec.upper.has_value()) {
    return absl::InvalidArgumentError("lower and upper must be given together");
  }
  if (!spec.lower.has_value()) {
    if (!column.lower.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "lower/upper are required: column ", column.name, " has no declared bounds"));
    }
    spec.lower = column.lower;
    spec.upper = column.upper;
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(ValidateIsFinite(*spec.lower, "lower"));
  RETURN_IF_ERROR(ValidateIsFinite(*spec.upper, "upper"));
  // -0.0 + 0.0 == +0.0: one spelling of zero, so equal queries get equal fingerprints.
  *spec.lower += 0.0;
  *spec.upper += 0.0;
  if (!(*spec.lower < *spec.upper)) {
    return absl::InvalidArgumentError(
        absl::StrCat("lower must be < upper, got lower=", *spec.lower, " upper=", *spec.upper));
  }
  if (column.lower.has_value() && (*spec.lower < *column.lower || *spec.upper > *column.upper)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "lower/upper [", *spec.lower, ", ", *spec.upper, "] must lie within the declared bounds [",
        *column.lower, ", ", *column.upper, "] of column ", column.name));
  }
  return absl::OkStatus();
}

std::string Fingerprint(const QuerySpec& s, int64_t epsilon_units, int64_t delta_units) {
  // %.17g round-trips doubles, so two specs share a fingerprint iff they are the same query.
  return absl::StrFormat(
      "v1|dataset=%s|aggregate=%s|column=%s|lower=%.17g|upper=%.17g|k=%d|mechanism=%s|epsilon=%de-12|"
      "delta=%de-18|confidence=%.17g",
      s.dataset, AggregateName(s.aggregate), s.column, s.lower.value_or(0), s.upper.value_or(0),
      s.max_contributions, MechanismName(s.mechanism), epsilon_units, delta_units, s.confidence);
}

}  // namespace

absl::StatusOr<QueryPlan> PlanQuery(const QuerySpec& spec_in, const DatasetSchema& schema) {
  QueryPlan plan;
  plan.spec = spec_in;
  QuerySpec& spec = plan.spec;
  RETURN_IF_ERROR(ValidatePrivacyParameters(spec));
  // Charge the decimal the analyst wrote; calibrate with a value never above it.
  ASSIGN_OR_RETURN(plan.epsilon_units, EpsilonToUnits(spec.epsilon, "epsilon"));
  ASSIGN_OR_RETURN(plan.delta_units, DeltaToUnits(spec.delta, "delta"));
  spec.epsilon = EpsilonFromUnits(plan.epsilon_units);
  spec.delta = DeltaFromUnits(plan.delta_units);
  const double mech_epsilon = MechanismEpsilon(plan.epsilon_units);
  const double mech_delta = MechanismDelta(plan.delta_units);

  plan.scan.dataset_id = schema.id;
  plan.scan.unit_column = schema.privacy_unit;
  plan.scan.max_contributions = spec.max_contributions;
  const int k = spec.max_contributions;

  if (spec.aggregate == AggregateKind::kCount) {
    spec.column.clear();
    spec.lower.reset();
    spec.upper.reset();
    ASSIGN_OR_RETURN(double count_sensitivity, CountSensitivity(k));
    plan.components.push_back(
        {NoiseComponent::Statistic::kCount, mech_epsilon, mech_delta, count_sensitivity});
  } else {
    if (spec.column.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("column is required for aggregate ", AggregateName(spec.aggregate)));
    }
    const ColumnSchema* column = schema.FindColumn(spec.column);
    if (column == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("column ", spec.column.substr(0, 64), " does not exist in dataset ", schema.name));
    }
    if (!column->is_numeric()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "column ", column->name, " is text; ", AggregateName(spec.aggregate), " needs a numeric column"));
    }
    RETURN_IF_ERROR(ResolveBounds(*column, spec));
    plan.scan.value_column = column->name;
    plan.scan.clamp_lower = *spec.lower;
    plan.scan.clamp_upper = *spec.upper;

    if (spec.aggregate == AggregateKind::kSum) {
      ASSIGN_OR_RETURN(double s, SumSensitivity(k, *spec.lower, *spec.upper));
      plan.components.push_back({NoiseComponent::Statistic::kSum, mech_epsilon, mech_delta, s});
    } else {
      // Mean as (noisy centred sum) / (noisy count), the budget split evenly; basic composition of
      // the two releases gives (epsilon, delta) in total (Dwork & Roth 2014, Thm. 3.16). Centring on
      // the midpoint makes the sum's sensitivity k (U - L) / 2 wherever [L, U] sits, as Google's
      // differential-privacy library does in BoundedMean (cc/algorithms/bounded-mean.h).
      plan.scan.center = *spec.lower / 2 + *spec.upper / 2;
      ASSIGN_OR_RETURN(double s, CenteredSumSensitivity(k, *spec.lower, *spec.upper));
      ASSIGN_OR_RETURN(double c, CountSensitivity(k));
      plan.components.push_back(
          {NoiseComponent::Statistic::kSum, mech_epsilon / 2, mech_delta / 2, s});
      plan.components.push_back(
          {NoiseComponent::Statistic::kCount, mech_epsilon / 2, mech_delta / 2, c});
    }
  }
  plan.fingerprint = Fingerprint(spec, plan.epsilon_units, plan.delta_units);
  return plan;
}

}  // namespace dpq::query
