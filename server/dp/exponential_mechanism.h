// Exponential mechanism (McSherry & Talwar 2007): selects candidate r with probability
// proportional to exp(epsilon * u(r) / (2 * Delta_u)).
//
// Sampled in "log space" without any exp(): pick r uniformly, accept it with probability
// exp(-epsilon * (u_max - u(r)) / (2 Delta_u)) through the exact Bernoulli(exp(-x)) sampler
// (Canonne, Kamath, Steinke 2020, Alg. 1), otherwise retry. Accepted r has probability
// ∝ exp(epsilon u(r) / (2 Delta_u)) exactly; the exponent is shifted by u_max so it is always in
// [0, inf) and nothing overflows for any finite utilities and epsilon. Expected rounds <= n (the
// best candidate is always accepted), each O(1) expected random words.
// Floating-point caveat: the exponent x is computed in double (relative error ~2^-52); the draw is
// exact for that x. Exponents above 2^62 (probability ratio < exp(-2^62)) are treated as rejection.
#ifndef DPQ_SERVER_DP_EXPONENTIAL_MECHANISM_H_
#define DPQ_SERVER_DP_EXPONENTIAL_MECHANISM_H_

#include <cstddef>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "server/dp/random_source.h"

namespace dpq::dp {

class ExponentialMechanism {
 public:
  // INVALID_ARGUMENT naming "epsilon" or "utility_sensitivity" (finite, > 0).
  static absl::StatusOr<ExponentialMechanism> Create(double epsilon, double utility_sensitivity);

  // Index of the selected candidate. INVALID_ARGUMENT naming "utilities" if empty or any utility
  // is NaN/inf.
  absl::StatusOr<size_t> Select(absl::Span<const double> utilities, RandomSource& rng) const;

  double epsilon() const { return epsilon_; }
  double utility_sensitivity() const { return sensitivity_; }

 private:
  ExponentialMechanism(double epsilon, double sensitivity)
      : epsilon_(epsilon), sensitivity_(sensitivity) {}
  double epsilon_;
  double sensitivity_;
};

}  // namespace dpq::dp

#endif  // DPQ_SERVER_DP_EXPONENTIAL_MECHANISM_H_
