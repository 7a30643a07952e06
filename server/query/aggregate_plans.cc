#include "server/query/aggregate_plans.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/base/budget_share.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"
#include "server/query/sensitivity.h"

namespace dpq::query {
namespace {

using Statistic = NoiseComponent::Statistic;

absl::Status ValidateQuantiles(QuerySpec& spec) {
  if (spec.quantiles.empty() || spec.quantiles.size() > kMaxQuantiles) {
    return absl::InvalidArgumentError(
        absl::StrCat("quantiles: give 1..", kMaxQuantiles, " levels for aggregate quantile"));
  }
  for (double& q : spec.quantiles) {
    if (!(q >= 0 && q <= 1)) {
      return absl::InvalidArgumentError(absl::StrCat("quantiles must lie in [0, 1], got ", q));
    }
    q += 0.0;  // one spelling of zero
  }
  return absl::OkStatus();
}

absl::Status ValidateBins(QuerySpec& spec) {
  if (spec.bins.size() < 2 || spec.bins.size() > kMaxBinEdges) {
    return absl::InvalidArgumentError(
        absl::StrCat("bins: a histogram of a numeric column needs 2..", kMaxBinEdges,
                     " edges, got ", spec.bins.size()));
  }
  for (size_t i = 0; i < spec.bins.size(); ++i) {
    RETURN_IF_ERROR(ValidateBound(spec.bins[i], "bins"));
    spec.bins[i] += 0.0;
    if (i > 0 && !(spec.bins[i - 1] < spec.bins[i])) {
      return absl::InvalidArgumentError("bins must be strictly increasing");
    }
  }
  return absl::OkStatus();
}

// Count: K rows per unit and group, sensitivity K; or, pre-aggregated, each unit present in a
// group adds its row count there clamped to [L, U], 0 <= L < U: one value per unit and group, so
// a sum of one row per unit with K = 1, whose sensitivity max(|L|, |U|) = U per group, M U for the
// vector (Wilson et al. 2020, "Differentially private SQL with bounded user contribution", §3).
absl::Status PlanCount(AggregateContext& c) {
  c.spec.column.clear();
  if (c.spec.pre_aggregate) {
    c.plan.scan.pre_aggregate = true;
    c.plan.scan.pre_aggregate_count = true;
    c.plan.scan.clamp_lower = *c.spec.lower;
    c.plan.scan.clamp_upper = *c.spec.upper;
    ASSIGN_OR_RETURN(double s, SumSensitivity(c.k, *c.spec.lower, *c.spec.upper));
    c.push(Statistic::kSum, c.epsilon, c.delta, s, 1);
    return absl::OkStatus();
  }
  c.spec.lower.reset();
  c.spec.upper.reset();
  ASSIGN_OR_RETURN(double count, CountSensitivity(c.k));
  c.push(Statistic::kCount, c.epsilon, c.delta, count, 1);
  return absl::OkStatus();
}

// Histogram: a text column's categories are groups (a count per category); a numeric column's
// clamped values fall in public bins, and K rows of one unit fall in at most K bins, so the count
// vector moves by K in L1.
absl::Status PlanHistogram(AggregateContext& c) {
  c.spec.lower.reset();
  c.spec.upper.reset();
  ASSIGN_OR_RETURN(double count, CountSensitivity(c.k));
  if (c.text_histogram) {
    c.push(Statistic::kCount, c.epsilon, c.delta, count, 1);
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(ValidateBins(c.spec));
  c.plan.scan.value_column = c.column->name;
  c.plan.scan.clamp_lower = c.spec.bins.front();
  c.plan.scan.clamp_upper = c.spec.bins.back();
  c.plan.scan.bucket_edges = c.spec.bins;
  c.push(Statistic::kBucketCounts, c.epsilon, c.delta, count,
         static_cast<int>(std::min<size_t>(c.k, c.spec.bins.size() - 1)));
  return absl::OkStatus();
}

// What every aggregate of a value column shares: the resolved bounds and the clamp. Pre-aggregated
// (BigQuery / ZetaSQL contribution_bounds_per_group): each unit's rows of a group become one value
// clamped to [L, U], so with K = 1 the sensitivities are those of one row per unit and group,
// whatever the number of rows a unit holds (Wilson et al. 2020, §3).
absl::Status PlanValueColumn(AggregateContext& c, AggregateKind kind) {
  RETURN_IF_ERROR(
      ResolveBounds(*c.column, c.spec, c.spec.pre_aggregate && kind == AggregateKind::kSum));
  c.plan.scan.value_column = c.column->name;
  c.plan.scan.pre_aggregate = c.spec.pre_aggregate;
  c.plan.scan.pre_aggregate_mean = c.spec.pre_aggregate && kind == AggregateKind::kMean;
  c.plan.scan.clamp_lower = *c.spec.lower;
  c.plan.scan.clamp_upper = *c.spec.upper;
  return absl::OkStatus();
}

absl::Status PlanSum(AggregateContext& c) {
  RETURN_IF_ERROR(PlanValueColumn(c, AggregateKind::kSum));
  ASSIGN_OR_RETURN(double s, SumSensitivity(c.k, *c.spec.lower, *c.spec.upper));
  c.push(Statistic::kSum, c.epsilon, c.delta, s, 1);
  return absl::OkStatus();
}

// Mean as (noisy centred sum) / (noisy count), the budget split evenly; basic composition of the
// two releases gives (epsilon, delta) in total (Dwork & Roth 2014, Thm. 3.16). Centring on the
// midpoint makes the sum's sensitivity k (U - L) / 2 wherever [L, U] sits, as Google's
// differential-privacy library does in BoundedMean (cc/algorithms/bounded-mean.h).
absl::Status PlanMean(AggregateContext& c) {
  RETURN_IF_ERROR(PlanValueColumn(c, AggregateKind::kMean));
  c.plan.scan.center = *c.spec.lower / 2 + *c.spec.upper / 2;
  ASSIGN_OR_RETURN(double s, CenteredSumSensitivity(c.k, *c.spec.lower, *c.spec.upper));
  ASSIGN_OR_RETURN(double count, CountSensitivity(c.k));
  c.push(Statistic::kSum, ShareOf(c.epsilon, 2), ShareOf(c.delta, 2), s, 1);
  c.push(Statistic::kCount, ShareOf(c.epsilon, 2), ShareOf(c.delta, 2), count, 1);
  return absl::OkStatus();
}

// Variance (and stddev, its square root) from three noisy moments of the centred values (count,
// sum, sum of squares), a third of the budget each: var = S2/N - (S1/N)^2 (Google
// differential-privacy library, BoundedVariance; Dwork & Roth 2014, Thm. 3.16 for the split).
// Centring bounds each square by ((U - L) / 2)^2.
absl::Status PlanVariance(AggregateContext& c) {
  RETURN_IF_ERROR(PlanValueColumn(c, AggregateKind::kVariance));
  c.plan.scan.center = *c.spec.lower / 2 + *c.spec.upper / 2;
  c.plan.scan.sum_squares = true;
  ASSIGN_OR_RETURN(double s, CenteredSumSensitivity(c.k, *c.spec.lower, *c.spec.upper));
  ASSIGN_OR_RETURN(double s2, CenteredSumOfSquaresSensitivity(c.k, *c.spec.lower, *c.spec.upper));
  ASSIGN_OR_RETURN(double count, CountSensitivity(c.k));
  const double third_epsilon = ShareOf(c.epsilon, 3);
  const double third_delta = ShareOf(c.delta, 3);
  c.push(Statistic::kSum, third_epsilon, third_delta, s, 1);
  c.push(Statistic::kSumSquares, third_epsilon, third_delta, s2, 1);
  c.push(Statistic::kCount, third_epsilon, third_delta, count, 1);
  return absl::OkStatus();
}

// Up to kMaxSelectedQuantiles levels: half of epsilon selects the quantiles (exponential
// mechanism, dp_quantile.h), half buys a noisy histogram over the same buckets whose CDF bounds
// them (quantile_interval.h: the value intervals, a post-processing of that histogram); basic
// composition of the two (Dwork & Roth 2014, Thm. 3.16). One selection of all quantiles per group
// at epsilon / 2m: a unit touches at most m groups, so composing over them gives epsilon / 2;
// dp_quantile.h splits a group's share over its quantiles. More levels: all of epsilon buys the
// histogram and the quantiles are read off its CDF too (QuantileBand::Estimates), because the
// exponential mechanism's rank error grows with the number of levels it splits epsilon over and
// the CDF's does not (decisions.md).
absl::Status PlanQuantile(AggregateContext& c) {
  RETURN_IF_ERROR(PlanValueColumn(c, AggregateKind::kQuantile));
  RETURN_IF_ERROR(ValidateQuantiles(c.spec));
  std::vector<double> edges(kQuantileBuckets + 1);
  // lower + (upper - lower) i / B: 7.1, not 7.1000000000000005, for i = 71 on [0, 100] (edges are
  // interval ends the analyst reads); the scaled form when the span overflows.
  const double lower = *c.spec.lower, upper = *c.spec.upper;
  const double span = upper - lower;
  for (int i = 0; i <= kQuantileBuckets; ++i) {
    edges[i] = std::isfinite(span * kQuantileBuckets)
                   ? lower + span * i / kQuantileBuckets
                   : lower + (upper / kQuantileBuckets - lower / kQuantileBuckets) * i;
  }
  edges.back() = upper;
  c.plan.scan.bucket_edges = std::move(edges);
  const bool select = c.spec.quantiles.size() <= static_cast<size_t>(kMaxSelectedQuantiles);
  c.plan.quantile_epsilon = select ? ShareOf(ShareOf(c.epsilon, 2), c.m) : 0.0;
  ASSIGN_OR_RETURN(double count, CountSensitivity(c.k));
  // K rows of one unit fall in at most K buckets: the count vector moves by K in L1.
  c.push(Statistic::kBucketCounts, select ? ShareOf(c.epsilon, 2) : c.epsilon, 0.0, count,
         std::min(c.k, kQuantileBuckets));
  return absl::OkStatus();
}

// In the order of kAllAggregateKinds.
constexpr AggregateDescription kDescriptions[] = {
    {AggregateKind::kCount, PlanCount, false},
    {AggregateKind::kSum, PlanSum, true},
    {AggregateKind::kMean, PlanMean, true},
    {AggregateKind::kVariance, PlanVariance, true},
    {AggregateKind::kStddev, PlanVariance, true},
    {AggregateKind::kQuantile, PlanQuantile, false},
    {AggregateKind::kHistogram, PlanHistogram, false}};
static_assert(std::size(kDescriptions) == std::size(kAllAggregateKinds),
              "every aggregate kind needs a description");

}  // namespace

// Resolves the clamp range: requested bounds must sit inside the declared ones, so an analyst can
// narrow but never widen what the data owner declared public.
// A pre-aggregated sum (QuerySpec::pre_aggregate) clamps a unit's total, which may lie outside
// the declared bounds of one row: `per_unit_total` lifts only that containment check.
absl::Status ResolveBounds(const ColumnSchema& column, QuerySpec& spec, bool per_unit_total) {
  if (spec.lower.has_value() != spec.upper.has_value()) {
    return absl::InvalidArgumentError("lower and upper must be given together");
  }
  if (!spec.lower.has_value()) {
    if (!column.lower.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat("lower/upper are required: column ",
                                                     column.name, " has no declared bounds"));
    }
    // Declared before the public magnitude limit existed, a bound may exceed it: refuse (a fact
    // of the schema, the same on every dataset) rather than risk a sum that overflows on data.
    RETURN_IF_ERROR(
        ValidateBound(*column.lower, absl::StrCat("declared lower bound of ", column.name)));
    RETURN_IF_ERROR(
        ValidateBound(*column.upper, absl::StrCat("declared upper bound of ", column.name)));
    spec.lower = column.lower;
    spec.upper = column.upper;
    return absl::OkStatus();
  }
  // Every bound lies within +-kMaxBoundMagnitude, so no scan can overflow whatever the rows hold
  // (a bound near DBL_MAX/n once made the float8 sum fail exactly when n rows were kept).
  RETURN_IF_ERROR(ValidateBound(*spec.lower, "lower"));
  RETURN_IF_ERROR(ValidateBound(*spec.upper, "upper"));
  // -0.0 + 0.0 == +0.0: one spelling of zero, so equal queries get equal fingerprints.
  *spec.lower += 0.0;
  *spec.upper += 0.0;
  if (!(*spec.lower < *spec.upper)) {
    return absl::InvalidArgumentError(
        absl::StrCat("lower must be < upper, got lower=", *spec.lower, " upper=", *spec.upper));
  }
  if (!per_unit_total && column.lower.has_value() &&
      (*spec.lower < *column.lower || *spec.upper > *column.upper)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "lower/upper [", *spec.lower, ", ", *spec.upper, "] must lie within the declared bounds [",
        *column.lower, ", ", *column.upper, "] of column ", column.name));
  }
  return absl::OkStatus();
}

const AggregateDescription& DescriptionOf(AggregateKind kind) {
  for (const AggregateDescription& d : kDescriptions) {
    if (d.kind == kind) return d;
  }
  return kDescriptions[0];  // unreachable: the static_assert and planner_test cover every kind
}

}  // namespace dpq::query
