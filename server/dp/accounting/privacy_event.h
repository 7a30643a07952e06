// Privacy events: the mechanisms an accountant composes, each repeated `count` times.
//
// Units: Laplace `scale` is the noise scale b (density exp(-|x|/b)/(2b)) and `sensitivity` the L1
// sensitivity, so one release is pure (sensitivity/scale)-DP. Gaussian `sigma` is the noise standard
// deviation and `sensitivity` the L2 sensitivity. The Poisson-subsampled Gaussian (DP-SGD step) has
// sampling rate q in (0, 1] and noise multiplier z = sigma / L2 sensitivity, add-or-remove-one
// neighbouring relation. PureDp is any epsilon-DP mechanism; ApproxDp any (epsilon, delta)-DP one.
//
// DiscreteLaplace is the grid release of additive_mechanism.h: one value is rounded to an integer
// number of grid steps and an exact discrete Laplace sample Z, P(Z = k) ∝ exp(-|k| / T), is added
// (Canonne, Kamath & Steinke 2020). Both `scale` T (real > 0; the sampler's scale, which it rounds
// up) and `sensitivity` D (an integer in [1, 2^53]: neighbours move the rounded integer by at most D
// steps, e.g. floor(Delta/gamma) + 1) are in grid steps; one release is pure (D/T)-DP. Its RDP and
// PLD are those of the pair (Z, Z + D), NOT the continuous Laplace ones (which are not upper bounds
// for it); see rdp.h and pld.h. The pair (Z, Z + D) dominates every shift |d| <= D: Z is discrete
// log-concave, so the shifts have a monotone likelihood ratio, the Neyman-Pearson tests are
// thresholds and the trade-off function is non-increasing in |d| (the argument Dong, Roth & Su 2022
// give for log-concave noise). It covers ONE noisy integer; a vector release whose neighbours move
// several coordinates is not this event (charge it as pure:epsilon).
//
// Text form (the `dpqctl price --event SPEC` syntax, also used in accountant state):
//   laplace:scale=B[,sensitivity=S][,count=N]
//   gaussian:sigma=S[,sensitivity=S][,count=N]
//   subsampled-gaussian:q=Q,sigma=Z[,count=N]        (sigma is the noise multiplier z)
//   pure:epsilon=E[,count=N]
//   approx:epsilon=E,delta=D[,count=N]
//   discrete-laplace:scale=T,sensitivity=D[,count=N]   (T and D in grid steps, D an integer)
// Numbers are printed with 17 significant digits, so ToSpec -> ParsePrivacyEvent is exact.
#ifndef DPQ_SERVER_DP_ACCOUNTING_PRIVACY_EVENT_H_
#define DPQ_SERVER_DP_ACCOUNTING_PRIVACY_EVENT_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dpq::dp::accounting {

enum class EventKind {
  kLaplace,
  kGaussian,
  kPoissonSubsampledGaussian,
  kPureDp,
  kApproxDp,
  kDiscreteLaplace,
};

// Largest accepted count: the accountants' arithmetic stays exact in double far beyond it.
inline constexpr int64_t kMaxEventCount = 1'000'000'000;

// Largest accepted discrete-Laplace sensitivity in grid steps (2^53: every integer up to it, and
// D - 2k for 0 <= k <= D, is exact in double).
inline constexpr double kMaxDiscreteLaplaceSensitivity = 9007199254740992.0;

struct PrivacyEvent {
  EventKind kind = EventKind::kPureDp;
  double scale = 0;             // Laplace b; discrete Laplace T (grid steps)
  double sensitivity = 1;       // L1 (Laplace), L2 (Gaussian), integer D steps (discrete Laplace)
  double sigma = 0;             // Gaussian noise standard deviation
  double sampling_rate = 0;     // subsampled Gaussian q
  double noise_multiplier = 0;  // subsampled Gaussian z
  double epsilon = 0;           // PureDp / ApproxDp
  double delta = 0;             // ApproxDp
  int64_t count = 1;

  static PrivacyEvent Laplace(double scale, double l1_sensitivity = 1.0, int64_t count = 1);
  static PrivacyEvent Gaussian(double sigma, double l2_sensitivity = 1.0, int64_t count = 1);
  static PrivacyEvent PoissonSubsampledGaussian(double sampling_rate, double noise_multiplier,
                                                int64_t count = 1);
  static PrivacyEvent PureDp(double epsilon, int64_t count = 1);
  static PrivacyEvent ApproxDp(double epsilon, double delta, int64_t count = 1);
  // Discrete Laplace of scale T = scale_steps on an integer statistic of sensitivity D =
  // sensitivity_steps (both in grid steps). D is stored in `sensitivity` (as a double).
  static PrivacyEvent DiscreteLaplace(double scale_steps, int64_t sensitivity_steps,
                                      int64_t count = 1);

  // INVALID_ARGUMENT naming the offending parameter: "scale", "sigma", "sensitivity",
  // "sampling_rate" (in (0, 1]), "noise_multiplier", "epsilon" (finite >= 0), "delta" (in [0, 1)),
  // "count" (in [1, kMaxEventCount]). Discrete Laplace: "scale" (finite > 0) and "sensitivity" (an
  // integer in [1, kMaxDiscreteLaplaceSensitivity]).
  absl::Status Validate() const;

  // Laplace: sensitivity / scale (the pure-DP epsilon of one release). Gaussian: sigma /
  // sensitivity (the noise multiplier). Subsampled Gaussian: noise_multiplier.
  double LaplaceEpsilon() const { return sensitivity / scale; }
  // Discrete Laplace: D / T, the pure-DP epsilon (= max privacy loss) of one release (CKS 2020).
  double DiscreteLaplaceEpsilon() const { return sensitivity / scale; }
  double GaussianNoiseMultiplier() const {
    return kind == EventKind::kGaussian ? sigma / sensitivity : noise_multiplier;
  }

  // Same mechanism (all parameters equal, count ignored).
  bool SameMechanism(const PrivacyEvent& other) const;

  std::string ToSpec() const;
};

// Parses the text form above. INVALID_ARGUMENT naming the unknown kind/key or the bad value.
absl::StatusOr<PrivacyEvent> ParsePrivacyEvent(absl::string_view spec);

}  // namespace dpq::dp::accounting

#endif  // DPQ_SERVER_DP_ACCOUNTING_PRIVACY_EVENT_H_
