#include "server/dp/numeric_search.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dpq::dp {

double GoldenSectionMinimize(absl::FunctionRef<double(double)> f, double lo, double hi,
                             double relative_tolerance, int max_iterations) {
  const double g = (std::sqrt(5.0) - 1) / 2;
  double c = hi - g * (hi - lo), d = lo + g * (hi - lo);
  double fc = f(c), fd = f(d);
  double best_x = fc < fd ? c : d, best_f = std::min(fc, fd);
  for (int it = 0; it < max_iterations && (hi - lo) > relative_tolerance * std::max(1.0, hi);
       ++it) {
    if (fc < fd) {
      hi = d;
      d = c;
      fd = fc;
      c = hi - g * (hi - lo);
      fc = f(c);
      if (fc < best_f) {
        best_f = fc;
        best_x = c;
      }
    } else {
      lo = c;
      c = d;
      fc = fd;
      d = lo + g * (hi - lo);
      fd = f(d);
      if (fd < best_f) {
        best_f = fd;
        best_x = d;
      }
    }
  }
  return best_x;
}

Minimum ScanThenGoldenSectionMinimize(absl::FunctionRef<double(double)> f, double lo, double hi,
                                      double step, double relative_tolerance, int max_iterations) {
  Minimum best{lo, std::numeric_limits<double>::infinity()};
  for (double x = lo; x <= hi; x += step) {
    const double v = f(x);
    if (v < best.value) best = {x, v};
  }
  const double x =
      GoldenSectionMinimize(f, best.x - step, best.x + step, relative_tolerance, max_iterations);
  const double v = f(x);
  return v < best.value ? Minimum{x, v} : best;
}

double BisectToPassingEnd(double lo, double hi, absl::FunctionRef<bool(double)> passes,
                          double relative_width, int max_iterations) {
  for (int i = 0; i < max_iterations && hi - lo > relative_width * hi; ++i) {
    const double mid = lo + (hi - lo) / 2;
    if (passes(mid)) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return hi;
}

}  // namespace dpq::dp
