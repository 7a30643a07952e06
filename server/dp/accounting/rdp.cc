#include "server/dp/accounting/rdp.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "server/dp/accounting/numerics.h"

namespace dpq::dp::accounting {
namespace {

using internal::LogAdd;
using internal::LogNormalCdf;
using internal::LogSub;

constexpr double kInf = std::numeric_limits<double>::infinity();

// log of erfc(x) = log 2 + log Phi(-x sqrt 2) (Opacus `_log_erfc`).
double LogErfc(double x) { return std::log(2.0) + LogNormalCdf(-x * std::sqrt(2.0)); }

// log A_alpha for integer alpha (Mironov, Talwar & Zhang 2019, Sec. 3.3):
// A = sum_i C(alpha, i) q^i (1-q)^(alpha-i) exp((i^2 - i) / (2 sigma^2)).
double LogAInt(double q, double sigma, int alpha) {
  double log_a = -kInf;
  const double lq = std::log(q), l1q = std::log1p(-q);
  for (int i = 0; i <= alpha; ++i) {
    const double log_binom =
        std::lgamma(alpha + 1.0) - std::lgamma(i + 1.0) - std::lgamma(alpha - i + 1.0);
    const double s =
        log_binom + i * lq + (alpha - i) * l1q + (double(i) * i - i) / (2 * sigma * sigma);
    log_a = LogAdd(log_a, s);
  }
  return log_a;
}

// log A_alpha for fractional alpha (Mironov, Talwar & Zhang 2019, Sec. 3.4): the integral is split at
// z0 where the two Gaussians' mixture ratio crosses 1 and each half is expanded in a binomial series
// with alternating signs; terms are accumulated until both are below e^-30 (Opacus 1.5.4).
double LogAFrac(double q, double sigma, double alpha) {
  double log_a0 = -kInf, log_a1 = -kInf;
  const double z0 = sigma * sigma * std::log(1 / q - 1) + 0.5;
  const double lq = std::log(q), l1q = std::log1p(-q);
  double log_abs_coef = 0;  // log |C(alpha, i)|, updated by C(a, i+1) = C(a, i) (a - i) / (i + 1)
  bool coef_positive = true;
  for (int i = 0;; ++i) {
    const double j = alpha - i;
    const double log_t0 = log_abs_coef + i * lq + j * l1q;
    const double log_t1 = log_abs_coef + j * lq + i * l1q;
    const double log_e0 = std::log(0.5) + LogErfc((i - z0) / (std::sqrt(2.0) * sigma));
    const double log_e1 = std::log(0.5) + LogErfc((z0 - j) / (std::sqrt(2.0) * sigma));
    const double log_s0 = log_t0 + (double(i) * i - i) / (2 * sigma * sigma) + log_e0;
    const double log_s1 = log_t1 + (j * j - j) / (2 * sigma * sigma) + log_e1;
    if (coef_positive) {
      log_a0 = LogAdd(log_a0, log_s0);
      log_a1 = LogAdd(log_a1, log_s1);
    } else {
      log_a0 = LogSub(log_a0, log_s0);
      log_a1 = LogSub(log_a1, log_s1);
    }
    if (std::max(log_s0, log_s1) < -30 || i > 100000) break;
    const double factor = (alpha - i) / (i + 1.0);
    if (factor == 0) break;
    log_abs_coef += std::log(std::fabs(factor));
    if (factor < 0) coef_positive = !coef_positive;
  }
  return LogAdd(log_a0, log_a1);
}

}  // namespace

const std::vector<double>& DefaultRdpOrders() {
  static const std::vector<double>* orders = [] {
    auto* v = new std::vector<double>;
    for (int i = 11; i <= 109; ++i) v->push_back(i / 10.0);
    for (int i = 11; i <= 63; ++i) v->push_back(i);
    for (double a : {128.0, 256.0, 512.0, 1024.0}) v->push_back(a);
    return v;
  }();
  return *orders;
}

double GaussianRdp(double z, double alpha) { return alpha / (2 * z * z); }

double LaplaceRdp(double eps0, double alpha) {
  if (std::isinf(alpha)) return eps0;
  if (alpha == 1) return eps0 + std::expm1(-eps0);  // KL divergence (Mironov 2017, Table II)
  const double log_a = (alpha - 1) * eps0 + std::log(alpha / (2 * alpha - 1));
  const double log_b = -alpha * eps0 + std::log((alpha - 1) / (2 * alpha - 1));
  return LogAdd(log_a, log_b) / (alpha - 1);
}

// Discrete Laplace pair. With p(k) = c r^|k|, r = e^{-u}, u = 1/t, c = (1-r)/(1+r) (Canonne, Kamath &
// Steinke 2020, Def. 1), P = p(.) and Q = p(. - d), the loss L(k) = log p(k)/p(k-d) = (|k-d| - |k|)/t
// is
//   +eps0 = d/t       for k <= 0     (P-mass sum_{k<=0} c r^-k = 1/(1+r)),
//   (d - 2k)/t        for 0 < k < d  (P-mass c r^k each),
//   -eps0             for k >= d     (P-mass r^d/(1+r)).
// Reflecting k -> d - k swaps P and Q, so D_alpha(P||Q) = D_alpha(Q||P). With x = (a-1) eps0,
// s = (2a-1) u and rho = e^{-s} (so that c r^k e^{(a-1)(d-2k)u} = c e^x rho^k):
//   E_P[e^{(a-1)L}] = e^x/(1+r) + e^{-a eps0}/(1+r) + c e^x sum_{k=1}^{d-1} rho^k
//                   = e^x/(1+r) * B,   B = 1 + e^{-(2a-1) eps0} + (1-r)/(1-rho) rho (1 - rho^{d-1})
// (geometric series; e^{-a eps0} = e^x e^{-(2a-1) eps0}). B in [1, 3] is a sum of positive terms,
// each a product of expm1-accurate factors, so log E = x - log1p(r) + log B has an absolute error
// of a few ulps of (1 + x) whatever t and d are; kErrorMargin covers it so that the result never
// falls below the exact divergence through rounding. As t -> inf (eps0 fixed) the middle term tends
// to (1 - e^{-(2a-1)eps0})/(2a-1) and E to the continuous Laplace expression (Mironov 2017, Prop. 6).
double DiscreteLaplaceRdp(double t, double d, double alpha) {
  constexpr double kErrorMargin = 16 * std::numeric_limits<double>::epsilon();
  const double eps0 = d / t;
  if (std::isinf(alpha)) return eps0;
  const double u = 1 / t;
  const double r = std::exp(-u);
  if (alpha == 1) {
    // KL = E_P[L] = (d - 2 E(Z)_+ + 2 E(Z-d)_+)/t with E(Z-j)_+ = r^{j+1}/(1-r^2) for j >= 0, i.e.
    // eps0 - 2u r (1 - r^d)/(1 - r^2) = eps0 - (u / sinh u)(1 - e^{-eps0}).
    const double kl = eps0 - (u / std::sinh(u)) * -std::expm1(-eps0) + kErrorMargin * eps0;
    return std::clamp(kl, 0.0, PureDpRdp(eps0, 1.0));
  }
  const double am1 = alpha - 1;
  const double x = am1 * eps0;
  const double s = (2 * alpha - 1) * u;
  // (d = 1 has no middle outputs; testing it also avoids 0 * inf when s overflows.)
  const double middle =
      d > 1 ? std::expm1(-u) / std::expm1(-s) * std::exp(-s) * -std::expm1(-(d - 1) * s) : 0.0;
  const double b = 1 + std::exp(-(2 * alpha - 1) * eps0) + middle;
  const double log_mgf = x - std::log1p(r) + std::log(b) + kErrorMargin * (1 + x);
  // The exact divergence is <= both pure-DP bounds (Mironov 2017, Prop. 9; Bun & Steinke 2016,
  // Prop. 1.4); the clamp also caps the margin, which dominates only when eps0 < ~1e-7.
  return std::clamp(log_mgf / am1, 0.0, PureDpRdp(eps0, alpha));
}

double PureDpRdp(double epsilon, double alpha) {
  if (std::isinf(alpha)) return epsilon;
  return std::min(epsilon, alpha * epsilon * epsilon / 2);
}

double SubsampledGaussianRdp(double q, double sigma, double alpha) {
  if (q == 0) return 0;
  if (q >= 1.0) return GaussianRdp(sigma, alpha);
  if (std::isinf(alpha)) return kInf;
  const double rounded = std::round(alpha);
  const double log_a = (alpha == rounded && rounded < 1e6) ? LogAInt(q, sigma, int(rounded))
                                                           : LogAFrac(q, sigma, alpha);
  return log_a / (alpha - 1);
}

double EventRdp(const PrivacyEvent& e, double alpha) {
  switch (e.kind) {
    case EventKind::kLaplace: return LaplaceRdp(e.LaplaceEpsilon(), alpha);
    case EventKind::kGaussian: return GaussianRdp(e.GaussianNoiseMultiplier(), alpha);
    case EventKind::kPoissonSubsampledGaussian:
      return SubsampledGaussianRdp(e.sampling_rate, e.noise_multiplier, alpha);
    case EventKind::kPureDp: return PureDpRdp(e.epsilon, alpha);
    case EventKind::kApproxDp: return e.delta == 0 ? PureDpRdp(e.epsilon, alpha) : kInf;
    case EventKind::kDiscreteLaplace: return DiscreteLaplaceRdp(e.scale, e.sensitivity, alpha);
  }
  return kInf;
}

double EventMaxDivergence(const PrivacyEvent& e) {
  switch (e.kind) {
    case EventKind::kLaplace: return e.LaplaceEpsilon();
    case EventKind::kDiscreteLaplace: return e.DiscreteLaplaceEpsilon();
    case EventKind::kPureDp: return e.epsilon;
    case EventKind::kApproxDp: return e.delta == 0 ? e.epsilon : kInf;
    default: return kInf;
  }
}

absl::StatusOr<RdpConversion> RdpToEpsilon(absl::Span<const double> orders,
                                           absl::Span<const double> rdp, double delta) {
  if (!(delta > 0 && delta < 1)) return absl::InvalidArgumentError("delta must be in (0, 1)");
  if (orders.size() != rdp.size() || orders.empty()) {
    return absl::InvalidArgumentError("orders and rdp must have the same, non-zero size");
  }
  RdpConversion best{kInf, 0};
  for (size_t i = 0; i < orders.size(); ++i) {
    const double a = orders[i], r = rdp[i];
    if (!(r >= 0))
      return absl::InvalidArgumentError(absl::StrCat("rdp at order ", a, " is negative"));
    double eps;
    if (delta * delta + std::expm1(-r) > 0) {
      eps = 0;
    } else if (a > 1.01) {
      eps = r + std::log1p(-1 / a) - std::log(delta * a) / (a - 1);
    } else {
      eps = kInf;
    }
    if (eps < best.epsilon) best = {eps, a};
  }
  best.epsilon = std::max(0.0, best.epsilon);
  return best;
}

}  // namespace dpq::dp::accounting
