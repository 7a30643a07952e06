// Rényi differential privacy (Mironov 2017, "Rényi Differential Privacy", CSF).
//
// An RDP curve is eps(alpha) on a fixed grid of orders alpha > 1; curves of composed mechanisms add
// (Mironov 2017, Prop. 1), also under adaptive choice of parameters when used as a filter
// (Feldman & Zrnic 2021, Thm 3.1 for one order; Lécuyer 2021 for a finite set of orders).
// All functions are for sensitivity 1 after rescaling; see PrivacyEvent for units.
#ifndef DPQ_SERVER_DP_ACCOUNTING_RDP_H_
#define DPQ_SERVER_DP_ACCOUNTING_RDP_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "server/dp/accounting/privacy_event.h"

namespace dpq::dp::accounting {

// dp_accounting's default grid (v0.6.0, RdpAccountant): 1.1, 1.2, ..., 10.9; 11, 12, ..., 63;
// 128, 256, 512, 1024 (153 orders). Using the same grid reproduces its epsilons exactly.
const std::vector<double>& DefaultRdpOrders();

// Gaussian with noise multiplier z = sigma / Delta2: alpha / (2 z^2) (Mironov 2017, Prop. 7).
double GaussianRdp(double noise_multiplier, double alpha);

// Laplace with eps0 = Delta1 / b (Mironov 2017, Prop. 6):
//   1/(alpha-1) log( alpha/(2alpha-1) e^{(alpha-1) eps0} + (alpha-1)/(2alpha-1) e^{-alpha eps0} ),
// evaluated in log space so that large alpha * eps0 does not overflow. alpha = inf gives eps0.
double LaplaceRdp(double eps0, double alpha);

// Discrete Laplace P(Z = k) ∝ e^{-|k|/t} (t > 0, in grid steps) added to an integer statistic whose
// neighbours differ by at most d >= 1 steps (an integer, exact in double): the exact Rényi divergence
// D_alpha(P || Q) = 1/(alpha-1) log E_P[e^{(alpha-1) L}] (Mironov 2017, Def. 3) of the pair P = Z,
// Q = Z + d, whose loss L takes three forms (derivation in rdp.cc). Symmetric in the two directions.
// alpha = inf gives d/t, alpha = 1 the KL divergence. Never above PureDpRdp(d/t, alpha), and tends
// to LaplaceRdp(d/t, alpha) as t -> inf with d/t fixed. O(1) per order.
double DiscreteLaplaceRdp(double t, double d, double alpha);

// Any eps-DP mechanism: min(eps, alpha eps^2 / 2). The first bound holds because D_alpha is
// non-decreasing in alpha and D_inf <= eps (Mironov 2017, Prop. 9 / Def. 3); the second because
// eps-DP implies (eps^2/2)-zCDP (Bun & Steinke 2016, Prop. 1.4), i.e. D_alpha <= alpha eps^2/2.
double PureDpRdp(double epsilon, double alpha);

// Poisson-subsampled Gaussian, add-or-remove-one relation (Mironov, Talwar & Zhang 2019,
// "Rényi Differential Privacy of the Sampled Gaussian Mechanism"): integer alpha by the binomial
// expansion (their Sec. 3.3), fractional alpha by the exact two-sided series (their Sec. 3.4), as
// Opacus 1.5.4 analysis/rdp.py `_compute_log_a_frac` does (the exact value; dp_accounting >= 2024-04
// sums |terms| instead, a looser bound). q = 1 reduces to GaussianRdp.
double SubsampledGaussianRdp(double q, double noise_multiplier, double alpha);

// RDP of one event (count ignored) at `alpha`; +inf where the event has no finite RDP (ApproxDp).
double EventRdp(const PrivacyEvent& event, double alpha);

// D_inf of one event: eps0 for Laplace and discrete Laplace, epsilon for PureDp, +inf otherwise.
double EventMaxDivergence(const PrivacyEvent& event);

struct RdpConversion {
  double epsilon = 0;
  double order = 0;  // the minimising order (0 if the eps = 0 rule applied on every order)
};

// RDP -> (eps, delta) (Balle, Barthe, Gaboardi, Hsu & Sato 2020, Thm 21; Canonne, Kamath & Steinke
// 2020, Prop. 12): eps = min_a rdp(a) + log((a-1)/a) - (log delta + log a)/(a-1), with
// dp_accounting's conventions: an order whose rdp satisfies delta^2 + expm1(-rdp) > 0 gives eps = 0
// (delta >= sqrt(1 - e^{-KL}), Bretagnolle-Huber), orders <= 1.01 are not used, result >= 0.
// INVALID_ARGUMENT for delta outside (0, 1), mismatched sizes or negative rdp.
absl::StatusOr<RdpConversion> RdpToEpsilon(absl::Span<const double> orders,
                                           absl::Span<const double> rdp, double delta);

}  // namespace dpq::dp::accounting

#endif  // DPQ_SERVER_DP_ACCOUNTING_RDP_H_
