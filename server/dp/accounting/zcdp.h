// Zero-concentrated differential privacy (Bun & Steinke 2016, "Concentrated Differential Privacy:
// Simplifications, Extensions, and Lower Bounds", TCC). rho adds under composition (Lemma 2.3);
// the Gaussian with noise multiplier z is (1/(2 z^2))-zCDP (Prop. 1.6); eps-DP implies
// (eps^2/2)-zCDP (Prop. 1.4).
#ifndef DPQ_SERVER_DP_ACCOUNTING_ZCDP_H_
#define DPQ_SERVER_DP_ACCOUNTING_ZCDP_H_

#include "server/dp/accounting/privacy_event.h"

namespace dpq::dp::accounting {

// rho of one event (count ignored): Gaussian 1/(2 z^2); the Poisson-subsampled Gaussian is charged
// as the unsampled one (valid: Renyi divergence of a mixture is at most the largest component's, by
// joint quasi-convexity, van Erven & Harremoës 2014 Thm 13; no amplification is claimed); Laplace,
// discrete Laplace (eps = D/T) and PureDp eps^2/2 (Bun & Steinke 2016, Prop. 1.4); ApproxDp with delta > 0 has none (+inf: accountants keep it additively).
double EventRho(const PrivacyEvent& event);

// eps = rho + 2 sqrt(rho ln(1/delta)) (Bun & Steinke 2016, Prop. 1.3).
double ZcdpEpsilonSimple(double rho, double delta);

// eps = inf_{a > 1} a rho + log((a-1)/a) - (log delta + log a)/(a-1) (Canonne, Kamath & Steinke
// 2020, Prop. 12 applied to the RDP curve a * rho). The objective is convex in a on (1, inf); it is
// minimised by golden-section search on a bracket found by doubling, and the returned value is the
// objective at the final point: it is a value of the objective, so it is never below the infimum.
// Clamped to >= 0 and never above the simple bound.
double ZcdpEpsilonCks(double rho, double delta);

// delta for a given eps (same theorem): inf_a exp((a-1)(a rho - eps) + (a-1) log(1-1/a) - log a).
double ZcdpDelta(double rho, double epsilon);

}  // namespace dpq::dp::accounting

#endif  // DPQ_SERVER_DP_ACCOUNTING_ZCDP_H_
