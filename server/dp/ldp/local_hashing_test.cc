#include "server/dp/ldp/local_hashing.h"

#include <cmath>

#include "gtest/gtest.h"
#include "server/dp/testing/seeded_random.h"

namespace dpq::dp::ldp {
namespace {

// Vectors computed independently with Python's hashlib:
//   int.from_bytes(sha256(struct.pack('>QI', seed, v)).digest()[:8], 'big') % g
TEST(OlhHashTest, MatchesTheWireSpecification) {
  EXPECT_EQ(OlhHash(0, 0, 4294967295u), 3404967588u);
  EXPECT_EQ(OlhHash(0x0123456789abcdefULL, 7, 4294967295u), 1177935150u);
  EXPECT_EQ(OlhHash(~uint64_t{0}, 1023, 1000), 772u);
  EXPECT_EQ(OlhHash(42, 1, 4294967295u), 1404958452u);
  EXPECT_EQ(OlhHash(42, 1, 7), 4u);
}

TEST(OlhHashRangeTest, IsRoundedExpEpsilonPlusOneAtLeastTwo) {
  EXPECT_EQ(OlhHashRange(0.01), 2u);  // e^0.01 + 1 = 2.01
  EXPECT_EQ(OlhHashRange(1.0), 4u);   // e + 1 = 3.72
  EXPECT_EQ(OlhHashRange(2.0), 8u);   // e^2 + 1 = 8.39
  EXPECT_EQ(OlhHashRange(20.0), static_cast<uint32_t>(std::round(std::exp(20.0) + 1)));
}

TEST(OptimizedLocalHashingTest, ProbabilitiesFollowWangEtAl) {
  auto olh = OptimizedLocalHashing::Create(2.0, 10);
  ASSERT_TRUE(olh.ok());
  const double e = std::exp(2.0);
  EXPECT_EQ(olh->hash_range(), 8u);
  EXPECT_NEAR(olh->protocol().p, e / (e + 7), 1e-12);
  EXPECT_NEAR(olh->protocol().q, 1.0 / 8, 1e-15);
}

TEST(OptimizedLocalHashingTest, RejectsBadParametersNamingThem) {
  EXPECT_NE(OptimizedLocalHashing::Create(0, 3).status().message().find("epsilon"),
            absl::string_view::npos);
  EXPECT_NE(OptimizedLocalHashing::Create(21, 3).status().message().find("epsilon"),
            absl::string_view::npos);
  EXPECT_NE(OptimizedLocalHashing::Create(1, 1).status().message().find("domain_size"),
            absl::string_view::npos);
  auto olh = OptimizedLocalHashing::Create(1, 3);
  ASSERT_TRUE(olh.ok());
  SeededRandom rng(1);
  EXPECT_EQ(olh->Randomize(3, rng).status().code(), absl::StatusCode::kInvalidArgument);
}

// OLH keeps the true hash with p' = e^eps / (e^eps + g - 1), about 1/2 for every epsilon (g - 1 is
// about e^eps); the sampler needs at most 2 expected rounds even where g is 4.8e8.
TEST(OptimizedLocalHashingTest, HugeEpsilonIsCheapAndKeepsAboutHalf) {
  auto olh = OptimizedLocalHashing::Create(20, 50);
  ASSERT_TRUE(olh.ok());
  EXPECT_NEAR(olh->protocol().p, 0.5, 1e-6);
  SeededRandom rng(3);
  int kept = 0;
  for (int i = 0; i < 400; ++i) {
    auto report = olh->Randomize(17, rng);
    ASSERT_TRUE(report.ok());
    ASSERT_LT(report->hashed, olh->hash_range());
    kept += olh->Supports(*report, 17) ? 1 : 0;
  }
  EXPECT_NEAR(kept, 200, 50);  // Binomial(400, 1/2): 5 sd = 50
}

// P(report supports the true value) must be p' on both sides of the sampler's switch: eps = 1
// (g - 1 = 3 > e: keeping is thinned) and eps = 2 (g - 1 = 7 < e^2: switching is thinned), and
// another value must be supported with probability 1/g. Over N = 40000 reports the count is
// Binomial(N, p); 5 sd = 5 sqrt(N p (1-p)) <= 500 bounds a false alarm at 6e-7.
TEST(OptimizedLocalHashingTest, SupportFrequenciesAreWangEtAlsPAndQ) {
  for (double eps : {1.0, 2.0, 0.3}) {
    auto olh = OptimizedLocalHashing::Create(eps, 5);
    ASSERT_TRUE(olh.ok());
    SeededRandom rng(static_cast<uint64_t>(eps * 100));
    constexpr int kN = 40000;
    int own = 0, other = 0;
    for (int i = 0; i < kN; ++i) {
      auto r = olh->Randomize(2, rng);
      ASSERT_TRUE(r.ok());
      ASSERT_LT(r->hashed, olh->hash_range());
      own += olh->Supports(*r, 2) ? 1 : 0;
      other += olh->Supports(*r, 4) ? 1 : 0;
    }
    const double p = olh->protocol().p, q = olh->protocol().q;
    EXPECT_NEAR(own, kN * p, 5 * std::sqrt(kN * p * (1 - p))) << "eps " << eps;
    EXPECT_NEAR(other, kN * q, 5 * std::sqrt(kN * q * (1 - q))) << "eps " << eps;
  }
}

}  // namespace
}  // namespace dpq::dp::ldp
