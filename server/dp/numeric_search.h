// One-dimensional searches over public parameters (calibrations, conversions, Chernoff bounds).
// Each is used where every evaluated point is itself a valid answer (a valid bound, a passing
// parameter) and the search only tightens it: results are points that were EVALUATED, never
// extrapolations.
#ifndef DPQ_SERVER_DP_NUMERIC_SEARCH_H_
#define DPQ_SERVER_DP_NUMERIC_SEARCH_H_

#include "absl/functional/function_ref.h"

namespace dpq::dp {

// Golden-section search (Kiefer 1953) for a unimodal f on [lo, hi]: the evaluated x with the
// smallest f(x). Stops when the bracket is narrower than relative_tolerance * max(1, hi) or after
// max_iterations steps.
double GoldenSectionMinimize(absl::FunctionRef<double(double)> f, double lo, double hi,
                             double relative_tolerance = 1e-12, int max_iterations = 200);

struct Minimum {
  double x;
  double value;  // f(x)
};

// f at lo, lo + step, ... (<= hi) to locate the basin of a unimodal f, then golden-section search
// on [best - step, best + step]. The best evaluated point.
Minimum ScanThenGoldenSectionMinimize(absl::FunctionRef<double(double)> f, double lo, double hi,
                                      double step, double relative_tolerance = 1e-12,
                                      int max_iterations = 200);

// Bisection between lo (where passes is false, or lo = 0) and hi (where passes is true), keeping
// that invariant, until hi - lo <= relative_width * hi or max_iterations steps: returns the
// final hi, a passing point. Assumes nothing about passes between the two ends.
double BisectToPassingEnd(double lo, double hi, absl::FunctionRef<bool(double)> passes,
                          double relative_width, int max_iterations = 400);

}  // namespace dpq::dp

#endif  // DPQ_SERVER_DP_NUMERIC_SEARCH_H_
