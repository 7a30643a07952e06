// Differentially private partition (group-by key) selection without a declared key domain.
//
// A key is released only if a coin with probability pi(n) comes up heads, where n is the number of
// DISTINCT privacy units that contribute to the key after contribution bounding (each unit in at
// most `max_partitions` keys; the engine enforces this before counting). pi is the optimal
// (epsilon, delta)-DP keep probability of
//   Desfontaines, Voss, Gipson, Mandayam 2022, "Differentially private partition selection",
//   PoPETs 2022(1), Theorem 1:
//     pi(0) = 0,  pi(n) = min(e^eps pi(n-1) + delta,  1 - e^-eps (1 - pi(n-1) - delta),  1),
//   with the closed form  pi(n) = delta (e^{n eps} - 1) / (e^eps - 1)            for n <= n1,
//                         1 - pi(n) = (1 - pi(n1) + c) e^{-(n - n1) eps} - c     for n >  n1
//   (c = delta / (e^eps - 1), clamped at 0), n1 = 1 + floor(ln(1 + tanh(eps/2)(1/delta - 1))/eps)
//   — computed here from the recursion's own switching rule, see partition_selection.cc.
//
// Several partitions per unit: each partition runs the one-partition mechanism with
// eps' = epsilon / max_partitions and delta' = delta / max_partitions, independently. A unit
// changes the counts of at most max_partitions partitions by one each, a partition with n = 0 is
// never released (pi(0) = 0), and untouched partitions keep their law, so basic composition
// (Dwork & Roth 2014, Thm 3.16) gives (epsilon, delta)-DP for the released key set. The paper
// proves optimality only for one partition per unit and treats several partitions as an
// extension; this budget split is valid but not optimal there. (Google's library uses the
// slightly larger delta' = 1 - (1 - delta)^(1/M); we keep the plain composition bound.)
//
// Conservative choices (all make the mechanism MORE private than nominal; see the .cc for proofs):
// - pi is computed for eps_w = min(eps', 20) * (1 - 2^-12) and delta_w = delta' * (1 - 2^-12);
//   the reserved slack absorbs the floating-point error of the long-double evaluation. The cap at
//   20 (a likelihood ratio of e^20 ~ 5e8 per unit) only matters for eps' > 20.
// - Keep() draws the coin EXACTLY for the long-double probability it evaluates (a lazy comparison
//   of uniform random bits with the probability's binary expansion), drawing "drop" with the
//   directly computed drop probability above n1, so tiny drop probabilities are not lost to
//   rounding near 1 (the naive 53-bit draw against pi rounded down would make
//   P(drop | n2) >= 2^-53, which can exceed delta' and break the constraint of Theorem 1).
//
// Thread-safety: immutable after Create(); Keep() is const and uses only the caller's rng.
#ifndef DPQ_SERVER_DP_PARTITION_SELECTION_H_
#define DPQ_SERVER_DP_PARTITION_SELECTION_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "server/dp/random_source.h"

namespace dpq::dp {

class PartitionSelector {
 public:
  // INVALID_ARGUMENT naming the parameter: "epsilon" finite and > 0 (and epsilon / max_partitions
  // >= 2^-30 ~ 9.3e-10, below which the keep threshold exceeds 1e10 units and the error analysis
  // of the .cc no longer has its margin); "delta" in (0, 1); "max_partitions" in [1, 1e6].
  static absl::StatusOr<PartitionSelector> Create(double epsilon, double delta, int max_partitions);

  // Probability that a key with `distinct_units` contributors is kept (0 for n <= 0;
  // non-decreasing in n; exactly 1 for n >= AlwaysKeptThreshold()). This is the probability Keep()
  // realises, rounded to double (relative error <= 2^-53).
  double KeepProbability(int64_t distinct_units) const;
  // 1 - KeepProbability, computed without cancellation (relative error <= 2^-53), for reporting
  // and tests of tiny drop probabilities.
  double DropProbability(int64_t distinct_units) const;

  // Draws the keep decision: true with probability exactly KeepProbability's long-double value.
  // Independent draws per key; never call it twice for the same key in one query (a second draw
  // would be a second release).
  bool Keep(int64_t distinct_units, RandomSource& rng) const;

  // Smallest n with KeepProbability(n) >= p. p <= 0 gives 0; p > 1 or NaN gives INT64_MAX (no
  // such n). For docs and tests, e.g. "keys with >= T units are kept with probability >= 0.5".
  int64_t ThresholdForProbability(double p) const;
  // Smallest n with KeepProbability(n) == 1 (n2 + 1 in the paper's notation).
  int64_t AlwaysKeptThreshold() const { return n_full_; }

  double epsilon() const { return epsilon_; }
  double delta() const { return delta_; }
  int max_partitions() const { return max_partitions_; }
  // The per-partition guarantee (eps', delta') = (epsilon, delta) / max_partitions.
  double partition_epsilon() const { return epsilon_ / max_partitions_; }
  double partition_delta() const { return delta_ / max_partitions_; }

 private:
  PartitionSelector() = default;
  // Lower region (1 <= n <= n1_): keep probability delta_w (e^{n eps_w} - 1) / (e^eps_w - 1).
  long double LowerKeep(int64_t n) const;
  // Upper region (n1_ < n < n_full_): drop probability (q_n1 + c) e^{-(n - n1) eps_w} - c.
  long double UpperDrop(int64_t n) const;

  double epsilon_ = 0;
  double delta_ = 0;
  int max_partitions_ = 1;
  long double eps_w_ = 0;      // working epsilon (with the safety margin)
  long double delta_w_ = 0;    // working delta (with the safety margin)
  long double expm1_eps_ = 0;  // e^eps_w - 1
  long double c_ = 0;          // delta_w / (e^eps_w - 1)
  long double q_n1_ = 0;       // 1 - pi(n1)
  int64_t n1_ = 1;             // last n given by the lower (geometric growth) formula
  int64_t n_full_ = 2;         // first n with pi(n) = 1
};

namespace internal {
// Bernoulli(p) exactly for the long double p (clamped to [0, 1]): compares an infinite uniform
// bit string with p's finite binary expansion, word by word; expected ~1 random word. Exposed
// for tests.
bool BernoulliLongDouble(long double p, RandomSource& rng);
}  // namespace internal

}  // namespace dpq::dp

#endif  // DPQ_SERVER_DP_PARTITION_SELECTION_H_
