#include "server/dp/accounting/advanced.h"

#include <algorithm>
#include <cmath>

namespace dpq::dp::accounting {

void AdvancedSums::Add(double eps, double delta, int64_t count) {
  const double k = static_cast<double>(count);
  sum_eps += k * eps;
  sum_eps_sq += k * eps * eps;
  sum_eps_tanh += k * eps * std::tanh(eps / 2);
  sum_delta += k * delta;
}

double KairouzEpsilon(const AdvancedSums& s, double delta_prime) {
  const double a =
      s.sum_eps_tanh +
      std::sqrt(2 * s.sum_eps_sq * std::log(std::exp(1.0) + std::sqrt(s.sum_eps_sq) / delta_prime));
  const double b = s.sum_eps_tanh + std::sqrt(2 * s.sum_eps_sq * std::log(1 / delta_prime));
  return std::min({s.sum_eps, a, b});
}

double KairouzHomogeneousEpsilon(double eps0, int64_t k, double delta_prime) {
  AdvancedSums s;
  s.Add(eps0, 0, k);
  return KairouzEpsilon(s, delta_prime);
}

double FilterEpsilon(const AdvancedSums& s, double delta_prime) {
  return std::sqrt(2 * std::log(1 / delta_prime) * s.sum_eps_sq) + s.sum_eps_sq / 2;
}

}  // namespace dpq::dp::accounting
