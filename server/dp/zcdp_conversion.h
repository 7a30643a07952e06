// Conversions from zero-concentrated DP to (epsilon, delta)-DP, and the Gaussian calibration
// by them.
//
// rho-zCDP (Bun & Steinke 2016, "Concentrated Differential Privacy: Simplifications, Extensions,
// and Lower Bounds", TCC, Def. 1.1) means D_a(M(x) || M(x')) <= a rho for every order a > 1. The
// continuous Gaussian, and the (multivariate) discrete Gaussian with independent N_Z(0, s^2)
// coordinates, is rho-zCDP with rho = Delta_2^2 / (2 s^2) (Bun & Steinke 2016 Prop. 1.6; Canonne,
// Kamath, Steinke 2020, "The Discrete Gaussian for Differential Privacy", Thm 14).
//
// These are the one implementation of the conversion: the mechanisms calibrate with them
// (gaussian_mechanism.cc) and the zCDP accountant converts with them (accounting/zcdp.h).
// Every value returned is a rigorous bound in the private direction: each conversion is a value of
// its objective at one order a (any a > 1 gives a valid bound), evaluated with an explicit
// floating-point rounding allowance added, so it is never below the exact objective at that a.
// Public quantities only: floating point is fine here.
#ifndef DPQ_SERVER_DP_ZCDP_CONVERSION_H_
#define DPQ_SERVER_DP_ZCDP_CONVERSION_H_

#include "absl/status/statusor.h"

namespace dpq::dp {

// eps = rho + 2 sqrt(rho ln(1/delta)) (Bun & Steinke 2016, Prop. 1.3), rounded up.
// rho >= 0, delta in (0, 1) (not checked).
double ZcdpEpsilonSimple(double rho, double delta);

// Upper bound on inf_{a > 1} a rho + log((a-1)/a) - (log delta + log a)/(a-1) (Canonne, Kamath &
// Steinke 2020, Prop. 12 applied to the RDP curve a * rho; Cor. 13 solved for epsilon): a rho-zCDP
// mechanism is (eps, delta)-DP for the returned eps. The objective is convex in a; it is minimised
// over a - 1 in [1e-9, 1e12] (log-spaced scan, then golden section), and the returned value is the
// objective at an evaluated order plus its rounding allowance, so it is never below the infimum.
// Clamped to >= 0 and never above ZcdpEpsilonSimple. rho >= 0 (0 gives 0, +inf gives +inf), delta
// in (0, 1) (not checked).
double ZcdpEpsilonCks(double rho, double delta);

// Upper bound on the delta of the same theorem for a given eps >= 0:
// inf_{a > 1} exp((a-1)(a rho - eps)) / (a-1) * (1 - 1/a)^a (CKS 2020, Cor. 13), clamped to <= 1.
double ZcdpDelta(double rho, double epsilon);

// Smallest sigma (to 2^-40 relative) such that the rho-zCDP bound of a Gaussian mechanism with L2
// sensitivity l2_sensitivity, rho = l2_sensitivity^2 / (2 sigma^2) (rounded up), converts by
// ZcdpEpsilonCks to at most epsilon at delta. Valid for the continuous Gaussian and for the
// (multivariate) discrete Gaussian (CKS 2020, Thm 14) alike; never below the exact continuous
// calibration (AnalyticGaussianSigma), because the conversion is not tight. The returned sigma is
// always checked directly. INVALID_ARGUMENT naming "epsilon" (finite > 0), "delta" (in (0, 1)) or
// "l2_sensitivity" (finite > 0); OUT_OF_RANGE if sigma would not be a finite double.
absl::StatusOr<double> ZcdpGaussianSigma(double epsilon, double delta, double l2_sensitivity);

// rho = l2_sensitivity^2 / (2 sigma^2), rounded up (both inputs finite > 0; not checked).
double GaussianRhoRoundedUp(double l2_sensitivity, double sigma);

}  // namespace dpq::dp

#endif  // DPQ_SERVER_DP_ZCDP_CONVERSION_H_
