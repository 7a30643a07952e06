#include "server/dp/partition_selection.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"
#include "server/dp/uniform_int.h"

// Why the released probabilities are (eps', delta')-DP for one partition (eps', delta' = the
// per-partition budget; "the paper" = Desfontaines, Voss, Gipson, Mandayam 2022).
//
// 1. The output is one bit, so DP for neighbours n, n+1 is exactly four inequalities on the keep
//    probabilities a(n), a(n+1) and drop probabilities 1 - a:
//      (A) a(n+1) <= e^eps a(n) + delta        (B) 1 - a(n) <= e^eps (1 - a(n+1)) + delta
//    and the same two with n and n+1 swapped, which hold whenever a is non-decreasing.
// 2. We prove them for eps'' = min(eps', 20) <= eps' ((eps'', delta')-DP implies (eps', delta')).
//    The exact optimum pi of Theorem 1 for the working parameters eps_w = eps''(1 - eta),
//    delta_w = delta'(1 - eta), eta = 2^-12, satisfies (A) with equality for n < n1 and (B) with
//    equality for n1 <= n < n2, and the other inequality with room (it is the min of the two).
//    With (eps'', delta') instead, every inequality gains the slack
//      (A): (e^eps'' - e^eps_w) a(n) + eta delta'
//      (B): (e^eps'' - e^eps_w)(1 - a(n+1)) + eta delta'
//    where e^eps'' - e^eps_w >= e^eps'' eta eps'' / 2 (eta eps'' <= 20 / 4096).
// 3. Evaluation error (long double: 64-bit mantissa). Lower region: n eps_w <= ln(1/delta_w) +
//    eps_w < 760, so the argument of expm1l is off by < 760 * 2^-64 and a(n) = delta_w S_n has
//    relative error r <= 2^-53. Upper region, drop = (q1 + c) e^{-k eps_w} - c: q1 = 1 - a(n1)
//    turns a(n1)'s relative error into one relative to q1 >= (1 - delta_w) / (1 + e^eps_w), and
//    the final "- c" cancels, so a drop probability has absolute error <= r' (q + c) with
//    r' = r (1 + e^eps'') / (1 - delta') + 2^-53 (relative to q + c, not to q).
//    Substituting into (A)/(B), using q(n) = e^eps_w q(n+1) + delta_w above n1, every error term
//    is either proportional to e^eps'' a(n) or e^eps'' q(n+1) — covered by the first slack term
//    when 3 r' <= eta eps'' / 2 — or to delta_w + c (1 + e^eps'') — covered by eta delta' when
//    2 r' (1 + 1 / (e^eps_w - 1)) <= eta. For delta' < 1/2 both hold for eps'' in [2^-30, 20]
//    with a factor >= 2^7 to spare (binding at eps'' = 2^-30: 2^-49.4 / eps'' vs 2^-12); for
//    delta' >= 1/2 the slack eta delta' >= 2^-13 exceeds every error (<= e^20 r < 2^-24) outright.
//    The cap eps'' <= 20 is what keeps r e^eps'' small; eps' >= 2^-30 is required by Create().
//    At the crossover n1 -> n1+1, (A) is not tight for pi and a(n1) > p* = (1 - delta_w) /
//    (1 + e^eps_w), so the same slack covers it. The tests (partition_selection_test.cc) check all
//    four inequalities on the realised probabilities, with an extra 2^-50 relative margin, for
//    n = 0..n2+2 over a grid of (epsilon, delta, max_partitions).
// 4. Region boundaries are found from the same evaluated values (not only the log formula), so
//    the function Keep() realises is the one analysed: a region boundary that is off by one only
//    where A(pi(n)) and B(pi(n)) agree to rounding, which the slack covers.
// 5. Monotone: within a region by monotone rounding of monotone expm1l/expl; across n1 the jump is
//    (q1 + c)(1 - e^-eps_w) >> 2^-52; KeepProbability tests check it numerically.
// 6. Keep() draws Bernoulli(a(n)) (resp. Bernoulli(1 - a(n)) for "drop") exactly, so the realised
//    probabilities are the evaluated long doubles, without the 2^-53 floor of a 53-bit draw.

