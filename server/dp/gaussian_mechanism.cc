// Gaussian mechanism on a grid; contract in additive_mechanism.h.
#include <cmath>
#include <limits>
#include <memory>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"
#include "server/dp/additive_mechanism.h"
#include "server/dp/analytic_gaussian.h"
#include "server/dp/discrete_gaussian.h"
#include "server/dp/grid.h"
#include "server/dp/noise_quantiles.h"

namespace dpq::dp {
namespace {

constexpr double kMaxIntegerSigma = 0x1p42;

// Relative sigma margin for using the continuous analytic calibration on the discrete Gaussian.
// CKS 2020 (Thm 7) gives the discrete Gaussian's exact delta; with sigma >= 2^20 grid steps (always
// the case here) it differs from the continuous delta only at second order in 1/sigma (midpoint rule
// around the optimal threshold), orders of magnitude below the delta reduction this margin buys.
constexpr double kDiscreteMargin = 1.0 + 0x1p-20;

class GaussianMechanism final : public AdditiveMechanism {
 public:
  GaussianMechanism(double epsilon, double delta, double sensitivity, double gamma,
                    double integer_sigma, DiscreteGaussianSampler sampler)
      : epsilon_(epsilon),
        delta_(delta),
        sensitivity_(sensitivity),
        gamma_(gamma),
        integer_sigma_(integer_sigma),
        sampler_(sampler) {}

  absl::StatusOr<double> AddNoise(double true_value, RandomSource& rng) const override {
    ASSIGN_OR_RETURN(const int64_t k, internal::SnapToGrid(true_value, gamma_));
    return internal::FromGrid(k, sampler_.Sample(rng), gamma_);
  }
  double noise_scale() const override { return integer_sigma_ * gamma_; }
  double epsilon() const override { return epsilon_; }
  double delta() const override { return delta_; }
  double sensitivity() const override { return sensitivity_; }
  double granularity() const override { return gamma_; }
  absl::StatusOr<double> ConfidenceHalfWidth(double confidence) const override {
    ASSIGN_OR_RETURN(const int64_t m, DiscreteGaussianHalfWidth(integer_sigma_, confidence));
    return static_cast<double>(m) * gamma_;
  }
  absl::string_view name() const override { return "gaussian"; }

 private:
  double epsilon_;
  double delta_;
  double sensitivity_;
  double gamma_;
  double integer_sigma_;  // sigma / gamma, exactly the sampler's rational sigma
  DiscreteGaussianSampler sampler_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<AdditiveMechanism>> CreateGaussianMechanism(double epsilon,
                                                                           double delta,
                                                                           double l2_sensitivity) {
  RETURN_IF_ERROR(ValidateIsPositive(epsilon, "epsilon"));
  RETURN_IF_ERROR(ValidateInOpenRange(delta, 0.0, 1.0, "delta"));
  RETURN_IF_ERROR(ValidateIsPositive(l2_sensitivity, "l2_sensitivity"));
  ASSIGN_OR_RETURN(const double nominal_sigma,
                   AnalyticGaussianSigma(epsilon, delta, l2_sensitivity));
  ASSIGN_OR_RETURN(const double gamma, internal::ChooseGranularity(l2_sensitivity, nominal_sigma));
  // Calibrate for the grid-rounded sensitivity Delta + gamma (one extra step between neighbours).
  const double rounded_sensitivity = internal::AddRoundingUp(l2_sensitivity, gamma);
  ASSIGN_OR_RETURN(const double sigma,
                   AnalyticGaussianSigma(epsilon, delta, rounded_sensitivity));
  // Dividing by a power of two is exact; the margin product is rounded up.
  const double sigma_in_steps =
      std::nextafter(sigma * kDiscreteMargin / gamma, std::numeric_limits<double>::infinity());
  if (!(sigma_in_steps <= kMaxIntegerSigma)) {
    return absl::OutOfRangeError(
        absl::StrCat("epsilon ", epsilon, " is too small for the Gaussian release grid"));
  }
  ASSIGN_OR_RETURN(DiscreteGaussianSampler sampler, DiscreteGaussianSampler::Create(sigma_in_steps));
  const double exact_sigma =
      static_cast<double>(sampler.sigma().num) / static_cast<double>(sampler.sigma().den);
  return std::unique_ptr<AdditiveMechanism>(
      new GaussianMechanism(epsilon, delta, l2_sensitivity, gamma, exact_sigma, sampler));
}

}  // namespace dpq::dp
