#include "server/base/budget_share.h"

#include <cmath>

namespace dpq {

double ShareOf(double total, int64_t parts) {
  const double n = static_cast<double>(parts);  // exact: parts <= 2^53
  double share = total / n;
  // fma gives the sign of the exact share * n - total (one rounding of a nonzero value keeps its
  // sign); the quotient is within one ulp of the exact one, so one step down suffices.
  if (share > 0 && std::fma(share, n, -total) > 0) share = std::nextafter(share, 0.0);
  return share;
}

}  // namespace dpq
