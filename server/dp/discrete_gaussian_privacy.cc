#include "server/dp/discrete_gaussian_privacy.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"
#include "server/dp/analytic_gaussian.h"

// Notation: k(y) = exp(-y^2/(2 s^2)) (the unnormalised kernel), N = sum_{z in Z} k(z),
// T = epsilon s^2/D - D/2, g(y) = k(y) - e^eps k(y + D) = k(y) * (1 - exp(x(y))) with
// x(y) = eps - D (2y + D)/(2 s^2).
//
// Why delta = (1/N) sum_{y > T} g(y) is the exact privacy profile (CKS 2020, Thm 7, re-derived):
// for an integer shift d = q(x) - q(x') (WLOG 0 < d <= D by symmetry of Y; d = 0 gives delta 0),
// the tight delta is the hockey-stick divergence H(d) = sum_y max(0, p(y) - e^eps p(y - d)) =
// sup_A P[Y in A] - e^eps P[Y + d in A]. The log-likelihood ratio log p(y)/p(y - d) =
// (d^2 - 2 y d)/(2 s^2) is decreasing in y, so the supremum is attained on a lower set {y < t},
// and for d' < d and every t, P[Y + d < t] <= P[Y + d' < t]; hence H(d') <= H(d): the worst
// integer shift is d = D. By the symmetry y -> -y, H(D) = sum_y max(0, p(y) - e^eps p(y + D)), and
// p(y) - e^eps p(y + D) > 0 exactly when x(y) < 0, i.e. y > T (it is 0 at y = T, so strict or
// non-strict inequality gives the same value). This is CKS 2020 Thm 7 with Delta = D.
//
// Floating point: everything is long double (x86-64: 64-bit mantissa, unit roundoff 2^-64) and
// every computed quantity carries an explicit error allowance of at least 2^6 = 64 units of
// roundoff per libm call (glibc documents <= 5 ulp for erfcl/expl/expm1l/logl on x86-64), added in
// the private direction; the final value is rounded up to a double.
namespace dpq::dp {
namespace {

using LD = long double;

constexpr LD kSqrt2 = 1.41421356237309504880168872420969807857L;
constexpr LD kSqrt2Pi = 2.50662827463100050241576528481104525301L;
constexpr LD kExpMinusHalf = 0.60653065971263342360379953499118045344L;
constexpr double kMaxParameter = 0x1p50;
constexpr double kDirectMaxSigma = 0x1p16;
constexpr LD kDirectMaxEstimatedTerms = 0x1p22L;
constexpr int64_t kDirectMaxTerms = int64_t{1} << 23;
// If T/s > 40 then delta < 2 e^-800, below the smallest positive double (see NegligibleDelta).
constexpr LD kNegligibleZ = 40;

// A long-double upper bound rounded up to a double, clamped to (0, 1] (delta <= 1 always, and the
// exact delta is > 0: the set {y > T} is never empty and g > 0 on it).
double RoundUpToDouble(LD x) {
  if (!(x < 1)) return 1.0;  // also catches NaN, in the safe direction
  double d = static_cast<double>(x);
  if (static_cast<LD>(d) < x) d = std::nextafter(d, 2.0);
  return std::max(d, std::numeric_limits<double>::denorm_min());
}

LD Threshold(LD s, LD d, LD eps) { return eps * s * s / d - d / 2; }

// Lower bound on N. Poisson summation (CKS 2020, proof of Fact 18 / Lemma 17):
// N = sqrt(2 pi) s * sum_{k in Z} exp(-2 pi^2 s^2 k^2) >= sqrt(2 pi) s, every Fourier term being
// positive; the slack is 2 exp(-2 pi^2 s^2) relative, below 2^-64 for s >= 2. For small s the
// partial sum over |z| <= 40 s + 2 (also a lower bound, all terms are positive) is tighter.
LD NormaliserLowerBound(LD s) {
  LD norm = kSqrt2Pi * s;
  if (s < 4) {
    const LD two_s2 = 2 * s * s;
    const int64_t limit = static_cast<int64_t>(std::ceil(40 * s)) + 2;
    LD partial = 0;
    for (int64_t z = limit; z >= 1; --z) {
      const LD zl = static_cast<LD>(z);
      partial += std::exp(-zl * zl / two_s2);
    }
    norm = std::max(norm, 1 + 2 * partial);
  }
  return norm * (1 - 0x1p-56L);  // absorbs the rounding of the sum / product above
}

}  // namespace

namespace internal {

// Direct summation. Terms start at floor(T_computed) - 1 <= floor(T) + 1 (|T - T_computed| < 1/8
// for all admitted parameters) and are clamped at 0, so the sum covers every y > T and the extra
// y <= T contribute exactly 0 (up to the rounding allowance). After the last summed y >= 0 the rest
// is bounded by sum_{y' > y} g(y') <= sum_{y' > y} k(y') <= k(y+1) / (1 - exp(-(2y+3)/(2 s^2))),
// since consecutive kernel ratios k(y'+1)/k(y') = exp(-(2y'+1)/(2 s^2)) decrease for y' >= 0.
double DiscreteGaussianDeltaDirect(double s, int64_t D, double epsilon, int64_t max_terms) {
  const LD sl = s, dl = static_cast<LD>(D), el = epsilon;
  const LD two_s2 = 2 * sl * sl;
  const LD t = Threshold(sl, dl, el);
  if (t / sl > kNegligibleZ) return std::numeric_limits<double>::denorm_min();
  LD sum = 0;    // sum of max(0, g(y))
  LD error = 0;  // absolute allowance for the rounding of the summed terms
  LD tail = 0;
  int64_t n = 0;
  for (LD y = std::floor(t) - 1;; y += 1) {
    const LD arg = y * y / two_s2;
    const LD k = std::exp(-arg);
    const LD x = el - dl * (2 * y + dl) / two_s2;
    const LD f = -std::expm1(x);
    // x carries <= 4 roundings of quantities bounded by eps + |x|: |x - x_exact| <= dx.
    const LD dx = (el + std::fabs(x)) * 0x1p-58L;
    if (f > 0) {
      sum += k * f;
      // k: argument off by <= 3 arg 2^-64, plus the libm error; f: libm error (when x is not near 0).
      error += k * f * (arg + 8) * 0x1p-60L;
    }
    // 1 - e^x is off by <= e^x dx (twice that bound covers the second-order term); a computed
    // x > dx means the exact x > 0, where the clamped term is exactly 0.
    if (x <= dx) error += k * 2 * dx * std::max<LD>(1 - f, 0);
    ++n;
    const bool out_of_budget = n >= max_terms;
    if (y >= 0 && (out_of_budget || n % 64 == 0)) {
      const LD next = std::exp(-(y + 1) * (y + 1) / two_s2);
      tail = next / -std::expm1(-(2 * y + 3) / two_s2) * (1 + 0x1p-56L);
      if (out_of_budget || tail <= 0x1p-66L * sum) break;
    } else if (out_of_budget) {
      return 1.0;  // stopped inside the bulk (T far below 0): the trivial bound
    }
  }
  // Recursive summation of n non-negative terms: relative error <= n 2^-64.
  const LD numerator = (sum + tail + error) * (1 + static_cast<LD>(n + 64) * 0x1p-62L);
  return RoundUpToDouble(numerator / NormaliserLowerBound(sl) * (1 + 0x1p-60L));
}

}  // namespace internal

namespace {

// Upper bound on (1/N) sum_{y >= m} g(y) for one integer m, from the Euler-Maclaurin formula with
// p = 2 (e.g. Apostol 1999, "An Elementary View of Euler's Summation Formula", Thm 1; DLMF 2.10.1
// with the remainder bound |R_2| <= (2 zeta(2)/(2 pi)^2) int |f''| = (1/12) int |f''|):
//   sum_{y >= a} f(y) = int_a^inf f + f(a)/2 - f'(a)/12 + R,   |R| <= (1/12) TV(f'; [a, inf)).
// For f = k: int_a^inf k = sqrt(2 pi) s Q(a/s), Q the standard normal upper tail, and TV(k') on
// [a, inf) is known in closed form (k' has its extrema +-c, c = e^-1/2 / s, at -s and s). So
//   A(m) = sum_{y >= m} k(y)     <= I(m) + k(m)/2 - k'(m)/12 + TV(m)/12,
//   B(m) = sum_{y >= m+D} k(y)   >= max(0, I(w) + k(w)/2 - k'(w)/12 - TV(w)/12),  w = m + D,
// and sum_{y >= m} g(y) = A(m) - e^eps B(m). Dividing by N >= sqrt(2 pi) s (Poisson, above) is
// valid because the numerator is > 0 for m = floor(T) + 1. The neglected amount is at most
// |k'|/6 per tail, i.e. about (m/s)^2/(6 s^2) relative: ~1e-11 at s = 2^20.
LD EulerMaclaurinUpper(LD m, LD s, LD d, LD eps) {
  const LD s2 = s * s;
  const LD norm = kSqrt2Pi * s * (1 - 0x1p-62L);
  const LD c = kExpMinusHalf / s;
  // Total variation of k' on [a, inf), given kp = k'(a) (scaled by `scale` with c).
  auto variation = [&](LD a, LD kp, LD scaled_c) {
    if (a >= s) return -kp;                 // k' increases from k'(a) <= 0 to 0
    if (a >= -s) return kp + 2 * scaled_c;  // down to -c at s, then up to 0
    return 3 * scaled_c - kp;               // up to c at -s, down to -c, up to 0
  };
  // A(m) / norm.
  const LD zm = m / s;
  const LD km = std::exp(-m * m / (2 * s2));
  const LD kpm = -m / s2 * km;
  const LD a1 = std::erfc(zm / kSqrt2) / 2;
  const LD a2_terms[3] = {km / 2, -kpm / 12, variation(m, kpm, c) / 12};
  // e^eps B(m) / norm, computed in log space (e^eps may overflow while the product does not).
  const LD w = m + d;
  const LD zw = w / s;
  LD b1 = 0;
  if (zw <= 100) {
    const LD q = std::erfc(zw / kSqrt2) / 2;  // >= e^-5000 > 0 here
    b1 = std::exp(eps + std::log(q));
  } else {
    // Gordon 1941: Q(z) >= phi(z) z / (z^2 + 1) for z > 0.
    b1 = std::exp(eps - zw * zw / 2) * zw / ((zw * zw + 1) * kSqrt2Pi);
  }
  LD b2_terms[3] = {0, 0, 0};
  bool b_valid = true;
  if (w >= s) {
    // -k'(w)/12 - TV(w)/12 = 0 here.
    b2_terms[0] = std::exp(eps - w * w / (2 * s2)) / 2;
  } else if (eps <= 64) {
    const LD ek = std::exp(eps - w * w / (2 * s2));
    const LD ekp = -w / s2 * ek;
    const LD ec = std::exp(eps) * c;
    b2_terms[0] = ek / 2;
    b2_terms[1] = -ekp / 12;
    b2_terms[2] = -variation(w, ekp, ec) / 12;
  } else {
    b_valid = false;  // not reached for admitted parameters; B >= 0 is always a valid bound
  }
  LD a = a1, a_abs = std::fabs(a1), b = b1, b_abs = std::fabs(b1);
  for (const LD v : a2_terms) {
    a += v / norm;
    a_abs += std::fabs(v) / norm;
  }
  for (const LD v : b2_terms) {
    b += v / norm;
    b_abs += std::fabs(v) / norm;
  }
  if (!b_valid || b < 0) {
    b = 0;
    b_abs = 0;
  }
  // Rounding allowance: arguments z^2/2 and eps enter exponents with relative error 2^-63, so
  // each part is off by <= (16 + eps + zm^2 + zw^2) 2^-62 relative, plus 64 ulp per libm call.
  const LD allowance = (16 + eps + zm * zm + zw * zw) * 0x1p-56L * (a_abs + b_abs);
  return a - b + allowance;
}

}  // namespace

namespace internal {

double DiscreteGaussianDeltaEulerMaclaurin(double s, int64_t D, double epsilon) {
  const LD sl = s, dl = static_cast<LD>(D), el = epsilon;
  const LD t = Threshold(sl, dl, el);
  if (t / sl > kNegligibleZ) return std::numeric_limits<double>::denorm_min();
  // The exact first index m = floor(T) + 1 is within one of the computed one (|T - T_computed| <
  // 1/8 since |T| < 2^58), and for every integer m' the bound dominates sum_{y >= m'} g(y); so the
  // maximum over the three candidates dominates the exact numerator.
  const LD m = std::floor(t) + 1;
  LD best = 0;
  for (const LD candidate : {m - 1, m, m + 1}) {
    best = std::max(best, EulerMaclaurinUpper(candidate, sl, dl, el));
  }
  return RoundUpToDouble(best);
}

}  // namespace internal

// delta <= 2 e^-800 when T/s > 40: delta <= P[Y > T] <= (k(m) + int_m^inf k) / N with m > T, and
// int_m^inf k <= (s^2/m) k(m) (Mills ratio), k(m) <= e^-800, N >= max(1, sqrt(2 pi) s).
absl::StatusOr<double> DiscreteGaussianDelta(double s, int64_t D, double epsilon) {
  RETURN_IF_ERROR(ValidateIsPositive(s, "sigma"));
  RETURN_IF_ERROR(ValidateIsNonNegative(epsilon, "epsilon"));
  if (D < 1) {
    return absl::InvalidArgumentError(absl::StrCat("sensitivity must be >= 1, got ", D));
  }
  if (s > kMaxParameter || static_cast<double>(D) > kMaxParameter) {
    return absl::OutOfRangeError(
        absl::StrCat("sigma ", s, " and sensitivity ", D, " must be <= 2^50"));
  }
  const LD sl = s;
  const LD t = Threshold(sl, static_cast<LD>(D), epsilon);
  if (t / sl > kNegligibleZ) return std::numeric_limits<double>::denorm_min();
  // Euler-Maclaurin leaves about (1 + z^2)/(6 s^2) of each tail (z = T/s), and delta is smaller
  // than the first tail by about 2a/(a + b), a = D/(2s), b = eps s/D (Balle & Wang 2018, Thm 8).
  // Use it when that relative slack is negligible (<= 1e-7 in delta, i.e. <= ~1e-8 in sigma since
  // d log(delta) / d log(sigma) ~ -z^2), else sum.
  const LD z = std::max(t, static_cast<LD>(0)) / sl;
  const LD em_slack =
      (1 + z * z) / (3 * sl * sl) * (1.5L + epsilon * sl * sl / (static_cast<LD>(D) * D));
  if (em_slack > 1e-7L && s <= kDirectMaxSigma) {
    // Terms needed: the climb from floor(T) to 0 if T < 0, then until the Gaussian tail relative
    // to the sum is below 2^-66: about min(12 s, 64 s^2 / T) terms.
    const LD climb = t < 0 ? -2 * t : 0;
    const LD decay = std::min(12 * sl, 64 * sl * sl / std::max(t, static_cast<LD>(1)));
    if (climb + decay + 16 <= kDirectMaxEstimatedTerms) {
      return internal::DiscreteGaussianDeltaDirect(s, D, epsilon, kDirectMaxTerms);
    }
  }
  return internal::DiscreteGaussianDeltaEulerMaclaurin(s, D, epsilon);
}

absl::StatusOr<double> DiscreteGaussianSigma(double epsilon, double delta, int64_t D) {
  RETURN_IF_ERROR(ValidateIsPositive(epsilon, "epsilon"));
  RETURN_IF_ERROR(ValidateInOpenRange(delta, 0.0, 1.0, "delta"));
  if (D < 1 || static_cast<double>(D) > kMaxParameter) {
    return absl::InvalidArgumentError(absl::StrCat("sensitivity must be in [1, 2^50], got ", D));
  }
  ASSIGN_OR_RETURN(const double s0, AnalyticGaussianSigma(epsilon, delta, static_cast<double>(D)));
  auto too_large = [&] {
    return absl::OutOfRangeError(absl::StrCat("the discrete Gaussian sigma for epsilon ", epsilon,
                                              " and delta ", delta, " exceeds 2^50"));
  };
  auto is_private = [&](double s) -> absl::StatusOr<bool> {
    ASSIGN_OR_RETURN(const double d, DiscreteGaussianDelta(s, D, epsilon));
    return d <= delta;
  };
  if (!(s0 <= kMaxParameter)) return too_large();
  ASSIGN_OR_RETURN(bool ok, is_private(s0));
  if (ok) return s0;
  // Geometric search on the relative increment (s0 (1 + 2^-40), s0 (1 + 2^-36), ...), then
  // bisection. The invariant "lo fails, hi passes" holds by construction, so the result is
  // certified even where delta(s) is not monotone (s below ~2).
  double lo = s0;
  double hi = s0;
  for (double step = 0x1p-40;; step *= 16) {
    hi = s0 * (1 + step);
    if (!(hi <= kMaxParameter)) return too_large();
    ASSIGN_OR_RETURN(ok, is_private(hi));
    if (ok) break;
    lo = hi;
  }
  while (hi - lo > 0x1p-40 * hi) {
    const double mid = lo + (hi - lo) / 2;
    ASSIGN_OR_RETURN(ok, is_private(mid));
    if (ok) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return hi;
}

}  // namespace dpq::dp
