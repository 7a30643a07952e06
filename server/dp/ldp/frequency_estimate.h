// Frequency estimates of a local-DP collection with their confidence intervals.
//
// For a pure protocol (p, q) and n reports of which I_v support v, the unbiased count estimate is
// c_v = (I_v - n q) / (p - q) (Wang, Blocki, Li, Jha 2017, Thm 2) with variance
//   Var = n q (1 - q) / (p - q)^2 + c_v (1 - p - q) / (p - q)
// (randomized_response.h; the first term is Wang et al. Eq. (3)). The interval is the normal
// (Wald) interval c_v +- z sqrt(Var) with z the two-sided standard normal quantile: I_v is a sum
// of n independent Bernoulli reports, so the central limit theorem applies. The true count in the
// second term is unknown; the estimate clamped to [0, n] is plugged in (a plug-in Wald interval).
// Each interval holds at the confidence on its own (not simultaneously over the domain).
// Estimates are post-processing of the reports: they cost no privacy.
#ifndef DPQ_SERVER_DP_LDP_FREQUENCY_ESTIMATE_H_
#define DPQ_SERVER_DP_LDP_FREQUENCY_ESTIMATE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "server/dp/randomized_response.h"

namespace dpq::dp::ldp {

struct FrequencyEstimate {
  double count = 0;  // unbiased; may be negative or exceed n (not clamped: clamping biases it)
  double lower = 0, upper = 0;
  double standard_error = 0;
};

// One estimate per entry of `support` (I_v), over `reports` reports. INVALID_ARGUMENT naming
// "confidence" unless it lies in (0, 1), or "reports" when negative or below some I_v.
absl::StatusOr<std::vector<FrequencyEstimate>> EstimateFrequencies(
    const PureProtocol& protocol, const std::vector<int64_t>& support, int64_t reports,
    double confidence);

}  // namespace dpq::dp::ldp

#endif  // DPQ_SERVER_DP_LDP_FREQUENCY_ESTIMATE_H_
