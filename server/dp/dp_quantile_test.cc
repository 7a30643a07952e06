#include "server/dp/dp_quantile.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
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

// Bucket i of B on [0, B) has midpoint i + 0.5.
const std::vector<int64_t> kCounts = {5, 10, 20, 30, 10, 5, 5, 5, 5, 5};  // n = 100

TEST(DpQuantileTest, HugeEpsilonFindsTheRightBuckets) {
  SeededRandom rng(1);
  // Ranks: below = 0, 5, 15, 35, 65, 75, 80, 85, 90, 95, 100.
  // q = 0.5 -> rank 50 in bucket 3; 0.1 -> 10 in bucket 1; 0.92 -> 92 in bucket 8;
  // 0 -> rank 0, only bucket 0 contains it; 1 -> rank 100, only bucket 9.
  const std::vector<double> qs = {0.5, 0.1, 0.92, 0.0, 1.0};
  for (int rep = 0; rep < 20; ++rep) {
    auto out = ReleaseQuantiles(kCounts, 0, 10, qs, 1e6, 1, rng);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(*out, (std::vector<double>{3.5, 1.5, 8.5, 0.5, 9.5}));
  }
}

TEST(DpQuantileTest, MedianOfSingleQuantileAtHugeEpsilonWithShiftedRange) {
  SeededRandom rng(2);
  auto out = ReleaseQuantiles(kCounts, -5, 15, std::vector<double>{0.5}, 1e6, 3, rng);
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(out->size(), 1u);
  EXPECT_DOUBLE_EQ((*out)[0], -5 + 2 * 3.5);  // width 2
}

TEST(DpQuantileTest, SeveralQuantilesComeOutMonotoneInTheLevel) {
  SeededRandom rng(3);
  const std::vector<int64_t> counts(50, 4);  // flat histogram: selections are noisy
  const std::vector<double> qs = {0.9, 0.1, 0.5, 0.5, 0.2, 0.75, 0.0, 1.0};
  for (int rep = 0; rep < 200; ++rep) {
    auto out = ReleaseQuantiles(counts, 0, 1, qs, 0.5, 2, rng);
    ASSERT_TRUE(out.ok());
    ASSERT_EQ(out->size(), qs.size());
    for (size_t a = 0; a < qs.size(); ++a) {
      EXPECT_GE((*out)[a], 0);
      EXPECT_LE((*out)[a], 1);
      for (size_t b = 0; b < qs.size(); ++b) {
        if (qs[a] < qs[b]) {
          EXPECT_LE((*out)[a], (*out)[b]) << rep;
        }
      }
    }
  }
}

TEST(DpQuantileTest, EmptyDataReleasesSomeMidpoint) {
  SeededRandom rng(4);
  const std::vector<int64_t> zeros(8, 0);
  auto out = ReleaseQuantiles(zeros, 0, 8, std::vector<double>{0.5}, 1, 1, rng);
  ASSERT_TRUE(out.ok());
  const double v = (*out)[0];
  EXPECT_EQ(v - std::floor(v), 0.5);
}

