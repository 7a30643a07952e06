// Advanced composition for pure and approximate DP events.
//
// Non-adaptive bounds (parameters fixed in advance; used for pricing and comparison):
//  * Kairouz, Oh & Viswanath 2015 ("The Composition Theorem for Differential Privacy", ICML),
//    Thm 3.4 (k-fold eps0) and Thm 3.5 (heterogeneous eps_i): with slack delta',
//    eps = min{ sum eps_i,
//               sum eps_i tanh(eps_i/2) + sqrt(2 sum eps_i^2 log(e + sqrt(sum eps_i^2)/delta')),
//               sum eps_i tanh(eps_i/2) + sqrt(2 sum eps_i^2 log(1/delta')) }
//    ((e^x - 1)/(e^x + 1) = tanh(x/2)); total delta = 1 - (1 - delta') prod (1 - delta_i).
//
// Filter (parameters chosen adaptively): Whitehouse, Ramdas, Rogers & Wu 2023 ("Fully-Adaptive
// Composition in Differential Privacy", ICML), advanced-composition filter: with budget (eps, delta)
// split as delta = delta' + delta'', halting before
//    sqrt(2 log(1/delta') sum eps_i^2) + (1/2) sum eps_i^2 > eps   or   sum delta_i > delta''
// is a valid (eps, delta)-DP filter. It improves the constants of Rogers, Roth, Ullman & Vadhan
// 2016 ("Privacy Odometers and Filters: Pay-as-you-Go Composition", NeurIPS), Thm 5.1. Since
// tanh(x/2) <= x/2, the filter bound is never below the KOV one for the same eps_i.
#ifndef DPQ_SERVER_DP_ACCOUNTING_ADVANCED_H_
#define DPQ_SERVER_DP_ACCOUNTING_ADVANCED_H_

#include <cstdint>

namespace dpq::dp::accounting {

// Sufficient statistics of a sequence of (eps_i, delta_i) events.
struct AdvancedSums {
  double sum_eps = 0;       // sum eps_i
  double sum_eps_sq = 0;    // sum eps_i^2
  double sum_eps_tanh = 0;  // sum eps_i tanh(eps_i / 2)
  double sum_delta = 0;     // sum delta_i (basic composition of the deltas)
  void Add(double eps, double delta, int64_t count);
};

// KOV 2015 Thm 3.5 epsilon for slack delta' (delta_prime in (0, 1)).
double KairouzEpsilon(const AdvancedSums& sums, double delta_prime);

// KOV 2015 Thm 3.4 epsilon for k-fold eps0 composition (the homogeneous special case).
double KairouzHomogeneousEpsilon(double eps0, int64_t k, double delta_prime);

// WRRW 2023 filter bound sqrt(2 log(1/delta') sum eps^2) + sum eps^2 / 2.
double FilterEpsilon(const AdvancedSums& sums, double delta_prime);

}  // namespace dpq::dp::accounting

#endif  // DPQ_SERVER_DP_ACCOUNTING_ADVANCED_H_
