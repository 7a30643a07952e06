#include "server/dp/exponential_mechanism.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"
#include "server/dp/bernoulli_exp.h"
#include "server/dp/exact_rational.h"
#include "server/dp/uniform_int.h"

namespace dpq::dp {

absl::StatusOr<ExponentialMechanism> ExponentialMechanism::Create(double epsilon,
                                                                  double utility_sensitivity) {
  RETURN_IF_ERROR(ValidateIsPositive(epsilon, "epsilon"));
  RETURN_IF_ERROR(ValidateIsPositive(utility_sensitivity, "utility_sensitivity"));
  return ExponentialMechanism(epsilon, utility_sensitivity);
}

absl::StatusOr<size_t> ExponentialMechanism::Select(absl::Span<const double> utilities,
                                                    RandomSource& rng) const {
  if (utilities.empty()) {
    return absl::InvalidArgumentError("utilities must not be empty (no candidates)");
  }
  double best = utilities[0];
  for (size_t i = 0; i < utilities.size(); ++i) {
    if (!std::isfinite(utilities[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("utilities[", i, "] must be finite, got ", utilities[i]));
    }
    best = std::fmax(best, utilities[i]);
  }
  // epsilon / (2 Delta_u): McSherry & Talwar 2007.
  const double rate = epsilon_ / (2 * sensitivity_);
  while (true) {
    const size_t candidate = UniformBelow(utilities.size(), rng);
    // best - u >= 0 in floating point too (rounding is monotone), so x >= 0 and never overflows
    // to a negative exponent.
    const double x = (best - utilities[candidate]) * rate;
    if (x == 0) return candidate;
    if (!(x < 0x1p62)) continue;  // acceptance probability < exp(-2^62)
    ASSIGN_OR_RETURN(const Rational exponent, RationalAtLeast(x, "exponent"));
    if (BernoulliExpNeg(exponent.num, exponent.den, rng)) return candidate;
  }
}

}  // namespace dpq::dp
