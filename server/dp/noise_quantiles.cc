#include "server/dp/noise_quantiles.h"

#include <cmath>

#include "server/base/status_macros.h"
#include "server/base/validation.h"

namespace dpq::dp {
namespace {

constexpr double kExactGaussianSigmaLimit = 4096;

double NormalUpperTail(double x) { return 0.5 * std::erfc(x / std::sqrt(2.0)); }

// Sum of exp(-z^2/(2 sigma^2)) over z in [from, to].
double GaussianKernelSum(int64_t from, int64_t to, double sigma) {
  double sum = 0;
  for (int64_t z = to; z >= from; --z) {  // small terms first for accuracy
    const double zd = static_cast<double>(z);
    sum += std::exp(-zd * zd / (2 * sigma * sigma));
  }
  return sum;
}

}  // namespace

double DiscreteLaplaceTail(int64_t m, double scale) {
  return 2 * std::exp(-static_cast<double>(m + 1) / scale) / (1 + std::exp(-1 / scale));
}

absl::StatusOr<int64_t> DiscreteLaplaceHalfWidth(double scale, double confidence) {
  RETURN_IF_ERROR(ValidateIsPositive(scale, "scale"));
  RETURN_IF_ERROR(ValidateInOpenRange(confidence, 0.0, 1.0, "confidence"));
  const double alpha = 1 - confidence;
  // Solve 2 e^(-(m+1)/b) / (1 + e^(-1/b)) <= alpha for m, then fix rounding by direct checks.
  const double guess = -scale * std::log(alpha * (1 + std::exp(-1 / scale)) / 2) - 1;
  int64_t m = guess <= 0 ? 0 : static_cast<int64_t>(std::ceil(guess));
  while (DiscreteLaplaceTail(m, scale) > alpha) ++m;
  while (m > 0 && DiscreteLaplaceTail(m - 1, scale) <= alpha) --m;
  return m;
}

double DiscreteGaussianTail(int64_t m, double sigma) {
  if (sigma <= kExactGaussianSigmaLimit) {
    const int64_t limit = static_cast<int64_t>(std::ceil(40 * sigma)) + 2;  // mass beyond: < e^-800
    if (m >= limit) return 0;
    const double total = 1 + 2 * GaussianKernelSum(1, limit, sigma);
    return 2 * GaussianKernelSum(m + 1, limit, sigma) / total;
  }
  return 2 * NormalUpperTail((static_cast<double>(m) + 0.5) / sigma);
}

absl::StatusOr<int64_t> DiscreteGaussianHalfWidth(double sigma, double confidence) {
  RETURN_IF_ERROR(ValidateIsPositive(sigma, "sigma"));
  RETURN_IF_ERROR(ValidateInOpenRange(confidence, 0.0, 1.0, "confidence"));
  const double alpha = 1 - confidence;
  const double z = NormalQuantile(1 - alpha / 2);
  int64_t m = static_cast<int64_t>(std::fmax(0.0, std::ceil(sigma * z - 0.5)));
  while (DiscreteGaussianTail(m, sigma) > alpha) ++m;
  while (m > 0 && DiscreteGaussianTail(m - 1, sigma) <= alpha) --m;
  if (sigma > kExactGaussianSigmaLimit) ++m;
  return m;
}

double NormalQuantile(double p) {
  double lo = -40, hi = 40;
  for (int i = 0; i < 200 && hi - lo > 1e-13; ++i) {
    const double mid = (lo + hi) / 2;
    if (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return hi;
}

}  // namespace dpq::dp
