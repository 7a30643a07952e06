// Privacy arithmetic over declared events, for AccountingService: pricing a list of event specs
// (dp/accounting PriceEvents) and calibrating a DP-SGD noise multiplier (CalibrateNoiseMultiplier).
// Reads no dataset, touches no ledger, charges nothing. INVALID_ARGUMENT names the offending
// request field ("accountant", "delta", "events[i]", "target_epsilon", "q", "steps");
// RESOURCE_EXHAUSTED when a PLD grows too large.
#ifndef DPQ_SERVER_ENGINE_ACCOUNTING_H_
#define DPQ_SERVER_ENGINE_ACCOUNTING_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/dp/accounting/accountant.h"

namespace dpq::engine {

// OK while the caller still wants the answer; else why not (its deadline passed, it cancelled).
// The computations cannot be interrupted, so this is checked before and after each: a caller that
// gave up never gets an answer computed past its deadline (and none is needed: nothing was
// charged).
using StillWanted = std::function<absl::Status()>;

// A noise multiplier and the epsilon it actually achieves.
struct Calibration {
  double noise_multiplier = 0;
  double epsilon = 0;  // priced by the same accountant: <= the target
};

class Accounting {
 public:
  // The (epsilon, delta) of `event_specs` (dp/accounting/privacy_event.h) under `accountant` at
  // `delta`; epsilon is +inf when no finite epsilon holds at this delta.
  absl::StatusOr<dp::accounting::Price> Price(const std::string& accountant, double delta,
                                              const std::vector<std::string>& event_specs,
                                              const StillWanted& still_wanted) const;
  // The smallest noise multiplier (rounded up) of `steps` Poisson-subsampled Gaussian steps at
  // rate `q` that stays within (target_epsilon, delta) under `accountant` (rdp, zcdp or pld).
  absl::StatusOr<Calibration> Calibrate(const std::string& accountant, double target_epsilon,
                                        double delta, double q, int64_t steps,
                                        const StillWanted& still_wanted) const;
};

}  // namespace dpq::engine

#endif  // DPQ_SERVER_ENGINE_ACCOUNTING_H_
