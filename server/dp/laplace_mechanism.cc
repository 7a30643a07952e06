// Laplace mechanism on a grid; contract in additive_mechanism.h.
#include <cmath>
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
  LaplaceMechanism(double epsilon, double sensitivity, double gamma, double integer_scale,
                   DiscreteLaplaceSampler sampler)
      : epsilon_(epsilon),
        sensitivity_(sensitivity),
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
  // (Delta/gamma + 1) gamma: Delta/gamma < 2^53 and gamma a power of two, so this is exact.
  double privacy_sensitivity() const override { return (sensitivity_ / gamma_ + 1) * gamma_; }
  absl::StatusOr<double> ConfidenceHalfWidth(double confidence) const override {
    ASSIGN_OR_RETURN(const int64_t m, DiscreteLaplaceHalfWidth(integer_scale_, confidence));
    return static_cast<double>(m) * gamma_;
  }
  absl::string_view name() const override { return "laplace"; }

 private:
  double epsilon_;
  double sensitivity_;
  double gamma_;
  double integer_scale_;  // b / gamma, exactly the sampler's rational scale
  DiscreteLaplaceSampler sampler_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<AdditiveMechanism>> CreateLaplaceMechanism(double epsilon,
                                                                          double l1_sensitivity) {
  RETURN_IF_ERROR(ValidateIsPositive(epsilon, "epsilon"));
  RETURN_IF_ERROR(ValidateIsPositive(l1_sensitivity, "l1_sensitivity"));
  ASSIGN_OR_RETURN(const double gamma,
                   internal::ChooseGranularity(l1_sensitivity, l1_sensitivity / epsilon));
  // In grid units neighbours differ by at most Delta/gamma + 1 (rounding adds one step); discrete
  // Laplace with scale t is (shift/t)-DP (CKS 2020, Sec. 2), so t = (Delta/gamma + 1)/epsilon,
  // rounded up. Delta/gamma < 2^53 so adding 1 is exact.
  const double scale_in_steps = internal::DivideRoundingUp(l1_sensitivity / gamma + 1, epsilon);
  if (!(scale_in_steps <= kMaxIntegerScale)) {
    return absl::OutOfRangeError(
        absl::StrCat("epsilon ", epsilon, " is too small for the Laplace release grid"));
  }
  ASSIGN_OR_RETURN(DiscreteLaplaceSampler sampler, DiscreteLaplaceSampler::Create(scale_in_steps));
  const double exact_scale =
      static_cast<double>(sampler.scale().num) / static_cast<double>(sampler.scale().den);
  return std::unique_ptr<AdditiveMechanism>(
      new LaplaceMechanism(epsilon, l1_sensitivity, gamma, exact_scale, sampler));
}

}  // namespace dpq::dp
