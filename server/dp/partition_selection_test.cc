#include "server/dp/partition_selection.h"

#include <cmath>
#include <cstdint>
#include <deque>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "server/dp/testing/seeded_random.h"

namespace dpq::dp {
namespace {

bool MentionsName(const absl::Status& s, absl::string_view name) {
  return s.code() == absl::StatusCode::kInvalidArgument &&
         s.message().find(name) != absl::string_view::npos;
}

// Replays a fixed list of words (then zeros): scripts the bits BernoulliLongDouble sees.
class ScriptedRandom final : public RandomSource {
 public:
  explicit ScriptedRandom(std::vector<uint64_t> words) : words_(words.begin(), words.end()) {}
  uint64_t NextUint64() override {
    ++used_;
    if (words_.empty()) return 0;
    const uint64_t w = words_.front();
    words_.pop_front();
    return w;
  }
  int used() const { return used_; }

 private:
  std::deque<uint64_t> words_;
  int used_ = 0;
};

TEST(PartitionSelectorTest, RejectsBadParametersNamingThem) {
  const double nan = std::nan("");
  const double inf = std::numeric_limits<double>::infinity();
  for (double eps : {0.0, -1.0, nan, inf}) {
    EXPECT_TRUE(MentionsName(PartitionSelector::Create(eps, 1e-5, 1).status(), "epsilon")) << eps;
  }
  for (double delta : {0.0, 1.0, -1e-5, 1.5, nan}) {
    EXPECT_TRUE(MentionsName(PartitionSelector::Create(1, delta, 1).status(), "delta")) << delta;
  }
  for (int m : {0, -3, 1000001}) {
    EXPECT_TRUE(MentionsName(PartitionSelector::Create(1, 1e-5, m).status(), "max_partitions"))
        << m;
  }
  // epsilon / max_partitions below 2^-30.
  EXPECT_TRUE(MentionsName(PartitionSelector::Create(1e-4, 1e-5, 1000000).status(), "epsilon"));
  EXPECT_TRUE(PartitionSelector::Create(1e-3, 1e-5, 1000000).ok());
  EXPECT_TRUE(PartitionSelector::Create(1, 1e-5, 1000000).ok());
}

TEST(PartitionSelectorTest, KeyWithOneContributorIsKeptWithProbabilityAtMostDeltaOverM) {
  for (int m : {1, 3, 100}) {
    for (double delta : {1e-12, 1e-5, 0.01}) {
      auto s = PartitionSelector::Create(1.0, delta, m);
      ASSERT_TRUE(s.ok());
      // pi(1) = delta_w = (delta / M)(1 - 2^-12): Thm 1 with the safety margin.
      EXPECT_LE(s->KeepProbability(1), delta / m);
      EXPECT_GE(s->KeepProbability(1), delta / m * (1 - 0x1p-11));
      EXPECT_EQ(s->KeepProbability(0), 0);
      EXPECT_EQ(s->KeepProbability(-5), 0);
      EXPECT_EQ(s->DropProbability(0), 1);
    }
  }
}

TEST(PartitionSelectorTest, NeverKeepsEmptyPartitionsAndAlwaysKeepsFullOnes) {
  auto s = PartitionSelector::Create(1.0, 1e-5, 1);
  ASSERT_TRUE(s.ok());
  SeededRandom rng(11);
  for (int i = 0; i < 1000; ++i) {
    EXPECT_FALSE(s->Keep(0, rng));
    EXPECT_FALSE(s->Keep(-1, rng));
    EXPECT_TRUE(s->Keep(1000, rng));
  }
}

TEST(PartitionSelectorTest, FrequentKeysAreKept) {
  auto s = PartitionSelector::Create(1.0, 1e-5, 1);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->KeepProbability(1000), 1.0);
  EXPECT_EQ(s->DropProbability(1000), 0.0);
  EXPECT_EQ(s->KeepProbability(std::numeric_limits<int64_t>::max()), 1.0);
  // n2 + 1 for (1, 1e-5): about 2 ln(1/delta) / eps ~ 23 units.
  EXPECT_GT(s->AlwaysKeptThreshold(), 10);
  EXPECT_LT(s->AlwaysKeptThreshold(), 40);
  // With the budget split over 10 partitions per unit, 1000 units is still essentially certain.
  auto s10 = PartitionSelector::Create(1.0, 1e-5, 10);
  ASSERT_TRUE(s10.ok());
  EXPECT_GT(s10->KeepProbability(1000), 1 - 1e-9);
}

// The four inequalities that make a one-bit release (eps', delta')-DP for neighbours n, n+1,
// checked on the realised probabilities with an extra 2^-50 relative margin (the doubles returned
// differ from the long doubles Keep() uses by <= 2^-53 relative).
void CheckDpConstraints(const PartitionSelector& s, int64_t from, int64_t to) {
  const long double e = std::exp(static_cast<long double>(s.partition_epsilon()));
  const long double d = s.partition_delta();
  const long double up = 1 + 0x1p-50L;
  long double keep = s.KeepProbability(from), drop = s.DropProbability(from);
  for (int64_t n = from; n < to; ++n) {
    const long double keep1 = s.KeepProbability(n + 1), drop1 = s.DropProbability(n + 1);
    ASSERT_LE(keep1 * up, e * keep + d) << "(A) at n = " << n;
    ASSERT_LE(drop * up, e * drop1 + d) << "(B) at n = " << n;
    // Monotone, hence the swapped inequalities hold too.
    ASSERT_LE(keep, keep1) << n;
    ASSERT_GE(drop, drop1) << n;
    ASSERT_NEAR(static_cast<double>(keep1 + drop1), 1.0, 1e-15) << n;
    keep = keep1;
    drop = drop1;
  }
}

TEST(PartitionSelectorTest, SatisfiesTheDpConstraintsOfTheoremOne) {
  int checked = 0;
  for (double eps : {1e-3, 0.01, 0.1, 1.0, 5.0, 30.0, 100.0}) {
    for (double delta : {1e-300, 1e-12, 1e-5, 0.3, 0.999}) {
      for (int m : {1, 7, 1000, 1000000}) {
        auto s = PartitionSelector::Create(eps, delta, m);
        if (!s.ok()) continue;  // eps / m < 2^-30
        ++checked;
        const int64_t full = s->AlwaysKeptThreshold();
        if (full <= 400000) {
          CheckDpConstraints(*s, 0, full + 2);
        } else {
          // Windows: the start, around the switch n1 (found from the 1/2 threshold region), the
          // end, and a coarse sweep for monotonicity.
          CheckDpConstraints(*s, 0, 20000);
          const int64_t mid = s->ThresholdForProbability(0.5);
          CheckDpConstraints(*s, std::max<int64_t>(0, mid - 20000), mid + 20000);
          CheckDpConstraints(*s, full - 20000, full + 2);
          double prev = 0;
          for (int64_t n = 0; n <= full; n += full / 1000) {
            ASSERT_GE(s->KeepProbability(n), prev);
            prev = s->KeepProbability(n);
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 100);
}

// Independent evaluation of Theorem 1's recursion for the working parameters (the documented
// margin eps_w = min(eps', 20)(1 - 2^-12), delta_w = delta'(1 - 2^-12)), tracking keep and drop
// probabilities separately so small drop probabilities keep their precision.
TEST(PartitionSelectorTest, MatchesTheRecursionOfTheoremOne) {
  for (double eps : {0.05, 0.5, 1.0, 3.0, 25.0}) {
    for (double delta : {1e-9, 1e-4, 0.2}) {
      for (int m : {1, 4}) {
        auto s = PartitionSelector::Create(eps, delta, m);
        ASSERT_TRUE(s.ok());
        const long double ew = std::min(eps / m, 20.0) * (1 - 0x1p-12L);
        const long double dw = (delta / m) * (1 - 0x1p-12L);
        const long double e = std::exp(ew);
        long double pi = 0, q = 1;
        for (int64_t n = 1; n <= s->AlwaysKeptThreshold() + 3; ++n) {
          const long double a = e * pi + dw;
          const long double b = 1 - (q - dw) / e;
          if (a <= b && a < 1) {
            pi = a;
            q = 1 - a;
          } else if (b < 1) {
            pi = b;
            q = (q - dw) / e;
          } else {
            pi = 1;
            q = 0;
          }
          ASSERT_NEAR(s->KeepProbability(n), static_cast<double>(pi), 1e-12 * pi + 1e-300)
              << "eps=" << eps << " delta=" << delta << " m=" << m << " n=" << n;
          // Drop probabilities: relative to q + delta_w (the cancellation scale; see the .cc).
          ASSERT_NEAR(s->DropProbability(n), static_cast<double>(q), 1e-10 * (q + dw))
              << "eps=" << eps << " delta=" << delta << " m=" << m << " n=" << n;
        }
        EXPECT_EQ(pi, 1);
      }
    }
  }
}

TEST(PartitionSelectorTest, ThresholdForProbabilityInvertsKeepProbability) {
  auto s = PartitionSelector::Create(0.5, 1e-6, 3);
  ASSERT_TRUE(s.ok());
  for (double p : {1e-7, 1e-3, 0.1, 0.5, 0.9, 0.999999, 1.0}) {
    const int64_t t = s->ThresholdForProbability(p);
    EXPECT_GE(s->KeepProbability(t), p) << p;
    EXPECT_LT(s->KeepProbability(t - 1), p) << p;
  }
  EXPECT_EQ(s->ThresholdForProbability(0), 0);
  EXPECT_EQ(s->ThresholdForProbability(-1), 0);
  EXPECT_EQ(s->ThresholdForProbability(1), s->AlwaysKeptThreshold());
  EXPECT_EQ(s->ThresholdForProbability(1.5), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(s->ThresholdForProbability(std::nan("")), std::numeric_limits<int64_t>::max());
}

TEST(PartitionSelectorTest, SplittingOverPartitionsRaisesTheThreshold) {
  auto one = PartitionSelector::Create(1.0, 1e-5, 1);
  auto ten = PartitionSelector::Create(1.0, 1e-5, 10);
  ASSERT_TRUE(one.ok() && ten.ok());
  EXPECT_DOUBLE_EQ(ten->partition_epsilon(), 0.1);
  EXPECT_DOUBLE_EQ(ten->partition_delta(), 1e-6);
  EXPECT_GT(ten->ThresholdForProbability(0.5), 5 * one->ThresholdForProbability(0.5));
}

TEST(BernoulliLongDoubleTest, ComparesWithTheExactBinaryExpansion) {
  using internal::BernoulliLongDouble;
  {
    ScriptedRandom r({});
    EXPECT_FALSE(BernoulliLongDouble(0, r));
    EXPECT_TRUE(BernoulliLongDouble(1, r));
    EXPECT_FALSE(BernoulliLongDouble(-1, r));
    EXPECT_FALSE(BernoulliLongDouble(std::nanl(""), r));
    EXPECT_EQ(r.used(), 0);
  }
  // p = 1/2: U < 1/2 iff the first bit is 0.
  {
    ScriptedRandom r({(uint64_t{1} << 63) - 1});
    EXPECT_TRUE(BernoulliLongDouble(0.5L, r));
  }
  {
    ScriptedRandom r({uint64_t{1} << 63});
    EXPECT_FALSE(BernoulliLongDouble(0.5L, r));
  }
  // p = 2^-70: bits 1..69 zero, bit 70 one. The first word must be 0, then the second word is
  // compared with 2^58 (bit 70 = 6th bit of the second word).
  const long double tiny = std::ldexp(1.0L, -70);
  {
    ScriptedRandom r({0, (uint64_t{1} << 58) - 1});
    EXPECT_TRUE(BernoulliLongDouble(tiny, r));
  }
  {
    ScriptedRandom r({0, uint64_t{1} << 58, 0});
    EXPECT_FALSE(BernoulliLongDouble(tiny, r));  // U >= p once all of p's bits are matched
  }
  {
    ScriptedRandom r({1});
    EXPECT_FALSE(BernoulliLongDouble(tiny, r));
    EXPECT_EQ(r.used(), 1);
  }
  // p = 1 - 2^-64 (the long double just below 1): false only if U's first 64 bits are all ones.
  const long double almost = std::nextafter(1.0L, 0.0L);
  {
    ScriptedRandom r({~uint64_t{0} - 1});
    EXPECT_TRUE(BernoulliLongDouble(almost, r));
  }
  {
    ScriptedRandom r({~uint64_t{0}});
    EXPECT_FALSE(BernoulliLongDouble(almost, r));
  }
  // Subnormal long double.
  {
    ScriptedRandom r({});
    EXPECT_TRUE(BernoulliLongDouble(std::numeric_limits<long double>::denorm_min(), r));
  }
}

}  // namespace
}  // namespace dpq::dp
