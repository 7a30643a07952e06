#include "server/engine/noisy_release.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/base/status_macros.h"
#include "server/dp/accounting/privacy_event.h"
#include "server/dp/additive_mechanism.h"
#include "server/dp/dp_quantile.h"
#include "server/dp/partition_selection.h"
#include "server/dp/quantile_interval.h"
#include "server/engine/plan_report.h"

namespace dpq::engine {
namespace {

using query::AggregateKind;
using query::NoiseComponent;
using Statistic = query::NoiseComponent::Statistic;

// The events a component composes into the ledger. A single-coordinate Laplace release is the
// discrete Laplace mechanism with integer shift D = floor(Delta/gamma) + 1 and scale t in grid
// steps (its exact PLD/RDP are tighter than pure epsilon); a vector release is charged as pure
// epsilon-DP (its L1 argument), and the discrete Gaussian by its actual sigma and grid (L2)
// sensitivity, which RDP and zCDP accountants compose tightly (Canonne, Kamath, Steinke 2020,
// Thm. 4 for one coordinate, Thm. 14 for a vector).
std::string EventOf(const dp::AdditiveMechanism& m, int changed_coordinates) {
  if (m.delta() > 0) {
    return dp::accounting::PrivacyEvent::Gaussian(m.noise_scale(), m.privacy_sensitivity())
        .ToSpec();
  }
  if (changed_coordinates == 1) {
    // Rounded neighbours differ by at most floor(Delta/gamma) + 1 integer steps (one for the
    // rounding); the sampler's scale in steps is noise_scale / gamma (exact: gamma is a power of 2).
    const double steps = std::floor(m.sensitivity() / m.granularity()) + 1;
    return dp::accounting::PrivacyEvent::DiscreteLaplace(m.noise_scale() / m.granularity(),
                                                         static_cast<int64_t>(steps))
        .ToSpec();
  }
  return dp::accounting::PrivacyEvent::PureDp(m.epsilon()).ToSpec();
}
}  // namespace

absl::StatusOr<Calibrated> Calibrate(query::MechanismKind kind, const NoiseComponent& c,
                                     double confidence) {
  Calibrated out;
  if (kind == query::MechanismKind::kGaussian) {
    ASSIGN_OR_RETURN(out.mechanism, dp::CreateGaussianMechanism(c.epsilon, c.delta, c.sensitivity,
                                                                c.changed_coordinates));
  } else {
    ASSIGN_OR_RETURN(out.mechanism,
                     dp::CreateLaplaceMechanism(c.epsilon, c.sensitivity, c.changed_coordinates));
  }
  ASSIGN_OR_RETURN(out.half_width, out.mechanism->ConfidenceHalfWidth(confidence));
  // The mechanism rounds the true value to its grid before adding the noise (additive_mechanism.h),
  // so the release is off by the noise plus up to half a step: the noise's half-width alone covers
  // the rounded value, not the true one. Counts are integers, which are grid points when the step
  // (a power of two) is at most 1; any other statistic gets the half step added, so the interval
  // holds the true value whenever |noise| <= the half-width (probability >= confidence). This
  // matters at large epsilon, where the noise is a few steps: at epsilon 1e6 with sensitivity 64
  // (scale ~1.05 steps, half-width 3 steps) a value half a step off the grid was covered with
  // probability 1 - P(|Z| > 3) - P(Z = 3) = 1 - 0.032 - 0.025 = 0.943, not 0.95.
  const double gamma = out.mechanism->granularity();
  const bool integer_statistic = c.statistic == NoiseComponent::Statistic::kCount ||
                                 c.statistic == NoiseComponent::Statistic::kBucketCounts;
  if (!(integer_statistic && gamma <= 1)) out.half_width += gamma / 2;
  return out;
}

namespace {

struct Noisy {
  double value, lo, hi, scale;
};

// The exact statistic limited to the mechanism's grid range, |x / gamma| <= 2^61, where its grid
// rounding cannot fail (additive_mechanism.h: OUT_OF_RANGE from 2^62 steps). Clamping is
// 1-Lipschitz, so it changes no sensitivity: the release stays private and can no longer fail on
// data. (Reached only by a statistic of more than ~2^40 rows: a step is at least Delta 2^-21.)
double OnGrid(double exact, double gamma) {
  const double limit = std::ldexp(gamma, 61);
  return std::clamp(exact, -limit, limit);
}

absl::StatusOr<Noisy> AddNoise(const Calibrated& c, double exact, dp::RandomSource& rng) {
  ASSIGN_OR_RETURN(double v, c.mechanism->AddNoise(OnGrid(exact, c.mechanism->granularity()), rng));
  return Noisy{v, v - c.half_width, v + c.half_width, c.mechanism->noise_scale()};
}

// Post-processing that keeps every released number representable (JSON has no infinities): the
// values above are finite whenever the bounds are within query::kMaxBoundMagnitude, so this is a
// last line that never changes a valid release.
double Finite(double x) {
  if (std::isnan(x)) return 0;
  return std::clamp(x, -std::numeric_limits<double>::max(), std::numeric_limits<double>::max());
}

std::string Edge(double x) { return absl::StrFormat("%g", x); }

// Values are clamped into [e_0, e_n] before they are binned, so the first bin also holds every
// value below e_0 and the last every value above e_n: the label says so ("[0, 10) incl. < 0",
// "[50, 60] incl. > 60"), rather than claim a range its count does not keep to.
std::string BinLabel(const std::vector<double>& e, size_t i) {
  const bool first = i == 0, last = i + 2 == e.size();
  std::string label = absl::StrCat("[", Edge(e[i]), ", ", Edge(e[i + 1]), last ? "]" : ")");
  if (first) absl::StrAppend(&label, " incl. < ", Edge(e[i]));
  if (last) absl::StrAppend(&label, first ? " and > " : " incl. > ", Edge(e[i + 1]));
  return label;
}

}  // namespace

absl::StatusOr<dp::QuantileBand> QuantileBandOf(const query::QueryPlan& plan,
                                                const dp::AdditiveMechanism& histogram) {
  return dp::QuantileBand::Create(static_cast<int64_t>(plan.scan.bucket_edges.size()) - 1,
                                  plan.spec.quantiles, histogram.granularity(),
                                  histogram.noise_scale() / histogram.granularity(),
                                  plan.spec.confidence);
}

absl::StatusOr<double> QuantileRankError(const query::QueryPlan& plan, const dp::QuantileBand* band,
                                         size_t level) {
  if (plan.quantile_epsilon > 0) {
    return dp::RankErrorBound(static_cast<int64_t>(plan.scan.bucket_edges.size()) - 1,
                              plan.spec.quantiles[level],
                              static_cast<int>(plan.spec.quantiles.size()), plan.quantile_epsilon,
                              plan.spec.max_contributions, plan.spec.confidence);
  }
  if (band == nullptr)
    return absl::InternalError("quantile rank error: no band for the CDF values");
  return band->MaxHalfWidth(level);
}

namespace {

// Releases one group's rows.
class GroupReleaser {
 public:
  // `band` and `rank_errors` (one per level): the quantile intervals' band and the levels'
  // rank-error bounds (quantile plans only), data-independent and shared by every group.
  GroupReleaser(const query::QueryPlan& plan, const std::vector<Calibrated>& components,
                const dp::QuantileBand* band, const std::vector<double>& rank_errors,
                dp::RandomSource& rng)
      : plan_(plan),
        spec_(plan.spec),
        c_(components),
        band_(band),
        rank_errors_(rank_errors),
        rng_(rng) {}

