#include "server/dp/dp_quantile.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/base/budget_share.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"
#include "server/dp/exponential_mechanism.h"
#include "server/dp/uniform_int.h"

namespace dpq::dp {
namespace {

constexpr int kLevelBits = 53;  // quantile levels on the grid 2^-53 (see header, "Exactness")
constexpr int64_t kMaxTotalRows = int64_t{1} << 62;

// round(q 2^53): q 2^53 is an exact double (<= 2^53 for q <= 1) and an integer for q >= 1/2.
int64_t LevelNumerator(double q) {
  return static_cast<int64_t>(std::nearbyint(std::ldexp(q, kLevelBits)));
}

double LevelFromNumerator(int64_t num) { return std::ldexp(static_cast<double>(num), -kLevelBits); }

// max(q, 1 - q) K for q = num / 2^53, rounded UP to a double: a larger Delta_u only adds noise.
double SensitivityForLevel(int64_t num, int max_contributions) {
  const int64_t denom = int64_t{1} << kLevelBits;
  const double factor = LevelFromNumerator(std::max(num, denom - num));  // exact
  const double k = max_contributions;
  const double product = factor * k;
  // fma gives the exact sign of the rounding error of factor * k.
  return std::fma(factor, k, -product) > 0
             ? std::nextafter(product, std::numeric_limits<double>::infinity())
             : product;
}

absl::Status ValidateQuantile(double q, absl::string_view name) {
  if (!(q >= 0 && q <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat(name, " must lie in [0, 1], got ", q));
  }
  return absl::OkStatus();
}

absl::Status ValidateCommon(int64_t num_buckets, int num_quantiles, double epsilon,
                            int max_contributions) {
  if (num_buckets < kMinQuantileBuckets || num_buckets > kMaxQuantileBuckets) {
    return absl::InvalidArgumentError(
        absl::StrCat("bucket_counts must have between ", kMinQuantileBuckets, " and ",
                     kMaxQuantileBuckets, " buckets, got ", num_buckets));
  }
  if (num_quantiles < 1 || num_quantiles > kMaxQuantilesPerQuery) {
    return absl::InvalidArgumentError(absl::StrCat("quantiles must have between 1 and ",
                                                   kMaxQuantilesPerQuery, " entries, got ",
                                                   num_quantiles));
  }
  RETURN_IF_ERROR(ValidateIsPositive(epsilon, "epsilon"));
  if (max_contributions < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_contributions must be >= 1, got ", max_contributions));
  }
  return absl::OkStatus();
}

}  // namespace

double QuantileUtilitySensitivity(int max_contributions, double quantile) {
  if (max_contributions < 1 || !(quantile >= 0 && quantile <= 1)) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  return SensitivityForLevel(LevelNumerator(quantile), max_contributions);
}

absl::Status ValidateQuantileRelease(int64_t num_buckets, double lower, double upper,
                                     absl::Span<const double> quantiles, double epsilon,
                                     int max_contributions) {
  const int num_quantiles =
      static_cast<int>(std::min<size_t>(quantiles.size(), std::numeric_limits<int>::max()));
  RETURN_IF_ERROR(ValidateCommon(num_buckets, num_quantiles, epsilon, max_contributions));
  RETURN_IF_ERROR(ValidateIsFinite(lower, "lower"));
  RETURN_IF_ERROR(ValidateIsFinite(upper, "upper"));
  if (!(lower < upper) || !std::isfinite(upper - lower)) {
    return absl::InvalidArgumentError(
        absl::StrCat("lower must be < upper with upper - lower finite, got lower = ", lower,
                     ", upper = ", upper));
  }
  for (size_t j = 0; j < quantiles.size(); ++j) {
    RETURN_IF_ERROR(ValidateQuantile(quantiles[j], absl::StrCat("quantiles[", j, "]")));
  }
  // The per-level mechanisms ReleaseQuantiles creates (their parameters depend on no count).
  const double eps_each = ShareOf(epsilon, num_quantiles);
  for (double q : quantiles) {
    RETURN_IF_ERROR(ExponentialMechanism::Create(
                        eps_each, SensitivityForLevel(LevelNumerator(q), max_contributions))
                        .status());
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<double>> ReleaseQuantiles(absl::Span<const int64_t> bucket_counts,
                                                     double lower, double upper,
                                                     absl::Span<const double> quantiles,
                                                     double epsilon, int max_contributions,
                                                     RandomSource& rng) {
  const int64_t num_buckets = static_cast<int64_t>(bucket_counts.size());
  const int num_quantiles =
      static_cast<int>(std::min<size_t>(quantiles.size(), std::numeric_limits<int>::max()));
  RETURN_IF_ERROR(
      ValidateQuantileRelease(num_buckets, lower, upper, quantiles, epsilon, max_contributions));
  // Prefix sums below_i (rows in buckets < i); below[B] = n.
  std::vector<int64_t> below(num_buckets + 1, 0);
  for (int64_t i = 0; i < num_buckets; ++i) {
    const int64_t c = bucket_counts[i];
    if (c < 0) {
      // Counts are aggregates of the private data; name the bucket, not the value.
      return absl::InvalidArgumentError(absl::StrCat("bucket_counts[", i, "] must be >= 0"));
    }
    if (c > kMaxTotalRows - below[i]) {
      return absl::InvalidArgumentError("bucket_counts must sum to at most 2^62");
    }
    below[i + 1] = below[i] + c;
  }
  const int64_t n = below[num_buckets];

  // Basic composition (Dwork & Roth 2014, Thm 3.16); rounded down so the levels never overspend.
  const double eps_each = ShareOf(epsilon, num_quantiles);
  const double width = (upper - lower) / static_cast<double>(num_buckets);
  std::vector<int128> dist(num_buckets);
  std::vector<double> utilities(num_buckets);
  std::vector<double> values;
  values.reserve(quantiles.size());
  for (double q : quantiles) {
    const int64_t level = LevelNumerator(q);
    // Everything below is in units of 2^-53 rows: the target rank q n is level * n exactly
    // (<= 2^115), the bucket's rank interval is [below_i, below_{i+1}] * 2^53.
    const int128 target = static_cast<int128>(level) * n;
    int128 best = std::numeric_limits<int128>::max();
    for (int64_t i = 0; i < num_buckets; ++i) {
      const int128 lo = static_cast<int128>(below[i]) << kLevelBits;
      const int128 hi = static_cast<int128>(below[i + 1]) << kLevelBits;
      dist[i] = std::max<int128>({0, lo - target, target - hi});
      best = std::min(best, dist[i]);
    }
    // Gaps to the best bucket (which is 0: the intervals cover [0, n]); one rounding each.
    for (int64_t i = 0; i < num_buckets; ++i) {
      utilities[i] = -std::ldexp(static_cast<double>(dist[i] - best), -kLevelBits);
    }
    ASSIGN_OR_RETURN(
        const ExponentialMechanism em,
        ExponentialMechanism::Create(eps_each, SensitivityForLevel(level, max_contributions)));
    ASSIGN_OR_RETURN(const size_t chosen, em.Select(utilities, rng));
    // lower + (upper - lower)(2i + 1) / 2B rounds once less than lower + w (i + 1/2), so midpoints
    // of decimal ranges print as decimals (6.95, not 6.9500000000000002); the w form if it overflows.
    const double span2 = (upper - lower) * static_cast<double>(2 * chosen + 1);
    const double mid = std::isfinite(span2) ? lower + span2 / static_cast<double>(2 * num_buckets)
                                            : lower + width * (static_cast<double>(chosen) + 0.5);
    values.push_back(std::clamp(mid, lower, upper));
  }

  // Post-processing: assign the sorted values to the levels in increasing order of q (stable, so
  // equal levels keep their input order).
  std::vector<size_t> order(quantiles.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return quantiles[a] < quantiles[b]; });
  std::sort(values.begin(), values.end());
  std::vector<double> out(quantiles.size());
  for (size_t r = 0; r < order.size(); ++r) out[order[r]] = values[r];
  return out;
}

absl::StatusOr<double> RankErrorBound(int64_t num_buckets, double quantile, int num_quantiles,
                                      double epsilon, int max_contributions, double confidence) {
  if (num_buckets < kMinQuantileBuckets || num_buckets > kMaxQuantileBuckets) {
    return absl::InvalidArgumentError(absl::StrCat("num_buckets must lie in [", kMinQuantileBuckets,
                                                   ", ", kMaxQuantileBuckets, "], got ",
                                                   num_buckets));
  }
  if (num_quantiles < 1 || num_quantiles > kMaxQuantilesPerQuery) {
    return absl::InvalidArgumentError(absl::StrCat(
        "num_quantiles must lie in [1, ", kMaxQuantilesPerQuery, "], got ", num_quantiles));
  }
  RETURN_IF_ERROR(ValidateQuantile(quantile, "quantile"));
  RETURN_IF_ERROR(ValidateIsPositive(epsilon, "epsilon"));
  if (max_contributions < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_contributions must be >= 1, got ", max_contributions));
  }
  RETURN_IF_ERROR(ValidateInOpenRange(confidence, 0, 1, "confidence"));
  const double eps_each = ShareOf(epsilon, num_quantiles);
  const double sensitivity = QuantileUtilitySensitivity(max_contributions, quantile);
  // Dwork & Roth 2014, Thm 3.11: P[u(chosen) <= OPT - (2 Delta_u / eps)(ln |R| + t)] <= e^-t,
  // with t = ln(1 / (1 - confidence)) and OPT = 0.
  const double t = -std::log1p(-confidence);
  return 2 * sensitivity * (std::log(static_cast<double>(num_buckets)) + t) / eps_each;
}

}  // namespace dpq::dp
