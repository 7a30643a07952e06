#include "server/dp/quantile_interval.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"
#include "server/dp/dp_quantile.h"
#include "server/dp/numeric_search.h"

namespace dpq::dp {
namespace {

// Relative inflation of every h (header, "Exactness").
constexpr double kSafety = 1e-6;
// Edges at which lambda is optimised; every other edge takes the better of its two neighbouring
// optima (any lambda is valid, so this only costs tightness, measured < 1e-3 relative).
constexpr int64_t kOptimisedEdges = 32;

// ln E[e^{s G}] for the two-sided geometric law with scale t (header), 0 <= s < 1/t. Written with
// expm1 so that it stays accurate when t is large and s close to 1/t.
double LogMgf(double s, double t) {
  if (s == 0) return 0;
  const double inv_t = 1 / t;
  return 2 * std::log(-std::expm1(-inv_t)) - std::log(-std::expm1(s - inv_t)) -
         std::log(-std::expm1(-s - inv_t));
}

// The Chernoff half-width (in steps) of N = (1 - q) sum of j G's - q sum of (B - j) G's, at
// lambda = u / (t max(q, 1 - q)), u in (0, 1): (Lambda(lambda) + log_two_over_a) / lambda.
struct ChernoffBound {
  double q, t;
  int64_t num_buckets;
  double log_two_over_a;

  double operator()(int64_t j, double u) const {
    const double s = u / (t * std::max(q, 1 - q));
    const double lambda = static_cast<double>(j) * LogMgf((1 - q) * s, t) +
                          static_cast<double>(num_buckets - j) * LogMgf(q * s, t);
    const double h = (lambda + log_two_over_a) / s;
    return std::isnan(h) ? std::numeric_limits<double>::infinity() : h;
  }

