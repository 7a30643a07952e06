#include "server/dp/ldp/local_hashing.h"

#include <openssl/evp.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"
#include "server/dp/bernoulli_exp.h"
#include "server/dp/uniform_int.h"

namespace dpq::dp::ldp {
namespace {

// SHA-256 through an algorithm fetched once and a digest context kept per thread: about 0.3 us per
// 12-byte message, against 1 us for the one-shot SHA256(), which fetches the algorithm on every
// call (OpenSSL 3). An estimate hashes every domain value of every OLH report.
void Sha256Into(const unsigned char* input, size_t size,
                unsigned char digest[SHA256_DIGEST_LENGTH]) {
  static EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  struct ContextFree {
    void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
  };
  thread_local std::unique_ptr<EVP_MD_CTX, ContextFree> context(EVP_MD_CTX_new());
  unsigned int length = 0;
  if (md != nullptr && context != nullptr && EVP_DigestInit_ex2(context.get(), md, nullptr) == 1 &&
      EVP_DigestUpdate(context.get(), input, size) == 1 &&
      EVP_DigestFinal_ex(context.get(), digest, &length) == 1) {
    return;
  }
  SHA256(input, size, digest);  // the slow path, should the cached objects be unavailable
}

}  // namespace

uint32_t OlhHashRange(double epsilon) {
  // Wang et al. 2017 Sec. 4.4; e^20 + 1 < 2^32, so the cast cannot overflow below kMaxLdpEpsilon.
  const double g = std::round(std::exp(std::min(epsilon, kMaxLdpEpsilon)) + 1);
  return static_cast<uint32_t>(std::max(2.0, g));
}

uint32_t OlhHash(uint64_t seed, uint32_t value, uint32_t g) {
  unsigned char input[12];
  for (int i = 0; i < 8; ++i) input[i] = static_cast<unsigned char>(seed >> (56 - 8 * i));
  for (int i = 0; i < 4; ++i) input[8 + i] = static_cast<unsigned char>(value >> (24 - 8 * i));
  unsigned char digest[SHA256_DIGEST_LENGTH];
  Sha256Into(input, sizeof(input), digest);
  uint64_t head = 0;
  for (int i = 0; i < 8; ++i) head = (head << 8) | digest[i];
  return static_cast<uint32_t>(head % g);
}

// The perturbation y of h over [0, g) (Wang et al. 2017 Sec. 4.4: k-ary RR with p' = e^eps /
// (e^eps + g - 1)) is sampled as a two-point rejection sampler, not by proposing a uniform value
// (whose expected rounds, about g/2 = e^eps/2, explode for large epsilon): propose "keep h" or
// "switch" with probability 1/2 each and accept them with weights 1 and (g-1) e^-eps, i.e. thin
// the heavier side by exp(-|eps - ln(g-1)|) (Bernoulli(exp(-x)) exactly: Canonne, Kamath,
// Steinke 2020, Alg. 1). At most 2 expected rounds. ln is irrational, so the gap is widened by
// kGapSlack and rounded in the direction that lowers P(keep): the sampler's P(keep) is at most p'
// (never less private), below it by < 1e-11.
constexpr double kGapSlack = 1e-12;

absl::StatusOr<OptimizedLocalHashing> OptimizedLocalHashing::Create(double epsilon,
                                                                    int64_t domain_size) {
  RETURN_IF_ERROR(ValidateIsPositive(epsilon, "epsilon"));
  if (epsilon > kMaxLdpEpsilon) {
    return absl::InvalidArgumentError(
        absl::StrCat("epsilon must be at most ", kMaxLdpEpsilon, ", got ", epsilon));
  }
  if (domain_size < 2) {
    return absl::InvalidArgumentError(absl::StrCat("domain_size must be >= 2, got ", domain_size));
  }
  const uint32_t g = OlhHashRange(epsilon);
  const double d = epsilon - std::log(static_cast<double>(g - 1));
  // d >= 0: switching weighs (g-1) e^-eps = exp(-d) <= 1; thin it by a gap rounded down.
  // d < 0: keeping weighs e^eps / (g-1) = exp(d) relative to switching; thin it by a gap rounded up.
  const bool thin_keep = d < 0;
  Rational gap{0, 1};
  if (thin_keep) {
    ASSIGN_OR_RETURN(gap, RationalAtLeast(-d + kGapSlack, "epsilon"));
  } else if (d - kGapSlack >= 1e-15) {
    ASSIGN_OR_RETURN(gap, RationalAtMost(d - kGapSlack, "epsilon"));
  }
  return OptimizedLocalHashing(epsilon, g, domain_size, thin_keep, gap);
}

absl::StatusOr<OlhReport> OptimizedLocalHashing::Randomize(int64_t value, RandomSource& rng) const {
  if (value < 0 || value >= k_) {
    return absl::InvalidArgumentError(absl::StrCat("value must be in [0, ", k_, "), got ", value));
  }
  OlhReport report;
  report.seed = rng.NextUint64();
  const uint32_t h = OlhHash(report.seed, static_cast<uint32_t>(value), g_);
  const auto accept_thinned = [&] {
    return gap_.num == 0 || BernoulliExpNeg(gap_.num, gap_.den, rng);
  };
  while (true) {
    const bool keep = UniformBit(rng);
    if (keep && (!thin_keep_ || accept_thinned())) {
      report.hashed = h;
      return report;
    }
    if (!keep && (thin_keep_ || accept_thinned())) {
      // A uniform value of [0, g) other than h.
      const uint32_t other = static_cast<uint32_t>(UniformBelow(g_ - 1, rng));
      report.hashed = other >= h ? other + 1 : other;
      return report;
    }
  }
}

PureProtocol OptimizedLocalHashing::protocol() const {
  // p = p' = e^eps / (e^eps + g - 1), q = 1/g (Wang et al. 2017, Sec. 4.4), with e^-eps for range.
  const double r = std::exp(-epsilon_);
  return PureProtocol{1 / (1 + static_cast<double>(g_ - 1) * r), 1.0 / static_cast<double>(g_)};
}

}  // namespace dpq::dp::ldp
