#include "server/dp/accounting/zcdp.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

namespace dpq::dp::accounting {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Golden-section minimisation of a unimodal f on [lo, hi]; returns the best point evaluated.
double GoldenMinimize(const std::function<double(double)>& f, double lo, double hi) {
  const double g = (std::sqrt(5.0) - 1) / 2;
  double c = hi - g * (hi - lo), d = lo + g * (hi - lo);
  double fc = f(c), fd = f(d);
  double best_x = fc < fd ? c : d, best_f = std::min(fc, fd);
  for (int it = 0; it < 200 && (hi - lo) > 1e-12 * std::max(1.0, hi); ++it) {
    if (fc < fd) {
      hi = d; d = c; fd = fc;
      c = hi - g * (hi - lo); fc = f(c);
      if (fc < best_f) { best_f = fc; best_x = c; }
    } else {
      lo = c; c = d; fc = fd;
      d = lo + g * (hi - lo); fd = f(d);
      if (fd < best_f) { best_f = fd; best_x = d; }
    }
  }
  return best_x;
}

}  // namespace

double EventRho(const PrivacyEvent& e) {
  switch (e.kind) {
    case EventKind::kGaussian:
    case EventKind::kPoissonSubsampledGaussian: {
      const double z = e.GaussianNoiseMultiplier();
      return 1 / (2 * z * z);
    }
    case EventKind::kLaplace:
      return e.LaplaceEpsilon() * e.LaplaceEpsilon() / 2;
    case EventKind::kDiscreteLaplace:
      // Pure (D/T)-DP => (D/T)^2/2-zCDP (Bun & Steinke 2016, Prop. 1.4). No tighter rho is claimed:
      // sup_a D_a / a of the discrete pair is not known here in closed form.
      return e.DiscreteLaplaceEpsilon() * e.DiscreteLaplaceEpsilon() / 2;
    case EventKind::kPureDp:
      return e.epsilon * e.epsilon / 2;
    case EventKind::kApproxDp:
      return e.delta == 0 ? e.epsilon * e.epsilon / 2 : kInf;
  }
  return kInf;
}

double ZcdpEpsilonSimple(double rho, double delta) {
  return rho + 2 * std::sqrt(rho * std::log(1 / delta));
}

double ZcdpEpsilonCks(double rho, double delta) {
  if (rho == 0) return 0;
  if (std::isinf(rho)) return kInf;
  auto objective = [&](double a) {
    return a * rho + std::log1p(-1 / a) - (std::log(delta) + std::log(a)) / (a - 1);
  };
  // Work in t = log(a - 1) so the bracket covers orders from 1 + 1e-9 to 1 + 1e12 evenly.
  auto f = [&](double t) { return objective(1 + std::exp(t)); };
  // Coarse scan to locate the basin, then golden section inside the neighbouring cells.
  double best_t = 0, best_f = kInf;
  const double t_lo = std::log(1e-9), t_hi = std::log(1e12), step = 0.25;
  for (double t = t_lo; t <= t_hi; t += step) {
    const double v = f(t);
    if (v < best_f) { best_f = v; best_t = t; }
  }
  const double t = GoldenMinimize(f, best_t - step, best_t + step);
  const double eps = std::min(f(t), best_f);
  return std::max(0.0, std::min(eps, ZcdpEpsilonSimple(rho, delta)));
}

double ZcdpDelta(double rho, double epsilon) {
  if (rho == 0) return 0;
  auto log_delta = [&](double t) {
    const double a = 1 + std::exp(t);
    return (a - 1) * (a * rho - epsilon) + (a - 1) * std::log1p(-1 / a) - std::log(a);
  };
  double best_t = 0, best = kInf;
  const double step = 0.25;
  for (double t = std::log(1e-9); t <= std::log(1e12); t += step) {
    const double v = log_delta(t);
    if (v < best) { best = v; best_t = t; }
  }
  const double t = GoldenMinimize(log_delta, best_t - step, best_t + step);
  return std::min(1.0, std::exp(std::min(best, log_delta(t))));
}

}  // namespace dpq::dp::accounting
