// DP quantiles from per-bucket counts: the exponential mechanism over a fixed public grid.
//
// Input contract (computed by the engine, inside PostgreSQL): the column is clamped to
// [lower, upper] and contribution-bounded to at most K = max_contributions rows per privacy unit;
// bucket_counts[i] is the number of surviving rows in bucket i = [lower + i w, lower + (i+1) w),
// w = (upper - lower) / B, the last bucket closed. In SQL:
//   least(width_bucket(x_clamped, lower, upper, B), B) - 1      (0-based bucket index)
// Any deterministic per-row bucket rule is fine for privacy; this one matches the midpoints below.
//
// Mechanism for one quantile q (Smith 2011, "Privacy-preserving statistical estimation with
// optimal convergence rates", STOC: the exponential mechanism over intervals with a rank utility;
// here the intervals are the B public buckets, so no data-dependent endpoints and no width
// weighting — all buckets have width w). With n = sum of counts, below_i = rows in buckets < i,
//   u(i) = - dist(q n, [below_i, below_i + count_i])
// i.e. minus the distance from the target rank to the ranks a value in bucket i can have (0 for
// the bucket holding the q-quantile). Bucket i is chosen with probability
// proportional to exp(eps_q u(i) / (2 Delta_u)) (McSherry & Talwar 2007) by ExponentialMechanism
// (exact Bernoulli(exp(-x)) acceptance, no exp() overflow), and the bucket MIDPOINT is released.
//
// Sensitivity (QuantileUtilitySensitivity): Delta_u = max(q, 1 - q) K. Proof: adding one unit
// with k <= K rows, a of them below bucket i and b inside it (a + b <= k), moves the interval to
// [below_i + a, below_i + count_i + a + b] and the target to q n + q k. dist(t, [l, r]) =
// max(0, l - t, t - r); the two non-zero arguments change by a - q k in [-q k, (1 - q) k] and by
// q k - a - b in [-(1 - q) k, q k], and max(0, x, y) is 1-Lipschitz in (x, y) in the sup norm, so
// |Delta u(i)| <= max(q, 1 - q) k <= max(q, 1 - q) K. Removing a unit is the same step reversed.
//
// Several quantiles: epsilon / m each (basic composition, Dwork & Roth 2014, Thm 3.16), each
// selection epsilon/m-DP (Dwork & Roth Thm 3.10); the released midpoints are then sorted so that
// the output is monotone in q (post-processing, Dwork & Roth Prop. 2.1).
//
// Why the midpoint and not a uniform draw inside the bucket: both are post-processing; the
// midpoint has the smaller error when the true quantile is anywhere in the bucket (at most w/2,
// w/4 on average against w/3 for a uniform draw), needs no floating-point uniform sampler, and
// makes the grid resolution visible instead of suggesting false precision.
//
// Exactness: utilities are computed in 128-bit integers in units of 2^-53 rows (q is used rounded
// to the nearest multiple of 2^-53: exact for every level >= 1/2 and every level with <= 53
// fractional bits, others move by <= 2^-54; target and sensitivity use the same rounded level),
// and passed as gaps to the best bucket, rounded once to double.
// The remaining floating point is ExponentialMechanism's exponent (relative error ~2^-52).
#ifndef DPQ_SERVER_DP_DP_QUANTILE_H_
#define DPQ_SERVER_DP_DP_QUANTILE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "server/dp/random_source.h"

namespace dpq::dp {

inline constexpr int kMaxQuantilesPerQuery = 100;
inline constexpr int64_t kMinQuantileBuckets = 2;
inline constexpr int64_t kMaxQuantileBuckets = 100000;

// Releases one value per entry of `quantiles` (output[j] estimates quantiles[j]; outputs are
// non-decreasing in the quantile level, ties in level may differ in value only by sort order).
// Each value is a bucket midpoint lower + (i + 1/2) w. epsilon-DP in total (epsilon / m per
// quantile) for neighbours that add or remove one unit with <= max_contributions rows.
// INVALID_ARGUMENT naming the parameter: "bucket_counts" (size in [2, 100000], each >= 0, total
// <= 2^62), "lower"/"upper" (finite, lower < upper, upper - lower finite), "quantiles"
// (1..100 entries, each in [0, 1]), "epsilon" (finite > 0), "max_contributions" (>= 1).
// Every check of ReleaseQuantiles that does not look at the counts (all of them but the counts'
// own), with the same errors: a caller refuses a query with it before reading any data.
absl::Status ValidateQuantileRelease(int64_t num_buckets, double lower, double upper,
                                     absl::Span<const double> quantiles, double epsilon,
                                     int max_contributions);

absl::StatusOr<std::vector<double>> ReleaseQuantiles(absl::Span<const int64_t> bucket_counts,
                                                     double lower, double upper,
                                                     absl::Span<const double> quantiles,
                                                     double epsilon, int max_contributions,
                                                     RandomSource& rng);

// Delta_u = max(q, 1 - q) * max_contributions, rounded up to a double (proof above). Returns NaN
// unless max_contributions >= 1 and 0 <= quantile <= 1.
double QuantileUtilitySensitivity(int max_contributions, double quantile);

// Rank-error bound for one released quantile (utility theorem of the exponential mechanism,
// Dwork & Roth 2014, Thm 3.11, with OPT = 0 and |R| = num_buckets): with probability >=
// confidence the chosen bucket's rank interval [below_i, below_i + count_i] lies within
//   e = 2 Delta_u (ln num_buckets + ln(1 / (1 - confidence))) / (epsilon / num_quantiles)
// rows of the target rank q n, i.e. some value in the released bucket has rank within e of q n.
// Data-independent (no value interval is derived from the data). For all m quantiles at once use
// confidence 1 - (1 - c) / m (union bound); the final sort does not increase the largest error
// against the (monotone) target ranks. INVALID_ARGUMENT naming "num_buckets", "quantile",
// "num_quantiles", "epsilon", "max_contributions" or "confidence" (in (0, 1)).
absl::StatusOr<double> RankErrorBound(int64_t num_buckets, double quantile, int num_quantiles,
                                      double epsilon, int max_contributions, double confidence);

}  // namespace dpq::dp

#endif  // DPQ_SERVER_DP_DP_QUANTILE_H_
