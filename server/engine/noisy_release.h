// Turns a plan's exact scan result into released values: one calibrated mechanism per noise
// component (shared by all groups), DP partition selection of the groups when their keys are not
// declared, the exponential mechanism for quantiles, then each aggregate's post-processing (mean =
// centre + sum / count, variance = S2/N - (S1/N)^2) and its confidence interval.
#ifndef DPQ_SERVER_ENGINE_NOISY_RELEASE_H_
#define DPQ_SERVER_ENGINE_NOISY_RELEASE_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/dp/additive_mechanism.h"
#include "server/dp/partition_selection.h"
#include "server/dp/quantile_interval.h"
#include "server/dp/random_source.h"
#include "server/query/planner.h"
#include "server/store/aggregate_scanner.h"

namespace dpq::engine {

// One released value.
struct ReleasedRow {
  std::vector<std::string> key;  // group values (group_by order); empty without group-by
  std::string label;             // "q=0.5", "[0, 10)", a category; empty for the aggregate itself
  double value = 0;
  // Holds the true value (of the kept, clamped rows) with probability >= confidence over the
  // noise. A query's quantile intervals hold simultaneously (dp/quantile_interval.h); quantile
  // rows also carry rank_error, the selection's rank-error bound (dp_quantile.h).
  bool has_interval = true;
  double ci_lower = 0;
  double ci_upper = 0;
  double noise_scale = 0;
  double rank_error = 0;
};

struct NoisyRelease {
  std::vector<ReleasedRow> rows;
  // Summary of a single-valued answer (rows[0]); zero for multi-valued ones.
  double value = 0;
  double ci_lower = 0;
  double ci_upper = 0;
  double noise_scale = 0;  // of the count (COUNT), sum (SUM, MEAN) or sum of squares (VARIANCE)
  double count_noise_scale = 0;  // MEAN, VARIANCE, STDDEV
  double sensitivity = 0;        // of the component noise_scale belongs to
  // One privacy event per released component, as accountant event specs (see EventOf in the .cc).
  std::vector<std::string> events;
};

// One noise component's mechanism and the half-width of its interval at `confidence` (which
// includes the rounding to the mechanism's grid, so it covers the true value).
struct Calibrated {
  std::unique_ptr<dp::AdditiveMechanism> mechanism;
  double half_width = 0;
};
absl::StatusOr<Calibrated> Calibrate(query::MechanismKind kind, const query::NoiseComponent& c,
                                     double confidence);

// The level each component's interval is built at: the components of one value are combined by
// a union bound (Bonferroni), so together they hold with probability >= the plan's confidence.
double ComponentConfidence(const query::QueryPlan& plan);

// Quantile plans: the band of the intervals for the histogram mechanism of components[0], and each
// level's rank-error bound (the exponential mechanism's when plan.quantile_epsilon > 0, else the
// band's, which must then be given). Shared by the release and the planner.
absl::StatusOr<dp::QuantileBand> QuantileBandOf(const query::QueryPlan& plan,
                                                const dp::AdditiveMechanism& histogram);
absl::StatusOr<double> QuantileRankError(const query::QueryPlan& plan, const dp::QuantileBand* band,
                                         size_t level);

// Everything about a release that does not depend on the data: the calibrated mechanisms, the
// quantile band and rank-error bounds, the partition selector and the privacy events charged.
// Built before the scan, so that every check that can refuse a query runs before the first row is
// read (an error that only some datasets trigger is a free oracle), and the charge is
// known, and paid, before anything is looked at.
struct ReleasePlan {
  std::vector<Calibrated> components;    // one per plan.components, at ComponentConfidence(plan)
  std::optional<dp::QuantileBand> band;  // quantile plans
  std::vector<double> rank_errors;       // quantile plans: one bound per level
  std::optional<dp::PartitionSelector> selector;  // plan.selection.needed
  // One privacy event per released component (and the selection's, the exponential mechanism's),
  // as accountant event specs (see EventOf in the .cc).
  std::vector<std::string> events;
  double noise_scale = 0;  // as NoisyRelease's
  double count_noise_scale = 0;
  double sensitivity = 0;
};
// INVALID_ARGUMENT / OUT_OF_RANGE for parameters no mechanism can be calibrated for (e.g. an
// epsilon too small for the Laplace grid); never looks at data.
absl::StatusOr<ReleasePlan> PrepareRelease(const query::QueryPlan& plan);

// Adds noise to `exact` as `plan` and its `prepared` mechanisms prescribe. Fails on no data: every
// released value is finite (statistics are limited to the mechanisms' grid range first, which
// clamping does without changing any sensitivity).
absl::StatusOr<NoisyRelease> ReleaseWithNoise(const query::QueryPlan& plan,
                                              const ReleasePlan& prepared,
                                              const store::ScanResult& exact,
                                              dp::RandomSource& rng);

}  // namespace dpq::engine

#endif  // DPQ_SERVER_ENGINE_NOISY_RELEASE_H_
