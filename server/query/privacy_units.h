// Exact budget arithmetic. Epsilons are charged in integer units of 1e-12 and deltas in units of
// 1e-18, so budgets add up the way people write them (three charges of 0.1 spend a budget of 0.3
// exactly, which IEEE doubles do not: 0.1 + 0.1 + 0.1 > 0.3).
//
// Soundness: a requested epsilon is rounded to the nearest unit u (its decimal value); the ledger
// charges u exactly, and the mechanism is calibrated with MechanismEpsilon(u), the largest double
// <= u * 1e-12. So the mechanism's true privacy parameter never exceeds what was charged. Deltas
// likewise (MechanismDelta(u) <= u * 1e-18; a smaller delta only means more noise).
#ifndef DPQ_SERVER_QUERY_PRIVACY_UNITS_H_
#define DPQ_SERVER_QUERY_PRIVACY_UNITS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dpq::query {

inline constexpr int kEpsilonDecimals = 12;
inline constexpr int kDeltaDecimals = 18;
inline constexpr double kMaxEpsilon = 1e6;        // per query
inline constexpr double kMaxEpsilonBudget = 9e6;  // per ledger; 9e6 * 1e12 < 2^63

// Nearest unit of a positive epsilon in [1e-12, max]; INVALID_ARGUMENT naming `name` otherwise
// (NaN, inf, <= 0, rounds to 0, or too large).
absl::StatusOr<int64_t> EpsilonToUnits(double epsilon, absl::string_view name,
                                       double max = kMaxEpsilon);
// Nearest unit of a delta in [0, 1); a positive delta below 1e-18 is refused (it would round to 0).
absl::StatusOr<int64_t> DeltaToUnits(double delta, absl::string_view name);

// The nearest double to units * 10^-decimals: for display and reporting only.
double EpsilonFromUnits(int64_t units);
double DeltaFromUnits(int64_t units);

// The largest double <= units * 10^-decimals exactly: what a mechanism may be calibrated with.
double MechanismEpsilon(int64_t units);
double MechanismDelta(int64_t units);

namespace internal {
// Exact test of d * 10^decimals <= units, for finite d >= 0, 0 <= decimals <= 18, units >= 0.
bool TimesPow10AtMost(double d, int decimals, int64_t units);
// The largest double <= units * 10^-decimals.
double LargestDoubleAtMost(int64_t units, int decimals);
}  // namespace internal

}  // namespace dpq::query

#endif  // DPQ_SERVER_QUERY_PRIVACY_UNITS_H_
