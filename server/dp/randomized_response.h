// Local-DP randomizers and their unbiased frequency estimators (Wang, Blocki, Li, Jha 2017,
// "Locally Differentially Private Protocols for Frequency Estimation", USENIX Security).
//
// Every protocol here is "pure" in the sense of Wang et al. (Sec. 4): a report supports the true
// value with probability p and any other value with probability q < p. Given n reports and
// I_v = number of reports supporting v, the unbiased count estimate is (I_v - n q) / (p - q)
// (Wang et al. Thm 2) with variance
//   n q (1 - q) / (p - q)^2 + c_v (1 - p - q) / (p - q)      (c_v = true count of v),
// derived from Var(I_v) = c_v p (1-p) + (n - c_v) q (1-q). Wang et al. Eq. (3) is the first term.
//
// All randomizers are exact: the biased coins are drawn by rejection from fair choices and
// Bernoulli(exp(-epsilon)) (Canonne, Kamath, Steinke 2020, Alg. 1); epsilon is rounded DOWN to a
// multiple of 2^-62 if it is not exactly representable (more noise, never less).
#ifndef DPQ_SERVER_DP_RANDOMIZED_RESPONSE_H_
#define DPQ_SERVER_DP_RANDOMIZED_RESPONSE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "server/dp/exact_rational.h"
#include "server/dp/random_source.h"

namespace dpq::dp {

// (p, q) of a pure LDP protocol plus the estimator of Wang et al. 2017.
struct PureProtocol {
  double p;  // P(report supports the true value)
  double q;  // P(report supports a given other value)

  // Unbiased estimate of the true count of v from `support` = I_v over n reports.
  double EstimateCount(double support, int64_t n) const;
  // Variance of EstimateCount for n reports when v's true count is true_count.
  double EstimatorVariance(int64_t n, double true_count) const;
};

// k-ary randomized response (Warner 1965 for k = 2; Wang et al. 2017 Sec. 4.1 "DE"): report the
// true value with p = e^eps / (e^eps + k - 1), each other value with q = 1 / (e^eps + k - 1).
// Sampled by rejection: propose a uniform value, accept it if it is the truth, else with
// probability e^-eps. Expected rounds k / (1 + (k-1) e^-eps) <= min(k, e^eps + 1).
class KaryRandomizedResponse {
 public:
  // INVALID_ARGUMENT naming "epsilon" (finite > 0) or "domain_size" (>= 2).
  static absl::StatusOr<KaryRandomizedResponse> Create(double epsilon, int64_t domain_size);
  // INVALID_ARGUMENT naming "value" unless 0 <= value < domain_size.
  absl::StatusOr<int64_t> Randomize(int64_t value, RandomSource& rng) const;
  PureProtocol protocol() const;
  int64_t domain_size() const { return k_; }

 private:
  KaryRandomizedResponse(double epsilon, Rational exact_epsilon, int64_t k)
      : epsilon_(epsilon), exact_epsilon_(exact_epsilon), k_(k) {}
  double epsilon_;
  Rational exact_epsilon_;
  int64_t k_;
};

// Binary randomized response: k-ary RR with k = 2, p = e^eps / (e^eps + 1).
class BinaryRandomizedResponse {
 public:
  static absl::StatusOr<BinaryRandomizedResponse> Create(double epsilon);
  bool Randomize(bool value, RandomSource& rng) const;
  PureProtocol protocol() const { return rr_.protocol(); }

 private:
  explicit BinaryRandomizedResponse(KaryRandomizedResponse rr) : rr_(rr) {}
  KaryRandomizedResponse rr_;
};

// Optimized unary encoding (Wang et al. 2017 Sec. 4.3): one-hot encode v in k bits, keep the true
// bit as 1 with p = 1/2, set each other bit to 1 with q = 1 / (e^eps + 1).
class OptimizedUnaryEncoding {
 public:
  static absl::StatusOr<OptimizedUnaryEncoding> Create(double epsilon, int64_t domain_size);
  absl::StatusOr<std::vector<bool>> Randomize(int64_t value, RandomSource& rng) const;
  PureProtocol protocol() const;
  int64_t domain_size() const { return k_; }

 private:
  OptimizedUnaryEncoding(double epsilon, Rational exact_epsilon, int64_t k)
      : epsilon_(epsilon), exact_epsilon_(exact_epsilon), k_(k) {}
  double epsilon_;
  Rational exact_epsilon_;
  int64_t k_;
};

}  // namespace dpq::dp

#endif  // DPQ_SERVER_DP_RANDOMIZED_RESPONSE_H_
