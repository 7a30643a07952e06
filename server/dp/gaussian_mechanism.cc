// Gaussian mechanism on a grid; contract in additive_mechanism.h.
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"
#include "server/dp/additive_mechanism.h"
#include "server/dp/analytic_gaussian.h"
#include "server/dp/discrete_gaussian.h"
#include "server/dp/discrete_gaussian_privacy.h"
#include "server/dp/grid.h"
#include "server/dp/noise_quantiles.h"
#include "server/dp/zcdp_conversion.h"

namespace dpq::dp {
namespace {

constexpr double kMaxIntegerSigma = 0x1p42;

// The released noise is the sampler's discrete Gaussian conditioned on |Z| < min(2^62,
// ~2^32 sigma) (discrete_gaussian.h, geometric.h): a removed mass tau <= exp(-2^39) for
// sigma <= 2^42. Conditioning both neighbours on the same symmetric set changes the hockey-stick
// divergence to at most (delta_exact + tau) / (1 - tau), so certifying delta_exact <= delta (1 - 2^-40)
// covers it: tau is far below 2^-40 times the smallest positive double. (More precisely the bound
// is (delta_exact + e^eps tau) / (1 - tau), by writing the untruncated law as the mixture
// (1 - tau) truncated + tau rest; e^eps tau is just as negligible for any epsilon below 2^38.)
// For a vector the coordinates one unit does not change have the same independent law under both
// neighbours and drop out of the divergence, so at most m <= 2^40 coordinates matter and the
// removed mass is at most m tau, equally negligible.
constexpr double kTruncationAllowance = 1 - 0x1p-40;

// Sensitivity in grid units. With k = round(x / gamma) (ties away from zero, grid.cc SnapToGrid;
// x / gamma is exact because gamma is a power of two, and an inexact subnormal quotient rounds to
// 0 exactly as the exact one would), |k - x/gamma| <= 1/2, so neighbours with |x - x'| <= Delta give
// |k - k'| <= Delta/gamma + 1, and k - k' is an integer: |k - k'| <= floor(Delta/gamma) + 1 = D.
// The bound is attained (x/gamma = n + 1/2 > 0 rounds up, x'/gamma = -(m + 1/2) rounds down), so
// it cannot be improved to ceil(Delta/gamma) when Delta/gamma is an integer.
absl::StatusOr<int64_t> GridSensitivity(double sensitivity, double gamma) {
  const double ratio = std::floor(sensitivity / gamma);  // exact quotient, exact floor
  if (!(ratio < 0x1p50)) {
    return absl::InternalError(absl::StrCat("grid sensitivity ", ratio, " is out of range"));
  }
  return static_cast<int64_t>(ratio) + 1;
}

// L2 sensitivity in grid units of a vector of which one unit changes at most m coordinates. Per
// coordinate k_i - k'_i = (x_i - x'_i)/gamma + (e_i - e'_i) with rounding errors |e_i|, |e'_i| <=
// 1/2 (as above), and e_i = e'_i where x_i = x'_i; by Minkowski ||k - k'||_2 <= Delta/gamma +
// ||e - e'||_2 <= Delta/gamma + sqrt(m). Delta/gamma is exact (gamma a power of two, quotient
// < 2^22), sqrt is correctly rounded and raised to >= sqrt(m), and the sum is rounded up.
double VectorGridSensitivity(double sensitivity, double gamma, int64_t changed_coordinates) {
  const double m = static_cast<double>(changed_coordinates);  // exact: m <= 2^40
  double root = std::sqrt(m);
  // fma gives the sign of the exact root^2 - m.
  if (std::fma(root, root, -m) < 0) {
    root = std::nextafter(root, std::numeric_limits<double>::infinity());
  }
  return internal::AddRoundingUp(sensitivity / gamma, root);
}

// Grid sensitivity and sigma, both in grid steps.
struct Calibration {
  double grid_sensitivity;
  double sigma_in_steps;
};

// Scalar (m = 1): continuous analytic calibration (Balle & Wang 2018) for the integer grid
// sensitivity D (D gamma <= Delta + gamma), certified and if needed raised so that the discrete
// mechanism's exact delta (CKS 2020 Thm 7, DiscreteGaussianDelta) is <= delta (1 - 2^-40).
absl::StatusOr<Calibration> CalibrateScalar(double epsilon, double delta, double sensitivity,
                                            double gamma) {
  ASSIGN_OR_RETURN(const int64_t grid_sensitivity, GridSensitivity(sensitivity, gamma));
  ASSIGN_OR_RETURN(const double sigma,
                   DiscreteGaussianSigma(epsilon, delta * kTruncationAllowance, grid_sensitivity));
  return Calibration{static_cast<double>(grid_sensitivity), sigma};  // D < 2^51: exact
}

// Vector (m > 1): no exact multivariate profile is computed; the vector discrete Gaussian is
// Dg^2/(2 s^2)-zCDP (CKS 2020, Thm 14) and ZcdpGaussianSigma finds the smallest s whose rho
// converts (CKS 2020, Cor. 13) to epsilon at delta (1 - 2^-40).
absl::StatusOr<Calibration> CalibrateVector(double epsilon, double delta, double sensitivity,
                                            double gamma, int64_t changed_coordinates) {
  const double grid_sensitivity = VectorGridSensitivity(sensitivity, gamma, changed_coordinates);
  ASSIGN_OR_RETURN(const double sigma,
                   ZcdpGaussianSigma(epsilon, delta * kTruncationAllowance, grid_sensitivity));
  return Calibration{grid_sensitivity, sigma};
}

class GaussianMechanism final : public AdditiveMechanism {
 public:
  GaussianMechanism(double epsilon, double delta, double sensitivity, double gamma,
                    double grid_sensitivity, double integer_sigma, DiscreteGaussianSampler sampler)
      : epsilon_(epsilon),
        delta_(delta),
        sensitivity_(sensitivity),
        gamma_(gamma),
        grid_sensitivity_(grid_sensitivity),
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
  double privacy_sensitivity() const override {
    return grid_sensitivity_ * gamma_;  // gamma a power of two: exact
  }
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
  double grid_sensitivity_;  // D (scalar, an integer) or Dg (vector), in grid steps
  double integer_sigma_;     // sigma / gamma, exactly the sampler's rational sigma
  DiscreteGaussianSampler sampler_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<AdditiveMechanism>> CreateGaussianMechanism(
    double epsilon, double delta, double l2_sensitivity, int64_t changed_coordinates) {
  RETURN_IF_ERROR(ValidateIsPositive(epsilon, "epsilon"));
  RETURN_IF_ERROR(ValidateInOpenRange(delta, 0.0, 1.0, "delta"));
  RETURN_IF_ERROR(ValidateIsPositive(l2_sensitivity, "l2_sensitivity"));
  RETURN_IF_ERROR(internal::ValidateChangedCoordinates(changed_coordinates));
  // The grid comes from the nominal (continuous, Balle & Wang 2018) sigma for Delta in both cases,
  // so a vector release uses the same grid as a scalar one with the same parameters.
  ASSIGN_OR_RETURN(const double nominal_sigma,
                   AnalyticGaussianSigma(epsilon, delta, l2_sensitivity));
  ASSIGN_OR_RETURN(const double gamma, internal::ChooseGranularity(l2_sensitivity, nominal_sigma));
  const bool scalar = changed_coordinates == 1;
  auto calibration_or =
      scalar ? CalibrateScalar(epsilon, delta, l2_sensitivity, gamma)
             : CalibrateVector(epsilon, delta, l2_sensitivity, gamma, changed_coordinates);
  if (!calibration_or.ok() || !(calibration_or->sigma_in_steps <= kMaxIntegerSigma)) {
    if (!calibration_or.ok() && calibration_or.status().code() != absl::StatusCode::kOutOfRange) {
      return calibration_or.status();
    }
    return absl::OutOfRangeError(
        absl::StrCat("epsilon ", epsilon, " is too small for the Gaussian release grid"));
  }
  const Calibration calibration = *calibration_or;
  const double sigma_in_steps = calibration.sigma_in_steps;
  ASSIGN_OR_RETURN(DiscreteGaussianSampler sampler,
                   DiscreteGaussianSampler::Create(sigma_in_steps));
  // The certificate is for sigma_in_steps itself: the sampler must use exactly that value (it does
  // for every double in [2^-9, 2^62], whose exact fraction has a power-of-two denominator <= 2^62).
  const long double num = static_cast<long double>(sampler.sigma().num);
  const long double den = static_cast<long double>(sampler.sigma().den);
  if (num != static_cast<long double>(sigma_in_steps) * den) {
    return absl::InternalError(
        absl::StrCat("sampler sigma differs from the certified sigma ", sigma_in_steps));
  }
  // Vector: re-check the released parameters directly with the conversion (the scalar sigma is
  // checked directly inside DiscreteGaussianSigma).
  if (!scalar &&
      !(ZcdpEpsilonCks(GaussianRhoRoundedUp(calibration.grid_sensitivity, sigma_in_steps),
                       delta * kTruncationAllowance) <= epsilon)) {
    return absl::InternalError(
        absl::StrCat("the zCDP certificate fails for sigma ", sigma_in_steps, " grid steps"));
  }
  return std::unique_ptr<AdditiveMechanism>(
      new GaussianMechanism(epsilon, delta, l2_sensitivity, gamma, calibration.grid_sensitivity,
                            sigma_in_steps, sampler));
}

}  // namespace dpq::dp
