// Exact rational representation of a positive double, for the integer samplers.
//
// Every finite double is m * 2^e exactly, so converting the noise scale to num/den loses nothing;
// samplers then use only integer arithmetic (Canonne, Kamath, Steinke 2020, Sec. 5).
#ifndef DPQ_SERVER_DP_EXACT_RATIONAL_H_
#define DPQ_SERVER_DP_EXACT_RATIONAL_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dpq::dp {

// num / den with 1 <= num, den <= 2^62 (the bound keeps every product in the samplers in 128 bits).
struct Rational {
  uint64_t num;
  uint64_t den;
};

inline constexpr uint64_t kMaxRationalPart = uint64_t{1} << 62;

// Returns num/den == x exactly when x (finite, > 0) fits; otherwise, if x < 2^62, the smallest
// num/2^62 that is >= x (rounding UP, the privacy-safe direction for a noise scale).
// INVALID_ARGUMENT (naming `name`) for NaN, inf, x <= 0; OUT_OF_RANGE for x > 2^62.
absl::StatusOr<Rational> RationalAtLeast(double x, absl::string_view name);

// As above but rounding DOWN (num/2^62 <= x) when x does not fit exactly; x must be >= 2^-62.
// Used for exponents whose probability exp(-x) should not shrink, e.g. acceptance probabilities.
absl::StatusOr<Rational> RationalAtMost(double x, absl::string_view name);

}  // namespace dpq::dp

#endif  // DPQ_SERVER_DP_EXACT_RATIONAL_H_