  absl::Status Release(const store::GroupStats& g, std::vector<ReleasedRow>& out) {
    std::vector<std::string> key = g.key;
    std::string category;
    const bool text_histogram =
        spec_.aggregate == AggregateKind::kHistogram && plan_.scan.bucket_edges.empty();
    if (text_histogram && !key.empty()) {  // the histogram's column is the last group column
      category = key.back();
      key.pop_back();
    }
    if (spec_.keys_only) {
      // The key is the release (QuerySpec::keys_only): no statistic, so no value or interval.
      AppendRow(key, "", Noisy{}, out);
      return absl::OkStatus();
    }
    switch (spec_.aggregate) {
      case AggregateKind::kCount: {
        // A pre-aggregated count releases the sum of the units' clamped row counts (planner.h).
        const double exact = plan_.scan.pre_aggregate_count ? g.sum : static_cast<double>(g.count);
        ASSIGN_OR_RETURN(Noisy n, AddNoise(c_[0], exact, rng_));
        AppendRow(key, "", n, out);
        return absl::OkStatus();
      }
      case AggregateKind::kSum: {
        ASSIGN_OR_RETURN(Noisy n, AddNoise(c_[0], g.sum, rng_));
        AppendRow(key, "", n, out);
        return absl::OkStatus();
      }
      case AggregateKind::kHistogram: {
        if (text_histogram) {
          ASSIGN_OR_RETURN(Noisy n, AddNoise(c_[0], static_cast<double>(g.count), rng_));
          AppendRow(key, category, n, out);
          return absl::OkStatus();
        }
        return ReleaseBins(g, key, out);
      }
      case AggregateKind::kMean: {
        ASSIGN_OR_RETURN(Noisy sum, AddNoise(c_[0], g.sum, rng_));
        ASSIGN_OR_RETURN(Noisy count, AddNoise(c_[1], static_cast<double>(g.count), rng_));
        AppendRow(key, "", Mean(sum, count), out);
        return absl::OkStatus();
      }
      case AggregateKind::kVariance:
      case AggregateKind::kStddev: return ReleaseSpread(g, key, out);
      case AggregateKind::kQuantile: return ReleaseQuantileRows(g, key, out);
    }
    return absl::InternalError("unknown aggregate");
  }

