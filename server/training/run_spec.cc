#include "server/training/run_spec.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace dpq::training {

absl::Status ValidateRunSpec(const RunSpec& spec) {
  // The negated comparisons also refuse NaN.
  if (!(spec.sampling_rate > 0 && spec.sampling_rate <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("sampling_rate must be in (0, 1], got %g", spec.sampling_rate));
  }
  if (!(spec.noise_multiplier >= kMinNoiseMultiplier &&
        spec.noise_multiplier <= kMaxNoiseMultiplier)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "noise_multiplier must be in [%g, %g], got %g (or give target_epsilon and steps to "
        "calibrate it)",
        kMinNoiseMultiplier, kMaxNoiseMultiplier, spec.noise_multiplier));
  }
  if (!(spec.delta >= 1e-18 && spec.delta < 1)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("delta must be in [1e-18, 1), got %g", spec.delta));
  }
  return absl::OkStatus();
}

absl::Status ValidateReportSteps(int64_t steps) {
  if (steps < 1 || steps > kMaxStepsPerReport) {
    return absl::InvalidArgumentError(
        absl::StrCat("steps must be in [1, ", kMaxStepsPerReport, "], got ", steps));
  }
  return absl::OkStatus();
}

absl::Status ValidateRunName(const std::string& name) {
  bool ok = !name.empty() && name.size() <= 64;
  for (size_t i = 0; ok && i < name.size(); ++i) {
    const char c = name[i];
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    ok = alnum || (i > 0 && (c == '_' || c == '.' || c == '-'));
  }
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      "run must be 1..64 characters of letters, digits, '_', '.' or '-', starting with a letter or "
      "digit");
}

}  // namespace dpq::training