namespace dpq::dp {
namespace {

static_assert(std::numeric_limits<long double>::digits == 64,
              "error analysis assumes the x87 80-bit long double");

constexpr long double kEta = 0x1p-12L;            // safety slack on eps and delta
constexpr double kMinPartitionEpsilon = 0x1p-30;  // see item 3 above
constexpr double kMaxWorkingEpsilon = 20;         // see item 3 above
constexpr double kMinPartitionDelta = 1e-300;
constexpr int kMaxPartitions = 1000000;
constexpr int64_t kMaxN = int64_t{1} << 62;

}  // namespace

namespace internal {

bool BernoulliLongDouble(long double p, RandomSource& rng) {
  if (!(p > 0)) return false;
  if (p >= 1) return true;
  // p = f 2^e with f in [1/2, 1), so p = m 2^(e - 64) with m a 64-bit integer (top bit set):
  // p's binary expansion is -e zeros, the 64 bits of m, then zeros. U < p for a uniform
  // U in [0, 1) is decided at the first bit where U's expansion differs from p's.
  int e = 0;
  const long double f = std::frexp(p, &e);
  const uint64_t m = static_cast<uint64_t>(std::ldexp(f, 64));
  int zeros = -e;
  while (zeros >= 64) {
    if (rng.NextUint64() != 0) return false;  // U has a 1 where p has a 0: U > p
    zeros -= 64;
  }
  const uint128 window = static_cast<uint128>(m) << (64 - zeros);
  const uint64_t hi = static_cast<uint64_t>(window >> 64);
  const uint64_t lo = static_cast<uint64_t>(window);
  const uint64_t u = rng.NextUint64();
  if (u != hi) return u < hi;
  if (lo == 0) return false;  // U agrees with all of p's bits so far; p's remaining bits are 0
  return rng.NextUint64() < lo;
}

}  // namespace internal

absl::StatusOr<PartitionSelector> PartitionSelector::Create(double epsilon, double delta,
                                                            int max_partitions) {
  RETURN_IF_ERROR(ValidateIsPositive(epsilon, "epsilon"));
  RETURN_IF_ERROR(ValidateInOpenRange(delta, 0, 1, "delta"));
  if (max_partitions < 1 || max_partitions > kMaxPartitions) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_partitions must lie in [1, ", kMaxPartitions, "], got ", max_partitions));
  }
  const double eps_p = epsilon / max_partitions;
  const double delta_p = delta / max_partitions;
  if (!(eps_p >= kMinPartitionEpsilon)) {
    return absl::InvalidArgumentError(
        absl::StrCat("epsilon / max_partitions must be >= 2^-30 (~9.3e-10), got ", eps_p));
  }
  if (!(delta_p >= kMinPartitionDelta)) {
    return absl::InvalidArgumentError(
        absl::StrCat("delta / max_partitions must be >= 1e-300, got ", delta_p));
  }

  PartitionSelector s;
  s.epsilon_ = epsilon;
  s.delta_ = delta;
  s.max_partitions_ = max_partitions;
  s.eps_w_ = static_cast<long double>(std::min(eps_p, kMaxWorkingEpsilon)) * (1 - kEta);
  s.delta_w_ = static_cast<long double>(delta_p) * (1 - kEta);
  s.expm1_eps_ = std::expm1(s.eps_w_);
  s.c_ = s.delta_w_ / s.expm1_eps_;

