// Closed intervals of doubles, for deriving the bounds of a per-row expression from the declared
// bounds of the columns it reads (interval arithmetic: Moore, "Interval Analysis", 1966, ch. 2;
// the four-corner product and the quotient through the reciprocal are his eqs. 2.4-2.6).
//
// Why it is sound for a release: the derived interval is only a clamp range and the sensitivity
// computed from it; the scan still clamps the expression's value into it (scans are total), so a
// value outside (rounding, a NULL branch) cannot change the sensitivity, only be clamped.
// An end is moved outward by one ulp wherever its rounding went inward (Hickey, Ju & van Emden,
// "Interval arithmetic: from principles to implementation", JACM 2001, sec. 5), so the interval
// contains the exact real result on any values inside the inputs, not just the rounded one, and
// exact operations (integer sums and products) keep exact ends.
#ifndef DPQ_SERVER_QUERY_VALUE_INTERVAL_H_
#define DPQ_SERVER_QUERY_VALUE_INTERVAL_H_

#include <string>

#include "absl/status/statusor.h"

namespace dpq::query {

struct ValueInterval {
  double lower = 0;
  double upper = 0;

  bool Contains(double v) const { return lower <= v && v <= upper; }
  bool ContainsZero() const { return Contains(0); }
  std::string ToString() const;  // "[-3, 7.5]"
};

// [v, v].
ValueInterval PointInterval(double v);
// The smallest interval holding both (CASE and IF: the hull of the branches).
ValueInterval Hull(const ValueInterval& a, const ValueInterval& b);

ValueInterval Negate(const ValueInterval& a);
ValueInterval Abs(const ValueInterval& a);
ValueInterval Least(const ValueInterval& a, const ValueInterval& b);
ValueInterval Greatest(const ValueInterval& a, const ValueInterval& b);
ValueInterval Add(const ValueInterval& a, const ValueInterval& b);
ValueInterval Subtract(const ValueInterval& a, const ValueInterval& b);
ValueInterval Multiply(const ValueInterval& a, const ValueInterval& b);
// INVALID_ARGUMENT when `b` contains 0: the quotient is then unbounded (and the scan could divide
// by zero), whatever the data.
absl::StatusOr<ValueInterval> Divide(const ValueInterval& a, const ValueInterval& b);

// OK when both ends are finite with magnitude <= kMaxBoundMagnitude (dataset_schema.h), the
// limit every clamp range obeys; INVALID_ARGUMENT naming `what` otherwise.
absl::Status CheckDerivedBounds(const ValueInterval& v, const std::string& what);

}  // namespace dpq::query

#endif  // DPQ_SERVER_QUERY_VALUE_INTERVAL_H_
