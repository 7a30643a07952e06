// The one place that writes arithmetic over raw rows in a scan statement (store/scan_sql.cc).
//
// A scan runs after the charge; if it could fail on some stored value, the analyst would see an
// error on the dataset holding that value and an answer on its neighbour: an exact oracle, paid
// or not (docs/threat-model.md, "Scans are total"). So every raw value is clamped before any
// arithmetic touches it, and every operation after the clamp is written here, in a form that
// cannot raise a PostgreSQL data exception (SQLSTATE class 22) for any storable value and any
// bounds that validation accepts (|bound| <= kMaxBoundMagnitude = 1e15):
//
//  * Clamp:  least(greatest(raw, lo), hi). Total on every float8 including NaN (PostgreSQL
//    orders NaN above every number, so it clamps to hi) and +-Infinity (to the nearer bound);
//    bigint columns are read through an exact-or-rounded cast to float8 that never fails.
//  * Difference c - center: both in [-1e15, 1e15], so |c - center| <= 2e15. float8 subtraction
//    only raises on overflow, which is impossible here; a subnormal result is no error.
//  * Sum over n kept values of magnitude <= 2e15 (n < 2^63): <= 1.9e34. Sums never raise on
//    underflow, only overflow.
//  * Square d*d: PostgreSQL raises "value out of range: underflow" when a nonzero factor gives 0
//    (float8mul, dpow). `Square` maps |d| < kTinyMagnitude (1e-150) to 0 first, so a nonzero
//    square is >= 1e-300 > DBL_MIN, and <= 4e30 above.
//  * Quotient s / n (a unit's mean, n >= 1 rows): float8div raises on underflow too. `Mean` maps
//    |s| < kTinyMagnitude to 0, so a nonzero quotient is >= 1e-150 / 2^63 > 1e-170.
//  * Per-unit pre-aggregation sums a unit's RAW values before its total is clamped to the
//    per-unit bounds (ZetaSQL's contribution_bounds_per_group). Each raw value is first clamped
//    into +-kPreAggregateRawLimit (1e288), so a unit's total over < 2^63 rows stays below 9.3e306
//    < DBL_MAX: no overflow. Totals of real data are unchanged (no stored value reaches 1e288
//    unless it is an attack value).
// Flushing magnitudes below 1e-150 changes a square by < 1e-300 and a per-unit mean by < 1e-150:
// public thresholds, never data-dependent choices, far below any noise dpq adds.
//
// kNumeric writes the same statement in exact `numeric`, which has no overflow or underflow at
// these magnitudes (PostgreSQL 14+ numeric holds NaN and +-Infinity, so the casts are total too).
// It is the fallback AggregateScanner runs if the float8 statement ever raises a data exception
// (a bug by the argument above; counted in dpq_scan_data_errors_total). Its outputs pass through
// ToFloat8, which flushes |x| < 1e-300 to 0 (numeric -> float8 raises on true underflow).
#ifndef DPQ_SERVER_STORE_SCAN_ARITHMETIC_H_
#define DPQ_SERVER_STORE_SCAN_ARITHMETIC_H_

#include <string>

#include "absl/strings/string_view.h"

namespace dpq::store {

enum class ScanArithmetic { kFloat8, kNumeric };

absl::string_view ScanArithmeticName(ScanArithmetic arithmetic);  // "float8", "numeric"

// Below this magnitude a value is flushed to 0 before it is squared or divided (see above).
inline constexpr double kTinyMagnitude = 1e-150;
// Raw values are clamped into +-this before a per-unit pre-aggregation sums them (see above).
inline constexpr double kPreAggregateRawLimit = 1e288;

// SQL expression builders for one arithmetic. Arguments are SQL expressions (column references,
// bound parameters, earlier results); results are SQL expressions of the arithmetic's type.
class SafeArithmetic {
 public:
  explicit SafeArithmetic(ScanArithmetic arithmetic) : arithmetic_(arithmetic) {}

  ScanArithmetic arithmetic() const { return arithmetic_; }
  // The SQL type name values are computed in: "float8" or "numeric".
  absl::string_view type() const { return ScanArithmeticName(arithmetic_); }

  // A raw numeric column (double or integer) read in this arithmetic: never fails.
  std::string Raw(absl::string_view column) const;
  // `value` clamped into [lo, hi]: NaN to hi, +-Infinity to the nearer bound.
  std::string Clamp(absl::string_view value, absl::string_view lo, absl::string_view hi) const;
  // A raw value clamped into +-kPreAggregateRawLimit, for the per-unit sums.
  std::string ClampForPreAggregate(absl::string_view raw) const;
  // value * value, with |value| < kTinyMagnitude flushed to 0 first.
  std::string Square(absl::string_view value) const;
  // sum / count (count >= 1), with |sum| < kTinyMagnitude flushed to 0 first.
  std::string Mean(absl::string_view sum, absl::string_view count) const;
  // sum(value) over a group, 0 for an empty one.
  std::string Sum(absl::string_view value) const;
  // A result of this arithmetic as float8: never fails (|x| < 1e-300 flushes to 0 for numeric;
  // results are bounded far below DBL_MAX by the argument above).
  std::string ToFloat8(absl::string_view value) const;
  // A literal constant of this arithmetic (the thresholds above), e.g. "1e-150::float8".
  std::string Constant(double value) const;

 private:
  ScanArithmetic arithmetic_;
};

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_SCAN_ARITHMETIC_H_
