// The one place that writes arithmetic over raw rows in a scan statement (store/scan_sql.cc).
//
// A scan runs after the charge; if it could fail on some stored value, the analyst would see an
// error on the dataset holding that value and an answer on its neighbour: an exact oracle, paid
// or not (docs/threat-model.md, "Scans are total"). So every raw value is clamped before any
// arithmetic touches it, and every operation after the clamp is written here, in a form that
// cannot raise a PostgreSQL data exception (SQLSTATE class 22) for any storable value and any
// bounds that validation accepts (|bound| <= kMaxBoundMagnitude = 1e15):
//
//  * Clamp:  float8smaller(float8larger(raw, lo), hi) (numeric_smaller / numeric_larger in
//    numeric). Total on every float8 including NaN (PostgreSQL orders NaN above every number, so
//    it clamps to hi) and +-Infinity (to the nearer bound); NULL stays NULL. bigint columns are
//    read through an exact-or-rounded cast to float8 that never fails. Not least(greatest(..)):
//    postgres_fdw never ships LEAST / GREATEST to a remote server, while these plain built-in
//    functions are shipped, so a clamped aggregate over a shard runs on the shard
//    (docs/scaling.md). They also keep NULL as NULL, which LEAST / GREATEST do not.
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
// Per-row expressions (expression_sql.h) nest these operations up to 64 deep, so each builder
// below reads each argument ONCE in the text it writes: a builder that repeated its argument
// (as Square does with a column reference) would double the statement at every level.
//  * Flush rounds to a multiple of 2^-500 (about 3.05e-151) without repeating its argument:
//    float8 `round(v * 2^500) / 2^500` (round is rint; both scalings by a power of two are exact
//    for |v| <= 1e15, and v * 2^500 <= 3.3e165 cannot overflow), numeric `round(v, 151)`. So
//    |v| < 2^-501 becomes 0, |v| >= 2^-447 (where v * 2^500 is already an integer) is unchanged,
//    and no value moves by more than 2^-501 (float8) or 5e-152 (numeric): a public rounding far
//    below any noise. In numeric it also bounds the scale (digits after the point) of a product
//    by 302, so nested products cannot reach numeric's scale limit of 16383.
//  * Multiply flushes both factors: a nonzero product is >= 2^-1000 (about 9.3e-302) > DBL_MIN,
//    no underflow; factors of magnitude <= 1e15 (+2^-501) give <= 1e30, no overflow.
//  * Divide flushes the dividend; the caller guarantees the divisor lies in an interval excluding
//    0 with magnitude <= 1e15: a nonzero quotient is >= 2^-500 / 1e15 > 1e-166 (no underflow), and
//    a flushed dividend is 0 or at most twice the dividend's bound, so the quotient is at most
//    twice its interval's bound (<= 2e15, no overflow).
//  * RoundHalfAwayFromZero reads a float8 through its text, which the pinned session setting
//    extra_float_digits = 3 makes the shortest decimal that rounds back to the same double; a
//    half-way decimal is then printed exactly, and any other decimal lies on the same side of
//    every half-integer as the double does, so numeric `round` (half away from zero, total)
//    rounds the double correctly. (float8 `round` is rint: half to even.)
//  * Smaller / Larger are PostgreSQL's strict float8smaller / numeric_smaller (and -larger): NULL
//    if either argument is NULL (ZetaSQL's LEAST / GREATEST), where SQL least() skips NULLs.
//  * ToFloat8Once is ToFloat8 reading its argument once: numeric `round(v, 323)::float8` (a
//    nonzero value is then >= 1e-323, above the smallest subnormal, so the cast never underflows).
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
  // `value` clamped into [lo, hi]: NaN to hi, +-Infinity to the nearer bound, NULL stays NULL
  // (per-row expressions rely on a NULL propagating).
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
  // Per-row expression steps (see above); each reads each argument once.
  std::string Flush(absl::string_view value) const;
  std::string Multiply(absl::string_view a, absl::string_view b) const;
  // `divisor` must lie in an interval that excludes 0 (CheckExpression).
  std::string Divide(absl::string_view dividend, absl::string_view divisor) const;
  std::string RoundHalfAwayFromZero(absl::string_view value) const;
  std::string Smaller(absl::string_view a, absl::string_view b) const;
  std::string Larger(absl::string_view a, absl::string_view b) const;
  std::string ToFloat8Once(absl::string_view value) const;
  // A literal constant of this arithmetic (the thresholds above), e.g. "1e-150::float8".
  std::string Constant(double value) const;

 private:
  ScanArithmetic arithmetic_;
};

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_SCAN_ARITHMETIC_H_