TEST(DpQuantileTest, RejectsBadParametersNamingThem) {
  SeededRandom rng(5);
  const std::vector<double> q = {0.5};
  const double nan = std::nan("");
  const double inf = std::numeric_limits<double>::infinity();
  auto call = [&](std::vector<int64_t> counts, double lo, double hi, std::vector<double> qs,
                  double eps,
                  int k) { return ReleaseQuantiles(counts, lo, hi, qs, eps, k, rng).status(); };
  EXPECT_TRUE(MentionsName(call({1}, 0, 1, q, 1, 1), "bucket_counts"));
  EXPECT_TRUE(MentionsName(call(std::vector<int64_t>(100001, 1), 0, 1, q, 1, 1), "bucket_counts"));
  EXPECT_TRUE(MentionsName(call({1, -1, 2}, 0, 1, q, 1, 1), "bucket_counts[1]"));
  EXPECT_TRUE(
      MentionsName(call({std::numeric_limits<int64_t>::max(), 1}, 0, 1, q, 1, 1), "bucket_counts"));
  EXPECT_TRUE(MentionsName(call({1, 2}, nan, 1, q, 1, 1), "lower"));
  EXPECT_TRUE(MentionsName(call({1, 2}, 0, inf, q, 1, 1), "upper"));
  EXPECT_TRUE(MentionsName(call({1, 2}, 1, 1, q, 1, 1), "lower must be < upper"));
  EXPECT_TRUE(MentionsName(call({1, 2}, 2, 1, q, 1, 1), "lower must be < upper"));
  EXPECT_TRUE(MentionsName(call({1, 2}, -1.7e308, 1.7e308, q, 1, 1), "upper - lower"));
  EXPECT_TRUE(MentionsName(call({1, 2}, 0, 1, {}, 1, 1), "quantiles"));
  EXPECT_TRUE(MentionsName(call({1, 2}, 0, 1, std::vector<double>(101, 0.5), 1, 1), "quantiles"));
  EXPECT_TRUE(MentionsName(call({1, 2}, 0, 1, {0.5, 1.5}, 1, 1), "quantiles[1]"));
  EXPECT_TRUE(MentionsName(call({1, 2}, 0, 1, {-0.1}, 1, 1), "quantiles[0]"));
  EXPECT_TRUE(MentionsName(call({1, 2}, 0, 1, {nan}, 1, 1), "quantiles[0]"));
  EXPECT_TRUE(MentionsName(call({1, 2}, 0, 1, q, 0, 1), "epsilon"));
  EXPECT_TRUE(MentionsName(call({1, 2}, 0, 1, q, inf, 1), "epsilon"));
  EXPECT_TRUE(MentionsName(call({1, 2}, 0, 1, q, 1, 0), "max_contributions"));
  // The limits themselves are accepted.
  EXPECT_TRUE(call({1, 2}, 0, 1, std::vector<double>(100, 0.5), 1, 1).ok());
  EXPECT_TRUE(call(std::vector<int64_t>(100000, 1), 0, 1, q, 1, 1).ok());
}

TEST(DpQuantileTest, UtilitySensitivityIsMaxOfQAndOneMinusQTimesK) {
  EXPECT_EQ(QuantileUtilitySensitivity(1, 0.5), 0.5);
  EXPECT_EQ(QuantileUtilitySensitivity(3, 0.5), 1.5);
  EXPECT_EQ(QuantileUtilitySensitivity(2, 0.0), 2.0);
  EXPECT_EQ(QuantileUtilitySensitivity(2, 1.0), 2.0);
  EXPECT_EQ(QuantileUtilitySensitivity(4, 0.25), 3.0);
  // Rounded up, never down.
  const double s = QuantileUtilitySensitivity(7, 0.9);
  EXPECT_GE(static_cast<long double>(s), static_cast<long double>(0.9) * 7);  // the double 0.9
  EXPECT_LE(s, std::nextafter(0.9 * 7, 10.0));
  EXPECT_TRUE(std::isnan(QuantileUtilitySensitivity(0, 0.5)));
  EXPECT_TRUE(std::isnan(QuantileUtilitySensitivity(1, 1.5)));
  EXPECT_TRUE(std::isnan(QuantileUtilitySensitivity(1, std::nan(""))));
}