  // Switching point of the recursion of Thm 1: e^eps p + delta <= 1 - e^-eps (1 - p - delta) iff
  // p <= p* = (1 - delta) / (1 + e^eps), so pi(n+1) = e^eps pi(n) + delta while pi(n) <= p*.
  // n1 = smallest n with delta S_n > p*, i.e. 1 + floor(ln(1 + tanh(eps/2)(1/delta - 1)) / eps)
  // (the paper's n1; note p* (e^eps - 1) / delta = tanh(eps/2)(1 - delta) / delta).
  const long double p_star = (1 - s.delta_w_) / (2 + s.expm1_eps_);
  const long double n1_est =
      1 + std::floor(std::log1p(p_star * s.expm1_eps_ / s.delta_w_) / s.eps_w_);
  s.n1_ = static_cast<int64_t>(std::clamp(n1_est, 1.0L, static_cast<long double>(kMaxN)));
  // Fix any off-by-one of the log formula against the values Keep() actually uses.
  while (s.n1_ > 1 && s.LowerKeep(s.n1_ - 1) > p_star) --s.n1_;
  while (s.LowerKeep(s.n1_) <= p_star) ++s.n1_;
  s.q_n1_ = 1 - s.LowerKeep(s.n1_);  // > 0: pi(n1) <= e^eps p* + delta < 1

  // First n with drop probability <= 0, i.e. (q1 + c) e^{-k eps} <= c: k >= ln(1 + q1/c) / eps.
  const long double k_est = std::ceil(std::log1p(s.q_n1_ / s.c_) / s.eps_w_);
  s.n_full_ =
      s.n1_ + static_cast<int64_t>(std::clamp(k_est, 1.0L, static_cast<long double>(kMaxN)));
  while (s.n_full_ - 1 > s.n1_ && s.UpperDrop(s.n_full_ - 1) <= 0) --s.n_full_;
  while (s.UpperDrop(s.n_full_) > 0) ++s.n_full_;
  return s;
}

long double PartitionSelector::LowerKeep(int64_t n) const {
  // pi(n) = delta (e^{n eps} - 1) / (e^eps - 1): Thm 1, first branch (sum of the geometric
  // series delta sum_{i<n} e^{i eps}); expm1 keeps it accurate for small n eps.
  return delta_w_ * (std::expm1(static_cast<long double>(n) * eps_w_) / expm1_eps_);
}

long double PartitionSelector::UpperDrop(int64_t n) const {
  // Above n1 the second constraint is tight: 1 - pi(n) = e^-eps (1 - pi(n-1) - delta), an affine
  // recursion with fixed point -c, so (1 - pi(n)) + c = (q1 + c) e^{-(n - n1) eps} (Thm 1, second
  // branch, written for the drop probability so small values keep their relative precision).
  const long double k = static_cast<long double>(n - n1_);
  return (q_n1_ + c_) * std::exp(-k * eps_w_) - c_;
}

double PartitionSelector::KeepProbability(int64_t distinct_units) const {
  if (distinct_units <= 0) return 0;
  if (distinct_units <= n1_) return static_cast<double>(LowerKeep(distinct_units));
  if (distinct_units < n_full_) return static_cast<double>(1 - UpperDrop(distinct_units));
  return 1;
}

double PartitionSelector::DropProbability(int64_t distinct_units) const {
  if (distinct_units <= 0) return 1;
  if (distinct_units <= n1_) return static_cast<double>(1 - LowerKeep(distinct_units));
  if (distinct_units < n_full_) return static_cast<double>(UpperDrop(distinct_units));
  return 0;
}

bool PartitionSelector::Keep(int64_t distinct_units, RandomSource& rng) const {
  if (distinct_units <= 0) return false;
  if (distinct_units <= n1_) return internal::BernoulliLongDouble(LowerKeep(distinct_units), rng);
  if (distinct_units < n_full_) {
    return !internal::BernoulliLongDouble(UpperDrop(distinct_units), rng);
  }
  return true;
}

int64_t PartitionSelector::ThresholdForProbability(double p) const {
  if (!(p <= 1)) return std::numeric_limits<int64_t>::max();
  if (p <= 0) return 0;
  // KeepProbability is non-decreasing, 0 at n = 0 and 1 at n_full_.
  int64_t lo = 0, hi = n_full_;  // KeepProbability(lo) < p <= KeepProbability(hi)
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (KeepProbability(mid) >= p) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return hi;
}

}  // namespace dpq::dp
