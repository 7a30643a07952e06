#include "server/dp/ldp/frequency_estimate.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"
#include "server/dp/noise_quantiles.h"

namespace dpq::dp::ldp {

absl::StatusOr<std::vector<FrequencyEstimate>> EstimateFrequencies(
    const PureProtocol& protocol, const std::vector<int64_t>& support, int64_t reports,
    double confidence) {
  RETURN_IF_ERROR(ValidateInOpenRange(confidence, 0, 1, "confidence"));
  if (reports < 0) return absl::InvalidArgumentError("reports must be >= 0");
  const double z = NormalQuantile(1 - (1 - confidence) / 2);
  const double n = static_cast<double>(reports);
  std::vector<FrequencyEstimate> out;
  out.reserve(support.size());
  for (int64_t s : support) {
    if (s < 0 || s > reports) {
      return absl::InvalidArgumentError(
          absl::StrCat("reports (", reports, ") must be at least every support count, got ", s));
    }
    FrequencyEstimate e;
    e.count = protocol.EstimateCount(static_cast<double>(s), reports);  // Wang et al. 2017 Thm 2
    // Plug-in variance: the true count is unknown, its estimate within [0, n] stands for it.
    const double variance = protocol.EstimatorVariance(reports, std::clamp(e.count, 0.0, n));
    e.standard_error = std::sqrt(std::max(variance, 0.0));
    e.lower = e.count - z * e.standard_error;
    e.upper = e.count + z * e.standard_error;
    out.push_back(e);
  }
  return out;
}

}  // namespace dpq::dp::ldp
