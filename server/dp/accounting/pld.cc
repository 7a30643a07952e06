#include "server/dp/accounting/pld.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <functional>
#include <limits>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/dp/accounting/fft.h"
#include "server/dp/accounting/numerics.h"
#include "server/dp/analytic_gaussian.h"

namespace dpq::dp::accounting {
namespace {

using internal::NormalCdf;
using internal::NormalSf;

constexpr double kInf = std::numeric_limits<double>::infinity();
// Normal quantile for one-sided tail ~1e-16: range of the continuous losses discretised.
constexpr double kTailSd = 8.3;
constexpr int64_t kMaxBins = int64_t{1} << 24;

// Connect-the-dots pmf (Doroshenko et al. 2022, Alg. 1) from delta at grid points lo..hi.
// With d_i = delta(eps_i) the pmf with atoms on the grid whose hockey-stick curve interpolates
// the d_i linearly in e^eps has, for lo < i <= hi,
//   p_i = [e^h (d_{i-1} - d_i) - (d_i - d_{i+1})] / (e^h - 1)    (d_{hi+1} := d_hi),
// p_inf = d_hi, and p_lo = 1 - p_inf - sum_{i > lo} p_i.
PldPmf ConnectTheDots(int64_t lo, int64_t hi, double h,
                      const std::function<double(double)>& delta) {
  std::vector<double> d(hi - lo + 1);
  for (int64_t i = lo; i <= hi; ++i) d[i - lo] = std::clamp(delta(i * h), 0.0, 1.0);
  PldPmf pmf;
  pmf.interval = h;
  pmf.lower = lo;
  pmf.probs.assign(d.size(), 0.0);
  const double eh = std::exp(h), em1 = std::expm1(h);
  double sum = 0;
  const size_t n = d.size();
  for (size_t i = n - 1; i >= 1; --i) {
    const double next = (i + 1 < n) ? d[i + 1] : d[i];
    const double p = (eh * (d[i - 1] - d[i]) - (d[i] - next)) / em1;
    pmf.probs[i] = std::max(0.0, p);
    sum += pmf.probs[i];
  }
  pmf.infinity_mass = d[n - 1];
  pmf.probs[0] = std::max(0.0, 1.0 - pmf.infinity_mass - sum);
  return pmf;
}

// Hockey-stick delta(eps) of the Laplace pair with eps0 = Delta/b: 1 - e^{(eps - eps0)/2} on
// [-eps0, eps0] (direct integration of the Laplace densities; Koskela et al. 2020 Sec. 6.1).
double LaplaceDelta(double eps0, double eps) {
  if (eps >= eps0) return 0;
  if (eps >= -eps0) return -std::expm1((eps - eps0) / 2);
  return -std::expm1(eps);
}

// Subsampled Gaussian, remove direction: P = (1-q) N(0,z^2) + q N(1,z^2), Q = N(0,z^2). The loss is
// increasing in x, L > eps iff x > x*(eps); delta = P(x > x*) - e^eps Q(x > x*).
double SubsampledRemoveDelta(double q, double z, double eps) {
  if (eps <= std::log1p(-q)) return -std::expm1(eps);
  const double c = std::expm1(eps) + q;  // e^eps - (1 - q) = q e^{(2x*-1)/(2z^2)}
  const double xs = z * z * std::log(c / q) + 0.5;
  return q * NormalSf((xs - 1) / z) - c * NormalSf(xs / z);
}

// Add direction: P = N(0,z^2), Q = (1-q) N(0,z^2) + q N(1,z^2); L > eps iff x < x*(eps).
double SubsampledAddDelta(double q, double z, double eps) {
  if (eps >= -std::log1p(-q)) return 0;
  const double c = std::expm1(-eps) + q;  // e^-eps - (1 - q)
  const double xs = z * z * std::log(c / q) + 0.5;
  return std::exp(eps) * (c * NormalCdf(xs / z) - q * NormalCdf((xs - 1) / z));
}

// Pessimistic PLD of the discrete Laplace pair P = Z, Q = Z + d (Z with P(Z = k) = c r^|k|,
// r = e^{-1/t}, c = (1-r)/(1+r); Canonne, Kamath & Steinke 2020, Def. 1). Index the outputs by
// j = clamp(k, 0, d): the loss is (d - 2j)/t (for k <= 0 it is +d/t, for k >= d it is -d/t; see
// DiscreteLaplaceRdp in rdp.cc), and the P-mass of j in [a, b] is G(a) - G(b+1) with the tail
//   G(0) = 1,  G(j) = sum_{i >= j} P(J = i) = r^j / (1+r)  (1 <= j <= d),  G(d+1) = 0
// (geometric series). Every atom is rounded UP to the grid (pessimistic discretisation, Koskela,
// Jälkö & Honkela 2020 Sec. 4; Meiser & Mohammadi 2018), and each grid bucket receives the summed
// mass of the contiguous j-range that rounds to it, in closed form, so the cost is O(non-empty
// buckets) (plus a short search per bucket) however large d is (d is ~2^20 in production).
// Connect-the-dots is not used: the pair has only d + 1 atoms (delta(eps) is piecewise linear in
// e^eps with a kink at each atom), and pessimistic rounding is already within one grid step.
//
// Grid index of loss x: ceil(x/h - 1e-12), the convention PldForEvent uses for pure events, so a
// loss within 1e-12 buckets (1e-12 * h in loss units, far below the FFT rounding noted in pld.h)
// of a grid point is placed on it rather than one bucket higher; the top atom d/t then sits on the
// same bucket as the pure event of epsilon d/t.
absl::StatusOr<PldPmf> DiscreteLaplacePld(double t, double d_real, double h, int64_t max_bins) {
  const int64_t d = static_cast<int64_t>(d_real);  // an integer <= 2^53 (PrivacyEvent::Validate)
  // d - 2j is exact in int64 and in double (|d - 2j| <= d <= 2^53); the index is non-increasing in j
  // because each floating-point step below is monotone.
  auto index = [t, h, d](int64_t j) -> int64_t {
    const double x = static_cast<double>(d - 2 * j) / t;
    return static_cast<int64_t>(std::ceil(x / h - 1e-12));
  };
  const int64_t hi = index(0), lo = index(d);
  if (hi - lo + 1 > max_bins) {
    return absl::ResourceExhaustedError(absl::StrCat("PLD of discrete-laplace:scale=", t,
                                                     ",sensitivity=", d,
                                                     " needs more than 2^24 bins at "
                                                     "interval ",
                                                     h));
  }
  const double r = std::exp(-1 / t);
  const double one_plus_r = 1 + r;
  // P-mass of j in [a, b], 0 <= a <= b <= d, as G(a) - G(b+1) rearranged without cancellation.
  auto mass = [&](int64_t a, int64_t b) -> double {
    if (a == 0 && b == d) return 1.0;
    if (a == 0) return (1 + r * -std::expm1(-static_cast<double>(b) / t)) / one_plus_r;
    const double ra = std::exp(-static_cast<double>(a) / t);
    if (b == d) return ra / one_plus_r;
    return ra * -std::expm1(-static_cast<double>(b + 1 - a) / t) / one_plus_r;
  };
  PldPmf p;
  p.interval = h;
  p.lower = lo;
  p.probs.assign(static_cast<size_t>(hi - lo + 1), 0.0);
  // Walk the non-empty buckets from the top: bucket n = index(a) holds the j in [a, b], b the last
  // j with index(j) >= n. b is found by galloping from the estimate (d - (n-1) h t)/2 (where the
  // loss crosses (n-1) h) and a binary search, on the computed index itself, so the partition is
  // exactly the per-atom rounding above. Cost: O(log error of the estimate) per bucket.
  const double th = t * h;
  int64_t a = 0;
  while (a <= d) {
    const int64_t n = index(a);
    const double estimate =
        std::floor((static_cast<double>(d) - static_cast<double>(n - 1) * th) / 2);
    const int64_t guess =
        static_cast<int64_t>(std::clamp(estimate, static_cast<double>(a), static_cast<double>(d)));
    int64_t lo_j = a, hi_j = d;  // the answer is in [lo_j, hi_j]; index(lo_j) >= n
    if (index(guess) >= n) {
      lo_j = guess;
      for (int64_t step = 1; lo_j < hi_j; step *= 2) {
        const int64_t probe = lo_j + std::min(step, hi_j - lo_j);
        if (index(probe) < n) {
          hi_j = probe - 1;
          break;
        }
        lo_j = probe;
      }
    } else {
      hi_j = guess - 1;
      for (int64_t step = 1; lo_j < hi_j; step *= 2) {
        const int64_t probe = hi_j - std::min(step, hi_j - lo_j);
        if (index(probe) >= n) {
          lo_j = probe;
          break;
        }
        hi_j = probe - 1;
      }
    }
    while (lo_j < hi_j) {
      const int64_t mid = lo_j + (hi_j - lo_j + 1) / 2;
      if (index(mid) >= n)
        lo_j = mid;
      else
        hi_j = mid - 1;
    }
    p.probs[n - lo] += mass(a, lo_j);
    a = lo_j + 1;
  }
  return p;
}

// Moves up to tail/2 of mass from each end: the top to infinity, the bottom onto the lowest kept
// loss (rounding losses up is pessimistic). Also drops zero bins at both ends.
void Trim(PldPmf& pmf, double tail) {
  auto& p = pmf.probs;
  size_t top = p.size();
  double acc = 0;
  while (top > 1 && acc + p[top - 1] <= tail / 2) acc += p[--top];
  pmf.infinity_mass += acc;
  p.resize(top);
  size_t bottom = 0;
  acc = 0;
  while (bottom + 1 < p.size() && acc + p[bottom] <= tail / 2) acc += p[bottom++];
  if (bottom > 0) {
    p.erase(p.begin(), p.begin() + bottom);
    pmf.lower += static_cast<int64_t>(bottom);
    p[0] += acc;
  }
  pmf.infinity_mass = std::min(1.0, pmf.infinity_mass);
}

std::complex<double> IntPow(std::complex<double> base, int64_t k) {
  std::complex<double> r(1.0, 0.0);
  while (k > 0) {
    if (k & 1) r *= base;
    base *= base;
    k >>= 1;
  }
  return r;
}

double LogSumExpMgf(const std::vector<double>& p, double t_times_h) {
  double mx = -kInf;
  for (size_t j = 0; j < p.size(); ++j) {
    if (p[j] > 0) mx = std::max(mx, std::log(p[j]) + t_times_h * double(j));
  }
  if (mx == -kInf) return -kInf;
  double s = 0;
  for (size_t j = 0; j < p.size(); ++j) {
    if (p[j] > 0) s += std::exp(std::log(p[j]) + t_times_h * double(j) - mx);
  }
  return mx + std::log(s);
}

}  // namespace

PldPmf PldPmf::Identity(double interval) {
  PldPmf p;
  p.interval = interval;
  p.lower = 0;
  p.probs = {1.0};
  return p;
}

absl::StatusOr<PldPmf> PldForEvent(const PrivacyEvent& e, double h, PldDirection dir) {
  RETURN_IF_ERROR(e.Validate());
  if (!(h >= 1e-6 && h <= 1)) return absl::InvalidArgumentError("interval must be in [1e-6, 1]");
  auto check_size = [&](int64_t lo, int64_t hi) -> absl::Status {
    if (hi - lo + 1 > kMaxBins) {
      return absl::ResourceExhaustedError(
          absl::StrCat("PLD of ", e.ToSpec(), " needs more than 2^24 bins at interval ", h));
    }
    return absl::OkStatus();
  };
  switch (e.kind) {
    case EventKind::kLaplace: {
      const double eps0 = e.LaplaceEpsilon();
      const int64_t lo = std::floor(-eps0 / h), hi = std::ceil(eps0 / h);
      RETURN_IF_ERROR(check_size(lo, hi));
      return ConnectTheDots(lo, hi, h, [eps0](double x) { return LaplaceDelta(eps0, x); });
    }
    case EventKind::kGaussian:
    case EventKind::kPoissonSubsampledGaussian: {
      const double z = e.GaussianNoiseMultiplier();
      const double q = e.kind == EventKind::kGaussian ? 1.0 : e.sampling_rate;
      if (q >= 1.0) {
        // Privacy loss of the Gaussian pair is N(mu, 2 mu) under P, mu = 1/(2 z^2); delta from
        // Balle & Wang 2018 Thm 8 (AnalyticGaussianDelta).
        const double mu = 1 / (2 * z * z), sd = 1 / z;
        const int64_t lo = std::floor((mu - kTailSd * sd) / h);
        const int64_t hi = std::ceil((mu + kTailSd * sd) / h);
        RETURN_IF_ERROR(check_size(lo, hi));
        return ConnectTheDots(lo, hi, h,
                              [z](double x) { return dp::AnalyticGaussianDelta(x, z, 1.0); });
      }
      // Loss at the far tail of the sampled component x = kTailSd z + 1.
      const double x_hi = kTailSd * z + 1;
      const double l_hi = std::log1p(q * std::expm1((2 * x_hi - 1) / (2 * z * z)));
      if (dir == PldDirection::kRemove) {
        const int64_t lo = std::floor(std::log1p(-q) / h), hi = std::ceil(l_hi / h);
        RETURN_IF_ERROR(check_size(lo, hi));
        return ConnectTheDots(lo, hi, h,
                              [q, z](double x) { return SubsampledRemoveDelta(q, z, x); });
      }
      const int64_t lo = std::floor(-l_hi / h), hi = std::ceil(-std::log1p(-q) / h);
      RETURN_IF_ERROR(check_size(lo, hi));
      return ConnectTheDots(lo, hi, h, [q, z](double x) { return SubsampledAddDelta(q, z, x); });
    }
    case EventKind::kDiscreteLaplace:
      // Symmetric (reflection k -> d - k swaps the pair): the same PLD serves both directions.
      return DiscreteLaplacePld(e.scale, e.sensitivity, h, kMaxBins);
    case EventKind::kPureDp:
    case EventKind::kApproxDp: {
      // Dominating pair of (eps, delta)-DP (Kairouz et al. 2015, Thm 2.1 / dp_accounting
      // from_privacy_parameters): loss +eps w.p. (1-delta) e^eps/(1+e^eps), -eps w.p.
      // (1-delta)/(1+e^eps), +inf w.p. delta. Both atoms are rounded up to the grid.
      const double eps = e.epsilon, del = e.kind == EventKind::kApproxDp ? e.delta : 0.0;
      const int64_t up = std::ceil(eps / h - 1e-12), down = std::ceil(-eps / h - 1e-12);
      PldPmf p;
      p.interval = h;
      p.lower = down;
      p.probs.assign(up - down + 1, 0.0);
      const double w_up = 1 / (1 + std::exp(-eps));  // e^eps / (1 + e^eps)
      p.probs[up - down] += (1 - del) * w_up;
      p.probs[0] += (1 - del) * (1 - w_up);
      p.infinity_mass = del;
      return p;
    }
  }
  return absl::InvalidArgumentError("unknown event kind");
}

absl::StatusOr<PldPmf> ComposePld(const PldPmf& a, const PldPmf& b, double tail) {
  if (a.interval != b.interval) return absl::InvalidArgumentError("PLD intervals differ");
  const size_t na = a.probs.size(), nb = b.probs.size();
  if (int64_t(na + nb) > kMaxBins) return absl::ResourceExhaustedError("composed PLD too large");
  PldPmf out;
  out.interval = a.interval;
  out.lower = a.lower + b.lower;
  out.probs.assign(na + nb - 1, 0.0);
  // Direct sum only when one side is short: two transforms of m = 2^ceil(log2(na + nb)) cost about
  // 2 m log2 m butterflies, which beats na nb multiply-adds once both exceed ~64 bins (measured
  // with bench/accountant_bench: 100 distinct Laplace events, 2.4x faster than a 4e6 threshold).
  if (std::min(na, nb) <= 64) {
    for (size_t i = 0; i < na; ++i) {
      if (a.probs[i] == 0) continue;
      for (size_t j = 0; j < nb; ++j) out.probs[i + j] += a.probs[i] * b.probs[j];
    }
  } else {
    const std::vector<double> conv = internal::ConvolveReal(a.probs, b.probs);
    for (size_t i = 0; i < out.probs.size(); ++i) out.probs[i] = std::max(0.0, conv[i]);
  }
  out.infinity_mass = 1 - (1 - a.infinity_mass) * (1 - b.infinity_mass);
  Trim(out, tail);
  return out;
}

absl::StatusOr<PldPmf> ComposeAllPld(std::vector<PldPmf> parts, double interval, double tail) {
  if (parts.empty()) return PldPmf::Identity(interval);
  while (parts.size() > 1) {
    std::vector<PldPmf> next;
    next.reserve((parts.size() + 1) / 2);
    for (size_t i = 0; i + 1 < parts.size(); i += 2) {
      ASSIGN_OR_RETURN(PldPmf both, ComposePld(parts[i], parts[i + 1], tail));
      next.push_back(std::move(both));
    }
    if (parts.size() % 2 == 1) next.push_back(std::move(parts.back()));
    parts = std::move(next);
  }
  return std::move(parts.front());
}

absl::StatusOr<PldPmf> SelfComposePld(const PldPmf& a, int64_t k, double tail) {
  if (k < 1) return absl::InvalidArgumentError("count must be >= 1");
  if (k == 1) return a;
  const size_t n = a.probs.size();
  const double h = a.interval;
  const double kd = static_cast<double>(k);
  // Chernoff window in offset units s = sum of (index - lower): P(S >= s) <= M(t)^k e^{-t s h}.
  const double max_s = kd * double(n - 1);
  double s_hi = max_s, s_lo = 0;
  for (int m = -40; m <= 40; ++m) {
    const double t = std::pow(2.0, m / 2.0);
    for (double sign : {1.0, -1.0}) {
      const double th = sign * t * h;
      const double lm = LogSumExpMgf(a.probs, th);
      const double s = (kd * lm - std::log(tail)) / th;
      if (sign > 0)
        s_hi = std::min(s_hi, std::ceil(s));
      else
        s_lo = std::max(s_lo, std::floor(s));
    }
  }
  s_lo = std::max(0.0, std::min(s_lo, max_s));
  s_hi = std::min(max_s, std::max(s_hi, s_lo));
  const double width = s_hi - s_lo + 1;
  if (width > double(kMaxBins)) return absl::ResourceExhaustedError("self-composed PLD too large");
  const size_t w = static_cast<size_t>(width);
  const size_t m = internal::NextPowerOfTwo(std::max(w, n));
  std::vector<std::complex<double>> f(m);
  for (size_t j = 0; j < n; ++j) f[j % m] += a.probs[j];
  internal::Fft(f, false);
  for (auto& c : f) c = IntPow(c, k);
  internal::Fft(f, true);
  PldPmf out;
  out.interval = h;
  const int64_t slo = static_cast<int64_t>(s_lo);
  out.lower = k * a.lower + slo;
  out.probs.resize(w);
  for (size_t i = 0; i < w; ++i) {
    const size_t pos = static_cast<size_t>((slo + int64_t(i)) % int64_t(m));
    out.probs[i] = std::max(0.0, f[pos].real() / double(m));
  }
  // Mass above the window (<= tail by the Chernoff bound, when the window was cut) is charged
  // to infinity; mass below it wrapped into higher bins (pessimistic).
  const double finite_inf = -std::expm1(kd * std::log1p(-a.infinity_mass));
  out.infinity_mass = finite_inf + (s_hi < max_s ? tail : 0.0);
  Trim(out, tail);
  return out;
}

double PldDelta(const PldPmf& pmf, double epsilon) {
  double d = pmf.infinity_mass;
  for (size_t j = 0; j < pmf.probs.size(); ++j) {
    const double x = (pmf.lower + int64_t(j)) * pmf.interval;
    if (x > epsilon) d += pmf.probs[j] * -std::expm1(epsilon - x);
  }
  return std::min(1.0, d);
}

double PldEpsilon(const PldPmf& pmf, double delta) {
  if (pmf.infinity_mass > delta) return kInf;
  const auto& p = pmf.probs;
  const double h = pmf.interval;
  const double c = -std::expm1(-h);
  // From the top: S = sum_{j>i} p_j, E = sum_{j>i} p_j e^{x_i - x_j}, D = S - E (kept without
  // cancellation by D_{i-1} = D_i + (1 - e^{-h})(E_i + p_i)).
  double s = 0, e = 0, d = 0;
  for (int64_t i = int64_t(p.size()) - 1; i >= 0; --i) {
    // Here s, e, d describe sums over j > i relative to x_i.
    if (pmf.infinity_mass + d > delta) {
      // delta(x_i) > delta >= delta(x_{i+1}): solve inf + s - e^{eps - x_i} e = delta.
      const double x = (pmf.lower + i) * h;
      return std::max(0.0, x + std::log((pmf.infinity_mass + s - delta) / e));
    }
    d += c * (e + p[i]);
    e = std::exp(-h) * (e + p[i]);
    s += p[i];
  }
  // delta(x_0 - h) <= delta: the answer is below the lowest atom.
  const double x = (pmf.lower - 1) * h;
  if (e <= 0) return 0;
  return std::max(0.0, x + std::log((pmf.infinity_mass + s - delta) / e));
}

}  // namespace dpq::dp::accounting
