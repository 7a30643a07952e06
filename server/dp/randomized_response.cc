#include "server/dp/randomized_response.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"
#include "server/dp/bernoulli_exp.h"
#include "server/dp/uniform_int.h"

namespace dpq::dp {
namespace {

absl::Status ValidateDomain(int64_t k) {
  if (k < 2) return absl::InvalidArgumentError(absl::StrCat("domain_size must be >= 2, got ", k));
  return absl::OkStatus();
}

absl::Status ValidateValue(int64_t value, int64_t k) {
  if (value < 0 || value >= k) {
    return absl::InvalidArgumentError(absl::StrCat("value must be in [0, ", k, "), got ", value));
  }
  return absl::OkStatus();
}

// Bernoulli(1 / (e^eps + 1)) = Bernoulli(e^-eps / (1 + e^-eps)): propose 0 or 1 fairly, accept 0
// always and 1 with probability e^-eps.
bool BernoulliOneOverExpPlusOne(Rational eps, RandomSource& rng) {
  while (true) {
    if (!UniformBit(rng)) return false;
    if (BernoulliExpNeg(eps.num, eps.den, rng)) return true;
  }
}

}  // namespace

double PureProtocol::EstimateCount(double support, int64_t n) const {
  return (support - static_cast<double>(n) * q) / (p - q);  // Wang et al. 2017, Thm 2
}

double PureProtocol::EstimatorVariance(int64_t n, double true_count) const {
  const double nd = static_cast<double>(n);
  return nd * q * (1 - q) / ((p - q) * (p - q)) + true_count * (1 - p - q) / (p - q);
}

absl::StatusOr<KaryRandomizedResponse> KaryRandomizedResponse::Create(double epsilon,
                                                                      int64_t domain_size) {
  RETURN_IF_ERROR(ValidateIsPositive(epsilon, "epsilon"));
  RETURN_IF_ERROR(ValidateDomain(domain_size));
  ASSIGN_OR_RETURN(const Rational exact, RationalAtMost(epsilon, "epsilon"));
  return KaryRandomizedResponse(epsilon, exact, domain_size);
}

absl::StatusOr<int64_t> KaryRandomizedResponse::Randomize(int64_t value, RandomSource& rng) const {
  RETURN_IF_ERROR(ValidateValue(value, k_));
  while (true) {
    const int64_t proposal = static_cast<int64_t>(UniformBelow(static_cast<uint64_t>(k_), rng));
    if (proposal == value) return proposal;
    if (BernoulliExpNeg(exact_epsilon_.num, exact_epsilon_.den, rng)) return proposal;
  }
}

PureProtocol KaryRandomizedResponse::protocol() const {
  // p = e^eps/(e^eps + k - 1), q = 1/(e^eps + k - 1), written with e^-eps to avoid overflow.
  const double r = std::exp(-epsilon_);
  const double denom = 1 + static_cast<double>(k_ - 1) * r;
  return PureProtocol{1 / denom, r / denom};
}

absl::StatusOr<BinaryRandomizedResponse> BinaryRandomizedResponse::Create(double epsilon) {
  ASSIGN_OR_RETURN(KaryRandomizedResponse rr, KaryRandomizedResponse::Create(epsilon, 2));
  return BinaryRandomizedResponse(rr);
}

bool BinaryRandomizedResponse::Randomize(bool value, RandomSource& rng) const {
  return *rr_.Randomize(value ? 1 : 0, rng) == 1;  // value is always in {0, 1}
}

absl::StatusOr<OptimizedUnaryEncoding> OptimizedUnaryEncoding::Create(double epsilon,
                                                                      int64_t domain_size) {
  RETURN_IF_ERROR(ValidateIsPositive(epsilon, "epsilon"));
  RETURN_IF_ERROR(ValidateDomain(domain_size));
  ASSIGN_OR_RETURN(const Rational exact, RationalAtMost(epsilon, "epsilon"));
  return OptimizedUnaryEncoding(epsilon, exact, domain_size);
}

absl::StatusOr<std::vector<bool>> OptimizedUnaryEncoding::Randomize(int64_t value,
                                                                    RandomSource& rng) const {
  RETURN_IF_ERROR(ValidateValue(value, k_));
  std::vector<bool> bits(static_cast<size_t>(k_));
  for (int64_t j = 0; j < k_; ++j) {
    bits[j] = j == value ? UniformBit(rng) : BernoulliOneOverExpPlusOne(exact_epsilon_, rng);
  }
  return bits;
}

PureProtocol OptimizedUnaryEncoding::protocol() const {
  return PureProtocol{0.5, 1 / (std::exp(epsilon_) + 1)};  // Wang et al. 2017, Sec. 4.3
}

}  // namespace dpq::dp