  // The u in (0, 1) minimising the bound at edge j: a coarse scan over logit(u), then golden
  // section around the best cell. The bound is quasi-convex in lambda (Lambda is convex with
  // Lambda(0) = Lambda'(0) = 0), so the scan finds the basin.
  double BestU(int64_t j) const {
    const auto at = [&](double x) { return (*this)(j, 1 / (1 + std::exp(-x))); };
    const double x = ScanThenGoldenSectionMinimize(at, -30, 30, 0.5, 1e-9, 80).x;
    return 1 / (1 + std::exp(-x));
  }
};

}  // namespace

absl::StatusOr<QuantileBand> QuantileBand::Create(int64_t num_buckets,
                                                  absl::Span<const double> quantiles,
                                                  double noise_step, double noise_scale_steps,
                                                  double confidence) {
  if (num_buckets < kMinQuantileBuckets || num_buckets > kMaxQuantileBuckets) {
    return absl::InvalidArgumentError(absl::StrCat("num_buckets must lie in [", kMinQuantileBuckets,
                                                   ", ", kMaxQuantileBuckets, "], got ",
                                                   num_buckets));
  }
  if (quantiles.empty() || quantiles.size() > static_cast<size_t>(kMaxQuantilesPerQuery)) {
    return absl::InvalidArgumentError(absl::StrCat("quantiles must have between 1 and ",
                                                   kMaxQuantilesPerQuery, " levels, got ",
                                                   quantiles.size()));
  }
  for (double q : quantiles) {
    if (!(q >= 0 && q <= 1)) {
      return absl::InvalidArgumentError(absl::StrCat("quantiles must lie in [0, 1], got ", q));
    }
  }
  RETURN_IF_ERROR(ValidateIsPositive(noise_step, "noise_step"));
  RETURN_IF_ERROR(ValidateIsPositive(noise_scale_steps, "noise_scale_steps"));
  RETURN_IF_ERROR(ValidateInOpenRange(confidence, 0, 1, "confidence"));

  QuantileBand band;
  band.num_buckets_ = num_buckets;
  band.quantiles_.assign(quantiles.begin(), quantiles.end());
  // Union bound over m levels and B - 1 interior edges, two-sided (header).
  const double a = (1 - confidence) /
                   (static_cast<double>(quantiles.size()) * static_cast<double>(num_buckets - 1));
  const double log_two_over_a = std::log(2.0) - std::log(a);
  // Counts are integers: on the grid when gamma <= 1 (a power of two); otherwise each is rounded
  // by at most gamma / 2 before the noise is added (additive_mechanism.h).
  const double rounding = noise_step > 1 ? noise_step / 2 : 0.0;

  const int64_t stride =
      std::max<int64_t>(1, (num_buckets - 1 + kOptimisedEdges - 1) / kOptimisedEdges);
  for (double q : quantiles) {
    const ChernoffBound bound{q, noise_scale_steps, num_buckets, log_two_over_a};
    // Optimal u at j = 1, 1 + stride, ..., and at B - 1.
    std::vector<int64_t> knots;
    for (int64_t j = 1; j < num_buckets; j += stride) knots.push_back(j);
    if (knots.back() != num_buckets - 1) knots.push_back(num_buckets - 1);
    std::vector<double> best_u(knots.size());
    for (size_t k = 0; k < knots.size(); ++k) best_u[k] = bound.BestU(knots[k]);

    std::vector<double> h(num_buckets + 1, 0.0);
    size_t k = 0;
    for (int64_t j = 1; j < num_buckets; ++j) {
      while (k + 1 < knots.size() && knots[k + 1] <= j) ++k;
      double steps = bound(j, best_u[k]);
      if (k + 1 < knots.size()) steps = std::min(steps, bound(j, best_u[k + 1]));
      const double weights =
          (1 - q) * static_cast<double>(j) + q * static_cast<double>(num_buckets - j);
      h[j] = (steps * noise_step + rounding * weights) * (1 + kSafety);
    }
    band.half_width_.push_back(std::move(h));
  }
  return band;
}

double QuantileBand::HalfWidth(size_t level, int64_t j) const { return half_width_[level][j]; }

double QuantileBand::MaxHalfWidth(size_t level) const {
  return *std::max_element(half_width_[level].begin(), half_width_[level].end());
}

absl::StatusOr<std::vector<long double>> QuantileBand::NoisyPrefix(
    absl::Span<const double> noisy_counts, absl::Span<const double> edges) const {
  if (static_cast<int64_t>(noisy_counts.size()) != num_buckets_ ||
      static_cast<int64_t>(edges.size()) != num_buckets_ + 1) {
    return absl::InvalidArgumentError(absl::StrCat("expected ", num_buckets_, " noisy counts and ",
                                                   num_buckets_ + 1, " edges, got ",
                                                   noisy_counts.size(), " and ", edges.size()));
  }
  // Long double: exact for grid multiples far beyond 2^53.
  std::vector<long double> prefix(num_buckets_ + 1, 0.0L);
  for (int64_t i = 0; i < num_buckets_; ++i) {
    if (!std::isfinite(noisy_counts[i])) {
      return absl::InvalidArgumentError(absl::StrCat("noisy count ", i, " is not finite"));
    }
    prefix[i + 1] = prefix[i] + noisy_counts[i];
  }
  return prefix;
}

absl::StatusOr<std::vector<double>> QuantileBand::Estimates(absl::Span<const double> noisy_counts,
                                                            absl::Span<const double> edges) const {
  ASSIGN_OR_RETURN(const std::vector<long double> prefix, NoisyPrefix(noisy_counts, edges));
  const long double total = prefix[num_buckets_];
  std::vector<double> out(quantiles_.size());
  for (size_t l = 0; l < quantiles_.size(); ++l) {
    const long double target = quantiles_[l] * total;
    int64_t j = 0;
    while (j + 1 < num_buckets_ && prefix[j + 1] < target) ++j;
    const double mid = edges[j] / 2 + edges[j + 1] / 2;  // no overflow; 7.15 for [7.1, 7.2)
    out[l] = mid;
  }
  return out;
}

absl::StatusOr<std::vector<ValueInterval>> QuantileBand::Intervals(
    absl::Span<const double> noisy_counts, absl::Span<const double> edges) const {
  ASSIGN_OR_RETURN(const std::vector<long double> prefix, NoisyPrefix(noisy_counts, edges));
  const long double total = prefix[num_buckets_];

  std::vector<ValueInterval> out(quantiles_.size());
  for (size_t l = 0; l < quantiles_.size(); ++l) {
    const long double q = quantiles_[l];
    const std::vector<double>& h = half_width_[l];
    ValueInterval iv{edges.front(), edges.back()};
    for (int64_t j = 1; j < num_buckets_; ++j) {
      const long double d = prefix[j] - q * total;
      if (d + h[j] < 0) iv.lower = edges[j];  // increasing j: the largest such edge
    }
    for (int64_t j = num_buckets_ - 1; j >= 1; --j) {
      const long double d = prefix[j] - q * total;
      if (d - h[j] >= (quantiles_[l] == 0 ? 1 : 0)) iv.upper = edges[j];  // the smallest such edge
    }
    out[l] = iv;
  }

  // Monotone envelopes in q (header): running max of lower ends upward, min of upper ends downward.
  std::vector<size_t> order(quantiles_.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return quantiles_[x] < quantiles_[y]; });
  for (size_t r = 1; r < order.size(); ++r) {
    out[order[r]].lower = std::max(out[order[r]].lower, out[order[r - 1]].lower);
  }
  for (size_t r = order.size() - 1; r-- > 0;) {
    out[order[r]].upper = std::min(out[order[r]].upper, out[order[r + 1]].upper);
  }
  // Off the band's event the ends can cross; report their hull rather than an empty interval.
  for (ValueInterval& iv : out) {
    if (iv.lower > iv.upper) std::swap(iv.lower, iv.upper);
  }
  return out;
}

}  // namespace dpq::dp
