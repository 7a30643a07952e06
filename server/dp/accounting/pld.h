// Privacy loss distributions (PLD), pessimistic discretisation.
//
// A PLD is the law of the privacy loss L = log(P(o)/Q(o)) for o ~ P, where (P, Q) is a dominating
// pair of the mechanism (Zhu, Dong & Wang 2022). Composition convolves PLDs (Sommer, Meiser &
// Mohammadi 2019; Koskela, Jälkö & Honkela 2020); delta(eps) = E[(1 - e^{eps - L})_+] + P(L = inf).
// The composition theorem assumes mechanisms fixed in advance: use a PLD only for declared
// workloads (pricing, query batches, training runs), never as an adaptive filter.
//
// Discretisation: "connect the dots" (Doroshenko, Ghazi, Kamath, Kumar & Manurangsi 2022,
// "Connect the Dots: Tighter Discrete Approximations of Privacy Loss Distributions", PETS, Alg. 1):
// on the grid eps_i = i * interval the pmf is chosen so that its delta(eps) equals the mechanism's
// exact delta at every grid point and is linear in e^eps in between; since delta is convex in e^eps
// this dominates the true curve everywhere (their Thm 4.1), i.e. it is pessimistic. Mass above the
// grid goes to the infinity atom. Composition truncates each tail to `tail_mass` (default 1e-15, as
// dp_accounting): upper tail mass moves to infinity, lower tail mass up to the lowest kept loss,
// both pessimistic.
//
// Neighbouring relation: add-or-remove-one. The Poisson-subsampled Gaussian is not symmetric, so
// both directions are built ("remove": P = (1-q) N(0,z^2) + q N(1,z^2), Q = N(0,z^2); "add": the
// pair swapped), composed separately, and eps is the maximum over the two (as dp_accounting does).
// Laplace, Gaussian, pure, (eps, delta) and discrete Laplace events are symmetric and use the same
// PLD both ways.
//
// Discrete Laplace (scale T, integer sensitivity D, in grid steps): not connect-the-dots but the
// exact finite loss distribution (D + 1 atoms: +D/T w.p. 1/(1+r), (D-2k)/T w.p. c r^k for
// 0 < k < D, -D/T w.p. r^D/(1+r); r = e^{-1/T}, c = (1-r)/(1+r)) with every atom rounded UP to the
// grid (pessimistic) and the atoms of each bucket summed in closed form: O(buckets log D), so
// D ~ 2^20 or more costs milliseconds. The continuous Laplace PLD is not used: it is not an upper
// bound for the discrete mechanism.
//
// Numerical caveat: convolution uses a double-precision FFT; its rounding error (absolute ~1e-16
// times the total mass per bin) is not added to delta. Negative bins from rounding are set to 0.
#ifndef DPQ_SERVER_DP_ACCOUNTING_PLD_H_
#define DPQ_SERVER_DP_ACCOUNTING_PLD_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "server/dp/accounting/privacy_event.h"

namespace dpq::dp::accounting {

inline constexpr double kDefaultPldInterval = 1e-4;
inline constexpr double kDefaultPldTailMass = 1e-15;

enum class PldDirection { kRemove, kAdd };

struct PldPmf {
  double interval = kDefaultPldInterval;
  int64_t lower = 0;          // probs[i] is the mass at loss (lower + i) * interval
  std::vector<double> probs;  // finite part (sums to 1 - infinity_mass up to rounding)
  double infinity_mass = 0;

  // The identity for composition (loss 0 with probability 1).
  static PldPmf Identity(double interval);
};

// Pessimistic PLD of one event (its count ignored). INVALID_ARGUMENT for an invalid event or
// interval outside [1e-6, 1].
absl::StatusOr<PldPmf> PldForEvent(const PrivacyEvent& event, double interval, PldDirection dir);

// Composition of two PLDs with the same interval.
// RESOURCE_EXHAUSTED if the result would need more than 2^24 bins.
absl::StatusOr<PldPmf> ComposePld(const PldPmf& a, const PldPmf& b,
                                  double tail_mass = kDefaultPldTailMass);

// Composition of many PLDs (all with `interval`; the identity when `parts` is empty), as a
// balanced tree of pairwise ComposePld: a left fold convolves an ever wider accumulator with each
// part (n FFTs of the final width), the tree only log2(n) levels of it, so 100 distinct events cost
// about 7 full-width convolutions instead of 100.
absl::StatusOr<PldPmf> ComposeAllPld(std::vector<PldPmf> parts, double interval,
                                     double tail_mass = kDefaultPldTailMass);

// k-fold self-composition: one FFT, pointwise k-th power, inverse FFT, on a window chosen by a
// Chernoff bound on both tails (each <= tail_mass); the bound on the upper tail left outside the
// window is added to the infinity mass.
absl::StatusOr<PldPmf> SelfComposePld(const PldPmf& a, int64_t k,
                                      double tail_mass = kDefaultPldTailMass);

// Smallest eps >= 0 with delta(eps) <= delta (+inf if infinity_mass > delta). Exact for the
// discrete PLD: between grid points delta(eps) = A - e^eps B is solved in closed form.
double PldEpsilon(const PldPmf& pmf, double delta);

// delta(eps) = infinity_mass + sum_{x > eps} p(x) (1 - e^{eps - x}).
double PldDelta(const PldPmf& pmf, double epsilon);

}  // namespace dpq::dp::accounting

#endif  // DPQ_SERVER_DP_ACCOUNTING_PLD_H_