 private:
  static void AppendRow(const std::vector<std::string>& key, std::string label, const Noisy& n,
                        std::vector<ReleasedRow>& out) {
    ReleasedRow r;
    r.key = key;
    r.label = std::move(label);
    r.value = n.value;
    r.ci_lower = n.lo;
    r.ci_upper = n.hi;
    r.noise_scale = n.scale;
    out.push_back(std::move(r));
  }

  // A numeric histogram: one noisy count per bin.
  absl::Status ReleaseBins(const store::GroupStats& g, const std::vector<std::string>& key,
                           std::vector<ReleasedRow>& out) {
    const std::vector<double>& e = plan_.scan.bucket_edges;
    for (size_t i = 0; i + 1 < e.size(); ++i) {
      const double exact = i < g.buckets.size() ? static_cast<double>(g.buckets[i]) : 0.0;
      ASSIGN_OR_RETURN(Noisy n, AddNoise(c_[0], exact, rng_));
      AppendRow(key, BinLabel(e, i), n, out);
    }
    return absl::OkStatus();
  }

  // Variance, or its square root (stddev), from the noisy moments.
  absl::Status ReleaseSpread(const store::GroupStats& g, const std::vector<std::string>& key,
                             std::vector<ReleasedRow>& out) {
    ASSIGN_OR_RETURN(Noisy s1, AddNoise(c_[0], g.sum, rng_));
    ASSIGN_OR_RETURN(Noisy s2, AddNoise(c_[1], g.sum_sq, rng_));
    ASSIGN_OR_RETURN(Noisy n, AddNoise(c_[2], static_cast<double>(g.count), rng_));
    Noisy var = Variance(s1, s2, n);
    if (spec_.aggregate == AggregateKind::kStddev) {
      var = Noisy{std::sqrt(var.value), std::sqrt(var.lo), std::sqrt(var.hi), var.scale};
    }
    AppendRow(key, "", var, out);
    return absl::OkStatus();
  }

  // Quantiles: the values and their intervals, one row per level.
  absl::Status ReleaseQuantileRows(const store::GroupStats& g, const std::vector<std::string>& key,
                                   std::vector<ReleasedRow>& out) {
    // The noisy histogram over the quantile buckets gives the intervals (quantile_interval.h).
    // With few levels the exponential mechanism chooses the values (dp_quantile.h), which are
    // then clamped into their intervals (post-processing: a point outside an interval that
    // holds the quantile moves closer); with many, the values come from the same noisy CDF.
    const std::vector<double>& edges = plan_.scan.bucket_edges;
    std::vector<int64_t> counts = g.buckets;
    counts.resize(edges.size() - 1, 0);
    const bool selected = plan_.quantile_epsilon > 0;
    std::vector<double> values;
    if (selected) {
      ASSIGN_OR_RETURN(values,
                       dp::ReleaseQuantiles(counts, *spec_.lower, *spec_.upper, spec_.quantiles,
                                            plan_.quantile_epsilon, spec_.max_contributions, rng_));
    }
    std::vector<double> noisy(counts.size());
    for (size_t i = 0; i < counts.size(); ++i) {
      const double exact = OnGrid(static_cast<double>(counts[i]), c_[0].mechanism->granularity());
      ASSIGN_OR_RETURN(noisy[i], c_[0].mechanism->AddNoise(exact, rng_));
    }
    ASSIGN_OR_RETURN(std::vector<dp::ValueInterval> intervals, band_->Intervals(noisy, edges));
    if (!selected) {
      ASSIGN_OR_RETURN(values, band_->Estimates(noisy, edges));
    }
    for (size_t i = 0; i < values.size(); ++i) {
      ReleasedRow r;
      r.key = key;
      r.label = absl::StrCat("q=", absl::StrFormat("%g", spec_.quantiles[i]));
      r.value = std::clamp(values[i], intervals[i].lower, intervals[i].upper);
      r.ci_lower = intervals[i].lower;
      r.ci_upper = intervals[i].upper;
      r.noise_scale = c_[0].mechanism->noise_scale();
      r.rank_error = rank_errors_[i];
      out.push_back(std::move(r));
    }
    return absl::OkStatus();
  }

