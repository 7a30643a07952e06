// Zero-concentrated differential privacy (Bun & Steinke 2016, "Concentrated Differential Privacy:
// Simplifications, Extensions, and Lower Bounds", TCC). rho adds under composition (Lemma 2.3);
// the Gaussian with noise multiplier z is (1/(2 z^2))-zCDP (Prop. 1.6); eps-DP implies
// (eps^2/2)-zCDP (Prop. 1.4).
#ifndef DPQ_SERVER_DP_ACCOUNTING_ZCDP_H_
#define DPQ_SERVER_DP_ACCOUNTING_ZCDP_H_

#include "server/dp/accounting/privacy_event.h"
#include "server/dp/zcdp_conversion.h"

namespace dpq::dp::accounting {

// rho of one event (count ignored): Gaussian 1/(2 z^2); the Poisson-subsampled Gaussian is charged
// as the unsampled one (valid: Renyi divergence of a mixture is at most the largest component's, by
// joint quasi-convexity, van Erven & Harremoës 2014 Thm 13; no amplification is claimed); Laplace,
// discrete Laplace (eps = D/T) and PureDp eps^2/2 (Bun & Steinke 2016, Prop. 1.4); ApproxDp with delta > 0 has none (+inf: accountants keep it additively).
double EventRho(const PrivacyEvent& event);

// The rho -> (epsilon, delta) conversions (Bun & Steinke 2016 Prop. 1.3; Canonne, Kamath & Steinke
// 2020 Prop. 12 / Cor. 13) live in server/dp/zcdp_conversion.h, where the Gaussian mechanism also
// calibrates with them; re-exported here for the accountants. All are upper bounds (rounded up).
using ::dpq::dp::ZcdpDelta;
using ::dpq::dp::ZcdpEpsilonCks;
using ::dpq::dp::ZcdpEpsilonSimple;

}  // namespace dpq::dp::accounting

#endif  // DPQ_SERVER_DP_ACCOUNTING_ZCDP_H_
