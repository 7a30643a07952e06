// The declared parameters of a DP-SGD training run (Abadi et al. 2016, Alg. 1): each step samples
// every privacy unit independently with probability q (Poisson sampling), clips per-unit gradients
// to L2 norm C and adds N(0, (z C)^2) noise, so one step is the Poisson-subsampled Gaussian
// mechanism with noise multiplier z (privacy_event.h). `delta` is the delta at which the run's
// epsilon is reported and at which a report priced as one (epsilon, delta) event is charged.
// All three are fixed when the run starts; nothing about the data enters them.
#ifndef DPQ_SERVER_TRAINING_RUN_SPEC_H_
#define DPQ_SERVER_TRAINING_RUN_SPEC_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace dpq::training {

struct RunSpec {
  double sampling_rate = 0;     // q in (0, 1]
  double noise_multiplier = 0;  // z, finite, in [kMinNoiseMultiplier, kMaxNoiseMultiplier]
  double delta = 0;             // in (0, 1), at least 1e-18 (the ledger's delta unit)
};

// z below 0.1 gives epsilons of thousands per step and makes the PLD grid enormous; above 1e6 is
// noise of no use. Both limits are far outside what DP-SGD uses (z ~ 0.5 .. 10).
inline constexpr double kMinNoiseMultiplier = 0.1;
inline constexpr double kMaxNoiseMultiplier = 1e6;
// The most steps one report may carry (and the most a run may declare). 1e6 steps at q = 1/1000
// is a thousand epochs; the PLD price of one report stays within a few seconds at this size.
inline constexpr int64_t kMaxStepsPerReport = 1'000'000;
// The most steps a run may accumulate (the accountants' count limit is 1e9).
inline constexpr int64_t kMaxRunSteps = 100'000'000;

// INVALID_ARGUMENT naming "sampling_rate", "noise_multiplier" or "delta" with its valid range.
absl::Status ValidateRunSpec(const RunSpec& spec);

// INVALID_ARGUMENT naming "steps" unless 1 <= steps <= kMaxStepsPerReport.
absl::Status ValidateReportSteps(int64_t steps);

// Run names: 1..64 characters of [A-Za-z0-9_.-], starting with a letter or digit. INVALID_ARGUMENT
// naming "run".
absl::Status ValidateRunName(const std::string& name);

}  // namespace dpq::training

#endif  // DPQ_SERVER_TRAINING_RUN_SPEC_H_