  // Mean: both component intervals were built at level 1 - (1 - confidence) / 2, so they hold
  // together with probability >= confidence (Bonferroni); the mean's interval is the range of
  // centre + S / C over that box, monotone in S and C, clipped to [lower, upper]. Post-processing
  // (free under DP): a count below one is treated as one, and the mean is clamped to the range.
  Noisy Mean(const Noisy& sum, const Noisy& count) const {
    const double lo = *spec_.lower, hi = *spec_.upper, center = plan_.scan.center;
    Noisy out{std::clamp(center + sum.value / std::max(count.value, 1.0), lo, hi), lo, hi,
              sum.scale};
    if (count.lo >= 1) {  // else the ratio is unbounded and only the public range is valid
      const double r[] = {sum.lo / count.lo, sum.lo / count.hi, sum.hi / count.lo,
                          sum.hi / count.hi};
      out.lo = std::clamp(center + *std::min_element(std::begin(r), std::end(r)), lo, hi);
      out.hi = std::clamp(center + *std::max_element(std::begin(r), std::end(r)), lo, hi);
    }
    return out;
  }

  // Variance of the clamped values from the centred moments: var = S2/N - (S1/N)^2, clamped to
  // [0, ((U - L) / 2)^2] (post-processing). Interval: the three component intervals hold together
  // with probability >= confidence (Bonferroni, each at 1 - (1 - confidence) / 3); over that box,
  // S2/N lies between its values at the box corners and (S1/N)^2 between the square of the
  // smallest and of the largest |S1|/N, so var lies in [min a - max b, max a - min b].
  Noisy Variance(const Noisy& s1, const Noisy& s2, const Noisy& n) const {
    const double half = *spec_.upper / 2 - *spec_.lower / 2;
    const double max_var = half * half;
    const double count = std::max(n.value, 1.0);
    const double mean = s1.value / count;
    Noisy out{std::clamp(s2.value / count - mean * mean, 0.0, max_var), 0.0, max_var, s2.scale};
    if (n.lo >= 1) {
      const double a[] = {s2.lo / n.lo, s2.lo / n.hi, s2.hi / n.lo, s2.hi / n.hi};
      const double a_lo = *std::min_element(std::begin(a), std::end(a));
      const double a_hi = *std::max_element(std::begin(a), std::end(a));
      const double abs_lo =
          (s1.lo <= 0 && s1.hi >= 0) ? 0.0 : std::min(std::fabs(s1.lo), std::fabs(s1.hi));
      const double abs_hi = std::max(std::fabs(s1.lo), std::fabs(s1.hi));
      const double b_lo = (abs_lo / n.hi) * (abs_lo / n.hi);
      const double b_hi = (abs_hi / n.lo) * (abs_hi / n.lo);
      out.lo = std::clamp(a_lo - b_hi, 0.0, max_var);
      out.hi = std::clamp(a_hi - b_lo, 0.0, max_var);
    }
    return out;
  }