// Brute-force check of the sensitivity proof in dp_quantile.h: random histograms, add one unit
// with k <= K rows in random buckets, compare u(i) = -dist(q n, [below_i, below_{i+1}]) before
// and after for every bucket. Exact arithmetic on these small integers (doubles are exact).
TEST(DpQuantileTest, UtilityChangesByAtMostTheSensitivityForNeighbours) {
  SeededRandom rng(6);
  auto uniform = [&](uint64_t n) { return static_cast<int64_t>(rng.NextUint64() % n); };
  auto utilities = [](const std::vector<int64_t>& c, double q) {
    int64_t n = 0;
    for (int64_t x : c) n += x;
    std::vector<double> u;
    int64_t below = 0;
    for (int64_t x : c) {
      const double t = q * n, lo = below, hi = below + x;
      u.push_back(-std::max({0.0, lo - t, t - hi}));
      below += x;
    }
    return u;
  };
  double worst_ratio = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const int buckets = 2 + uniform(8);
    const int k_max = 1 + uniform(4);
    const double q = static_cast<double>(uniform(17)) / 16;  // exact in binary
    std::vector<int64_t> c(buckets);
    for (auto& x : c) x = uniform(6);
    std::vector<int64_t> c2 = c;
    const int k = 1 + uniform(k_max);
    for (int r = 0; r < k; ++r) ++c2[uniform(buckets)];
    const auto u1 = utilities(c, q), u2 = utilities(c2, q);
    const double bound = QuantileUtilitySensitivity(k_max, q);
    for (int i = 0; i < buckets; ++i) {
      ASSERT_LE(std::fabs(u1[i] - u2[i]), bound) << "trial " << trial << " bucket " << i;
      worst_ratio = std::max(worst_ratio, std::fabs(u1[i] - u2[i]) / bound);
    }
  }
  EXPECT_EQ(worst_ratio, 1.0);  // the bound is attained, so it cannot be tightened
}

TEST(DpQuantileTest, RankErrorBoundFormulaAndValidation) {
  // 2 * 0.5 * (ln 100 + ln 20) / (1 / 2) for the median, K = 1, 2 quantiles, eps 1, 95%.
  auto e = RankErrorBound(100, 0.5, 2, 1.0, 1, 0.95);
  ASSERT_TRUE(e.ok());
  EXPECT_NEAR(*e, 2 * (std::log(100.0) + std::log(20.0)), 1e-12);
  EXPECT_TRUE(MentionsName(RankErrorBound(1, 0.5, 1, 1, 1, 0.9).status(), "num_buckets"));
  EXPECT_TRUE(MentionsName(RankErrorBound(10, 1.1, 1, 1, 1, 0.9).status(), "quantile"));
  EXPECT_TRUE(MentionsName(RankErrorBound(10, 0.5, 0, 1, 1, 0.9).status(), "num_quantiles"));
  EXPECT_TRUE(MentionsName(RankErrorBound(10, 0.5, 1, -1, 1, 0.9).status(), "epsilon"));
  EXPECT_TRUE(MentionsName(RankErrorBound(10, 0.5, 1, 1, 0, 0.9).status(), "max_contributions"));
  EXPECT_TRUE(MentionsName(RankErrorBound(10, 0.5, 1, 1, 1, 1.0).status(), "confidence"));
}

TEST(DpQuantileTest, LargeCountsAndManyBucketsRunQuickly) {
  SeededRandom rng(7);
  std::vector<int64_t> counts(100000);
  for (size_t i = 0; i < counts.size(); ++i) counts[i] = 1000000 + static_cast<int64_t>(i % 7);
  std::vector<double> qs;
  for (int j = 1; j <= 99; ++j) qs.push_back(j / 100.0);
  auto out = ReleaseQuantiles(counts, 0, 1e5, qs, 1.0, 5, rng);
  ASSERT_TRUE(out.ok());
  // Near-uniform data: the q-quantile is near 1e5 q; the rank error bound is ~ 2 * 5 * 99 *
  // (ln 1e5 + ln 1e6) ~ 2.5e4 rows, i.e. well under one bucket of 1e6 rows.
  for (size_t j = 0; j < qs.size(); ++j) EXPECT_NEAR((*out)[j], 1e5 * qs[j], 2.0) << qs[j];
}

}  // namespace
}  // namespace dpq::dp
