// Simultaneous confidence intervals for quantiles, read off a noisy histogram.
//
// Setting (the engine's quantile release, server/engine/noisy_release.cc): the clamped,
// contribution-bounded values are counted in B public buckets [e_i, e_{i+1}) (the last closed),
// and every count gets independent Laplace-mechanism noise gamma * G_i, P(G = k) ∝ exp(-|k| / t)
// (additive_mechanism.h: grid step gamma, scale t in steps). The noisy counts are DP by themselves;
// everything below is post-processing (Dwork & Roth 2014, Prop. 2.1) and costs no budget.
//
// Target: Q_q = x_(max(1, ceil(q n))), the q-quantile of the n kept values (PostgreSQL's
// percentile_disc). With F(j) = #{values < e_j} (a prefix sum of the counts):
//   Q_q >= e_j  iff  F(j) < max(1, q n),        Q_q < e_j  iff  F(j) >= max(1, q n).
// Both are decided by the sign of D_q(j) = F(j) - q n = (1 - q) F(j) - q (n - F(j)), estimated by
// D~_q(j) = F~(j) - q n~ from the noisy prefix sum and the noisy total. Its error is
// N_qj = gamma ((1 - q) sum_{i<j} G_i - q sum_{i>=j} G_i), a weighted sum of independent discrete
// Laplace variables (plus, when gamma > 1, at most gamma/2 of rounding per count).
//
// Band (Chernoff bound with the exact moment generating function: G is the difference of two
// independent geometric variables with P(X = k) = (1 - p) p^k, p = e^{-1/t} (Inusah & Kozubowski
// 2006), so E[e^{s G}] = (1 - p)^2 / ((1 - p e^s)(1 - p e^-s)) for |s| < 1/t): for every
// admissible lambda > 0,
//   P(|N_qj| >= h) <= 2 exp(Lambda_qj(lambda) - lambda h),  Lambda_qj = ln E[e^{lambda N_qj}],
// so h_qj = (Lambda_qj(lambda) + ln(2/a)) / lambda with a = (1 - confidence) / (m (B - 1)); any
// lambda gives a valid h (the minimisation only tightens it). A union bound over the m levels and
// the B - 1 interior edges makes every |N_qj| < h_qj at once with probability >= confidence, and on
// that event (for n >= 1):
//   lower_q = max {e_j : D~_q(j) + h_qj < 0}          (so D_q(j) < 0, hence Q_q >= e_j),
//   upper_q = min {e_j : D~_q(j) - h_qj >= [q == 0]}  (so F(j) >= max(1, q n), hence Q_q < e_j),
// with e_0 and e_B when no edge qualifies. Because Q_q is non-decreasing in q, the running maximum
// of the lower ends (over smaller levels) and running minimum of the upper ends (over larger
// levels) are valid on the same event: the returned intervals are monotone in q and hold all their
// quantiles simultaneously with probability >= confidence (all the noise of the histogram counted).
//
// Exactness: the band is computed in floating point from public parameters and inflated by a
// relative 1e-6 (far above the rounding of the prefix sums and of the log-MGF), so it never
// under-states; the edges are compared with the same doubles the SQL bucketing used.
#ifndef DPQ_SERVER_DP_QUANTILE_INTERVAL_H_
#define DPQ_SERVER_DP_QUANTILE_INTERVAL_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace dpq::dp {

struct ValueInterval {
  double lower = 0;
  double upper = 0;
};

class QuantileBand {
 public:
  // Precomputes h_qj (data-independent) for `num_buckets` counts with noise step `noise_step`
  // (gamma, a power of two) and discrete Laplace scale `noise_scale_steps` (t, in steps).
  // INVALID_ARGUMENT naming "num_buckets" (2..100000), "quantiles" (1..100 levels in [0, 1]),
  // "noise_step", "noise_scale_steps" (finite > 0) or "confidence" (in (0, 1)).
  static absl::StatusOr<QuantileBand> Create(int64_t num_buckets,
                                             absl::Span<const double> quantiles, double noise_step,
                                             double noise_scale_steps, double confidence);

  // The intervals (one per level, in input order) for one group's noisy counts, with bucket edges
  // `edges` (num_buckets + 1 increasing doubles: the ones the counts were bucketed by).
  // INVALID_ARGUMENT if the sizes disagree or a count is not finite.
  absl::StatusOr<std::vector<ValueInterval>> Intervals(absl::Span<const double> noisy_counts,
                                                       absl::Span<const double> edges) const;

  // Point estimates from the same noisy CDF (post-processing): for each level, the midpoint of
  // the first bucket j with F~(j + 1) >= q n~, the bucket where the noisy CDF reaches q
  // (non-decreasing in q). On the band's event that bucket's rank interval [F(j), F(j + 1)] comes
  // within MaxHalfWidth(level) of q n (F(j) - q n < h_j and F(j + 1) - q n > -h_{j+1}), the same
  // kind of guarantee as RankErrorBound in dp_quantile.h. Errors as Intervals.
  absl::StatusOr<std::vector<double>> Estimates(absl::Span<const double> noisy_counts,
                                                absl::Span<const double> edges) const;

  // h_qj for level index `level` and interior edge j in [1, num_buckets - 1] (tests, diagnostics).
  double HalfWidth(size_t level, int64_t j) const;
  // max_j h_qj: the rank error bound of Estimates for that level.
  double MaxHalfWidth(size_t level) const;

 private:
  QuantileBand() = default;
  // Noisy prefix sums F~(0..B) after the size and finiteness checks.
  absl::StatusOr<std::vector<long double>> NoisyPrefix(absl::Span<const double> noisy_counts,
                                                       absl::Span<const double> edges) const;
  int64_t num_buckets_ = 0;
  std::vector<double> quantiles_;
  std::vector<std::vector<double>> half_width_;  // [level][j], j = 0..B (0 and B unused)
};

}  // namespace dpq::dp

#endif  // DPQ_SERVER_DP_QUANTILE_INTERVAL_H_