  const query::QueryPlan& plan_;
  const query::QuerySpec& spec_;
  const std::vector<Calibrated>& c_;
  const dp::QuantileBand* band_;
  const std::vector<double>& rank_errors_;
  dp::RandomSource& rng_;
};

}  // namespace

double ComponentConfidence(const query::QueryPlan& plan) {
  const size_t n = plan.components.size();
  return n <= 1 ? plan.spec.confidence : 1 - (1 - plan.spec.confidence) / static_cast<double>(n);
}

absl::StatusOr<ReleasePlan> PrepareRelease(const query::QueryPlan& plan) {
  ReleasePlan out;
  const double level = ComponentConfidence(plan);
  for (const NoiseComponent& c : plan.components) {
    ASSIGN_OR_RETURN(Calibrated calibrated, Calibrate(plan.spec.mechanism, c, level));
    out.events.push_back(EventOf(*calibrated.mechanism, c.changed_coordinates));
    out.components.push_back(std::move(calibrated));
  }
  if (!out.components.empty()) {
    // Summary scales: the first component (count, sum), the sum of squares' for a variance, and
    // for ratios the count's; the sensitivity is that of the component whose scale is reported.
    const size_t summary = SummaryComponent(plan);
    out.noise_scale = out.components[summary].mechanism->noise_scale();
    out.sensitivity = plan.components[summary].sensitivity;
    if (out.components.size() > 1)
      out.count_noise_scale = out.components.back().mechanism->noise_scale();
  }
  if (plan.spec.aggregate == AggregateKind::kQuantile) {
    if (plan.quantile_epsilon > 0) {
      RETURN_IF_ERROR(
          dp::ValidateQuantileRelease(static_cast<int64_t>(plan.scan.bucket_edges.size()) - 1,
                                      *plan.spec.lower, *plan.spec.upper, plan.spec.quantiles,
                                      plan.quantile_epsilon, plan.spec.max_contributions));
      out.events.push_back(
          dp::accounting::PrivacyEvent::PureDp(plan.quantile_epsilon * plan.scan.max_partitions)
              .ToSpec());
    }
    ASSIGN_OR_RETURN(out.band, QuantileBandOf(plan, *out.components.at(0).mechanism));
    for (size_t i = 0; i < plan.spec.quantiles.size(); ++i) {
      ASSIGN_OR_RETURN(double e, QuantileRankError(plan, &*out.band, i));
      out.rank_errors.push_back(e);
    }
  }
  if (plan.grouped() && plan.selection.needed) {
    ASSIGN_OR_RETURN(out.selector,
                     dp::PartitionSelector::Create(plan.selection.epsilon, plan.selection.delta,
                                                   plan.selection.max_partitions));
    out.events.push_back(
        dp::accounting::PrivacyEvent::ApproxDp(plan.selection.epsilon, plan.selection.delta)
            .ToSpec());
  }
  return out;
}

absl::StatusOr<NoisyRelease> ReleaseWithNoise(const query::QueryPlan& plan,
                                              const ReleasePlan& prepared,
                                              const store::ScanResult& exact,
                                              dp::RandomSource& rng) {
  NoisyRelease out;
  out.events = prepared.events;
  out.noise_scale = prepared.noise_scale;
  out.count_noise_scale = prepared.count_noise_scale;
  out.sensitivity = prepared.sensitivity;
  GroupReleaser releaser(plan, prepared.components, prepared.band ? &*prepared.band : nullptr,
                         prepared.rank_errors, rng);

  if (!plan.grouped()) {
    RETURN_IF_ERROR(releaser.Release(exact, out.rows));
  } else if (!plan.selection.needed) {
    // Declared keys: every key is released, with zero statistics when no row has it.
    std::map<std::vector<std::string>, const store::GroupStats*> found;
    for (const store::GroupStats& g : exact.groups) found[g.key] = &g;
    for (const std::vector<std::string>& key : plan.declared_keys) {
      auto it = found.find(key);
      store::GroupStats empty;
      empty.key = key;
      RETURN_IF_ERROR(releaser.Release(it == found.end() ? empty : *it->second, out.rows));
    }
  } else {
    // Keys from the data: each group is kept with the selection probability of its number of
    // distinct contributing units (Desfontaines, Voss, Gipson, Mandayam 2022, Thm. 1).
    for (const store::GroupStats& g : exact.groups) {
      if (!prepared.selector->Keep(g.units, rng)) continue;
      RETURN_IF_ERROR(releaser.Release(g, out.rows));
    }
  }
  for (ReleasedRow& r : out.rows) {
    r.value = Finite(r.value);
    r.ci_lower = Finite(r.ci_lower);
    r.ci_upper = Finite(r.ci_upper);
  }
  if (out.rows.size() == 1 && out.rows[0].has_interval && !plan.multi_valued()) {
    out.value = out.rows[0].value;
    out.ci_lower = out.rows[0].ci_lower;
    out.ci_upper = out.rows[0].ci_upper;
  } else if (out.rows.size() == 1) {
    out.value = out.rows[0].value;
  }
  return out;
}

}  // namespace dpq::engine
