// Laplace mechanism on a grid; contract in additive_mechanism.h.
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"
#include "server/dp/additive_mechanism.h"
#include "server/dp/discrete_laplace.h"
#include "server/dp/grid.h"
#include "server/dp/noise_quantiles.h"

namespace dpq::dp {
namespace {

constexpr double kMaxIntegerScale = 0x1p42;

class LaplaceMechanism final : public AdditiveMechanism {
 public:
  LaplaceMechanism(double epsilon, double sensitivity, double steps, double gamma,
                   double integer_scale, DiscreteLaplaceSampler sampler)
      : epsilon_(epsilon),
        sensitivity_(sensitivity),
        steps_(steps),
        gamma_(gamma),
        integer_scale_(integer_scale),
        sampler_(sampler) {}

  absl::StatusOr<double> AddNoise(double true_value, RandomSource& rng) const override {
    ASSIGN_OR_RETURN(const int64_t k, internal::SnapToGrid(true_value, gamma_));
    return internal::FromGrid(k, sampler_.Sample(rng), gamma_);
  }
  double noise_scale() const override { return integer_scale_ * gamma_; }
  double epsilon() const override { return epsilon_; }
  double delta() const override { return 0; }
  double sensitivity() const override { return sensitivity_; }
  double granularity() const override { return gamma_; }
  // (Delta/gamma + m) gamma, gamma a power of two.
  double privacy_sensitivity() const override { return steps_ * gamma_; }
  absl::StatusOr<double> ConfidenceHalfWidth(double confidence) const override {
    ASSIGN_OR_RETURN(const int64_t m, DiscreteLaplaceHalfWidth(integer_scale_, confidence));
    return static_cast<double>(m) * gamma_;
  }
  absl::string_view name() const override { return "laplace"; }

 private:
  double epsilon_;
  double sensitivity_;
  double steps_;  // Delta/gamma + changed coordinates, rounded up: the shift in grid steps
  double gamma_;
  double integer_scale_;  // b / gamma, exactly the sampler's rational scale
  DiscreteLaplaceSampler sampler_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<AdditiveMechanism>> CreateLaplaceMechanism(
    double epsilon, double l1_sensitivity, int64_t changed_coordinates) {
  RETURN_IF_ERROR(ValidateIsPositive(epsilon, "epsilon"));
  RETURN_IF_ERROR(ValidateIsPositive(l1_sensitivity, "l1_sensitivity"));
  RETURN_IF_ERROR(internal::ValidateChangedCoordinates(changed_coordinates));
  ASSIGN_OR_RETURN(const double gamma,
                   internal::ChooseGranularity(l1_sensitivity, l1_sensitivity / epsilon));
  // In grid units neighbours differ by at most Delta/gamma + m in L1 (rounding adds at most one
  // step to each of the m coordinates a unit changes); discrete Laplace noise with scale t on each
  // coordinate is (shift/t)-DP (CKS 2020, Sec. 2; the L1 argument of Dwork et al. 2006), so
  // t = (Delta/gamma + m)/epsilon, rounded up. The sum is rounded up if it is not exact.
  const double base_steps = l1_sensitivity / gamma;
  double steps = base_steps + static_cast<double>(changed_coordinates);
  if (steps - static_cast<double>(changed_coordinates) < base_steps) {
    steps = std::nextafter(steps, std::numeric_limits<double>::infinity());
  }
  const double scale_in_steps = internal::DivideRoundingUp(steps, epsilon);
  if (!(scale_in_steps <= kMaxIntegerScale)) {
    return absl::OutOfRangeError(
        absl::StrCat("epsilon ", epsilon, " is too small for the Laplace release grid"));
  }
  ASSIGN_OR_RETURN(DiscreteLaplaceSampler sampler, DiscreteLaplaceSampler::Create(scale_in_steps));
  const double exact_scale =
      static_cast<double>(sampler.scale().num) / static_cast<double>(sampler.scale().den);
  return std::unique_ptr<AdditiveMechanism>(
      new LaplaceMechanism(epsilon, l1_sensitivity, steps, gamma, exact_scale, sampler));
}

}  // namespace dpq::dp
