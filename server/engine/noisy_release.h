// Turns a plan's exact scan result into released values: one calibrated mechanism per noise
// component, then the aggregate's post-processing (mean = centre + sum / count) and its interval.
#ifndef DPQ_SERVER_ENGINE_NOISY_RELEASE_H_
#define DPQ_SERVER_ENGINE_NOISY_RELEASE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/dp/random_source.h"
#include "server/query/planner.h"
#include "server/store/aggregate_scanner.h"

namespace dpq::engine {

struct NoisyRelease {
  double value = 0;
  double noise_scale = 0;        // of the count (COUNT) or of the sum (SUM, MEAN)
  double count_noise_scale = 0;  // MEAN only
  double sensitivity = 0;        // of the component noise_scale belongs to
  double ci_lower = 0;
  double ci_upper = 0;
  // One privacy event per released component, as accountant event specs: the discrete Laplace
  // release is pure epsilon-DP ("pure:epsilon=..."); the discrete Gaussian one is charged by its
  // actual sigma and grid sensitivity ("gaussian:sigma=...,sensitivity=..."), which RDP and zCDP
  // accountants compose tightly (Canonne, Kamath, Steinke 2020, Thm. 4).
  std::vector<std::string> events;
};

// Adds noise to `exact` as `plan` prescribes. The interval holds the true aggregate of the kept,
// clamped rows with probability >= plan.spec.confidence over the noise.
absl::StatusOr<NoisyRelease> ReleaseWithNoise(const query::QueryPlan& plan,
                                              const store::ScanResult& exact, dp::RandomSource& rng);

}  // namespace dpq::engine

#endif  // DPQ_SERVER_ENGINE_NOISY_RELEASE_H_
