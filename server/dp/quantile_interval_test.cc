// QuantileBand: parameter checks, the band against the exact tail and the normal approximation,
// and the intervals' reading of a histogram (exact quantiles of known data).
#include "server/dp/quantile_interval.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/dp/noise_quantiles.h"

namespace dpq::dp {
namespace {

using ::testing::HasSubstr;

std::vector<double> Edges(int64_t b) {
  std::vector<double> e(b + 1);
  for (int64_t i = 0; i <= b; ++i) e[i] = static_cast<double>(i);
  return e;
}

// x_(max(1, ceil(q n))) of the data whose bucket i holds counts[i] values, all equal to i + 0.5
// (PostgreSQL's percentile_disc).
double ExactQuantile(const std::vector<double>& counts, double q) {
  double n = 0;
  for (double c : counts) n += c;
  const double rank = std::max(1.0, std::ceil(q * n));
  double seen = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    seen += counts[i];
    if (seen >= rank) return static_cast<double>(i) + 0.5;
  }
  return static_cast<double>(counts.size()) - 0.5;
}

TEST(QuantileBandTest, RejectsBadParametersNamingThem) {
  const std::vector<double> q = {0.5};
  EXPECT_THAT(QuantileBand::Create(1, q, 1, 1, 0.95).status().message(), HasSubstr("num_buckets"));
  EXPECT_THAT(QuantileBand::Create(100001, q, 1, 1, 0.95).status().message(),
              HasSubstr("num_buckets"));
  EXPECT_THAT(QuantileBand::Create(10, {}, 1, 1, 0.95).status().message(), HasSubstr("quantiles"));
  EXPECT_THAT(QuantileBand::Create(10, {1.5}, 1, 1, 0.95).status().message(),
              HasSubstr("quantiles"));
  EXPECT_THAT(QuantileBand::Create(10, {NAN}, 1, 1, 0.95).status().message(),
              HasSubstr("quantiles"));
  EXPECT_THAT(QuantileBand::Create(10, q, 0, 1, 0.95).status().message(), HasSubstr("noise_step"));
  EXPECT_THAT(QuantileBand::Create(10, q, 1, NAN, 0.95).status().message(),
              HasSubstr("noise_scale_steps"));
  EXPECT_THAT(QuantileBand::Create(10, q, 1, 1, 1.0).status().message(), HasSubstr("confidence"));
  auto band = QuantileBand::Create(10, q, 1, 1, 0.95);
  ASSERT_TRUE(band.ok());
  EXPECT_FALSE(band->Intervals(std::vector<double>(9, 1.0), Edges(10)).ok());
  std::vector<double> counts(10, 1.0);
  counts[3] = INFINITY;
  EXPECT_FALSE(band->Intervals(counts, Edges(10)).ok());
}

// Validity against the exact law: B = 3, q = 0.3, j = 1, so N = 0.7 G1 - 0.3 (G2 + G3) with G
// discrete Laplace of scale t = 2. P(|N| >= h) computed exactly by convolution (mass beyond
// |g| = 400 is < 1e-80) must be at most a = 0.05 / (1 level * 2 edges); and the Chernoff bound is
// not wildly loose: the exact tail at h is above a / 50.
TEST(QuantileBandTest, HalfWidthBoundsTheExactTailOfTheWeightedNoise) {
  const double t = 2, q = 0.3;
  auto band = QuantileBand::Create(3, {q}, 1.0, t, 0.95);
  ASSERT_TRUE(band.ok());
  const double h = band->HalfWidth(0, 1);
  const int kMax = 400;
  const double p = std::exp(-1 / t);
  std::vector<double> pmf(2 * kMax + 1);
  for (int g = -kMax; g <= kMax; ++g) pmf[g + kMax] = (1 - p) / (1 + p) * std::pow(p, std::abs(g));
  std::vector<double> pair(4 * kMax + 1, 0.0);  // G2 + G3
  for (int a = 0; a <= 2 * kMax; ++a) {
    for (int b = 0; b <= 2 * kMax; ++b) pair[a + b] += pmf[a] * pmf[b];
  }
  double tail = 0;
  for (int g1 = -kMax; g1 <= kMax; ++g1) {
    for (int s = -2 * kMax; s <= 2 * kMax; ++s) {
      if (std::fabs((1 - q) * g1 - q * s) >= h) tail += pmf[g1 + kMax] * pair[s + 2 * kMax];
    }
  }
  const double a = 0.05 / 2;
  EXPECT_LE(tail, a) << "h = " << h;
  EXPECT_GE(tail, a / 50) << "h = " << h;
}

// For many counts the weighted sum is close to normal (central limit theorem), so the exact
// quantile of |N| at a is close to z sd; a valid bound cannot be much below it, and the Chernoff
// bound with the exact MGF should be within 30 % above it. Var(G) = 2p / (1 - p)^2.
TEST(QuantileBandTest, HalfWidthIsCloseToTheNormalApproximationForManyBuckets) {
  const int64_t b = 1000;
  const double t = 10;
  for (double q : {0.5, 0.1, 0.9}) {
    auto band = QuantileBand::Create(b, {q}, 1.0, t, 0.95);
    ASSERT_TRUE(band.ok());
    const double p = std::exp(-1 / t);
    const double var_g = 2 * p / ((1 - p) * (1 - p));
    const double a = 0.05 / (b - 1);
    const double z = NormalQuantile(1 - a / 2);
    for (int64_t j : {int64_t{1}, int64_t{100}, int64_t{500}, int64_t{900}, b - 1}) {
      const double sd = std::sqrt(var_g * ((1 - q) * (1 - q) * static_cast<double>(j) +
                                           q * q * static_cast<double>(b - j)));
      const double ratio = band->HalfWidth(0, j) / (z * sd);
      EXPECT_GE(ratio, 0.99) << "q=" << q << " j=" << j;
      EXPECT_LE(ratio, 1.3) << "q=" << q << " j=" << j;
    }
  }
}

// A grid step above 1 rounds each count by up to gamma / 2: the band grows by that much per
// weighted count, on top of the noise term (which scales with gamma).
TEST(QuantileBandTest, CoarseGridAddsTheRoundingOfEveryCount) {
  auto fine = QuantileBand::Create(100, {0.5}, 1.0, 3, 0.95);
  auto coarse = QuantileBand::Create(100, {0.5}, 4.0, 3, 0.95);
  ASSERT_TRUE(fine.ok() && coarse.ok());
  const double rounding = 2.0 * (0.5 * 40 + 0.5 * 60) * (1 + 1e-6);
  EXPECT_NEAR(coarse->HalfWidth(0, 40), 4 * fine->HalfWidth(0, 40) + rounding, 1e-6);
}

// With almost no noise (t = 1e-3 steps: P(G != 0) ~ e^-1000) the intervals pin the bucket of the
// exact quantile: [its lower edge, its upper edge] whenever q n is not an integer.
TEST(QuantileBandTest, NearlyNoiselessHistogramPinsTheBucketOfTheExactQuantile) {
  std::vector<double> counts = {0, 5, 17, 0, 3, 40, 201, 88, 9, 0, 12, 600, 26, 0, 0};
  double n = 0;
  for (double c : counts) n += c;
  ASSERT_EQ(n, 1001);
  const std::vector<double> levels = {0.1, 0.5, 0.9, 0.25, 0.999};
  auto band = QuantileBand::Create(static_cast<int64_t>(counts.size()), levels, 1.0, 1e-3, 0.95);
  ASSERT_TRUE(band.ok());
  auto iv = band->Intervals(counts, Edges(static_cast<int64_t>(counts.size())));
  ASSERT_TRUE(iv.ok()) << iv.status();
  for (size_t l = 0; l < levels.size(); ++l) {
    const double exact = ExactQuantile(counts, levels[l]);
    EXPECT_EQ((*iv)[l].lower, std::floor(exact)) << "q=" << levels[l];
    EXPECT_EQ((*iv)[l].upper, std::floor(exact) + 1) << "q=" << levels[l];
  }
}

// The estimates read off an almost noiseless CDF are the midpoints of the exact quantiles'
// buckets, non-decreasing in the level, and their rank-error bound is the band's largest h.
TEST(QuantileBandTest, EstimatesAreTheMidpointsOfTheExactQuantilesBuckets) {
  std::vector<double> counts = {0, 5, 17, 0, 3, 40, 201, 88, 9, 0, 12, 600, 26, 0, 0};
  const std::vector<double> levels = {0.9, 0.1, 0.5, 0.25, 0.999};
  auto band = QuantileBand::Create(static_cast<int64_t>(counts.size()), levels, 1.0, 1e-3, 0.95);
  ASSERT_TRUE(band.ok());
  auto est = band->Estimates(counts, Edges(static_cast<int64_t>(counts.size())));
  ASSERT_TRUE(est.ok()) << est.status();
  for (size_t l = 0; l < levels.size(); ++l) {
    EXPECT_EQ((*est)[l], ExactQuantile(counts, levels[l])) << "q=" << levels[l];
    double h = 0;
    for (int64_t j = 1; j < static_cast<int64_t>(counts.size()); ++j)
      h = std::max(h, band->HalfWidth(l, j));
    EXPECT_EQ(band->MaxHalfWidth(l), h);
  }
  EXPECT_LE((*est)[1], (*est)[3]);
  EXPECT_LE((*est)[3], (*est)[2]);
  EXPECT_LE((*est)[2], (*est)[0]);
  EXPECT_FALSE(band->Estimates(std::vector<double>(3, 1.0), Edges(15)).ok());
}

// The extreme levels: q = 0 is the minimum and q = 1 the maximum (percentile_disc). Nothing is
// known below the first nonempty bucket for q = 0, so its interval starts at the range's lower
// end; symmetric for q = 1.
TEST(QuantileBandTest, ExtremeLevelsCoverTheMinimumAndTheMaximum) {
  const std::vector<double> counts = {0, 0, 7, 3, 0, 9, 0};
  auto band = QuantileBand::Create(7, {0.0, 1.0}, 1.0, 1e-3, 0.95);
  ASSERT_TRUE(band.ok());
  auto iv = band->Intervals(counts, Edges(7));
  ASSERT_TRUE(iv.ok());
  EXPECT_EQ((*iv)[0].lower, 0);
  EXPECT_EQ((*iv)[0].upper, 3);  // the minimum 2.5 < 3
  EXPECT_EQ((*iv)[1].lower, 5);  // the maximum 5.5 >= 5
  EXPECT_EQ((*iv)[1].upper, 7);
}

// Real noise: the ends are monotone in the level whatever the counts (the envelopes), and a level
// given twice gets the same interval.
TEST(QuantileBandTest, IntervalsAreMonotoneInTheLevel) {
  const std::vector<double> levels = {0.9, 0.1, 0.5, 0.5, 0.3, 0.7};
  auto band = QuantileBand::Create(50, levels, 1.0, 20, 0.95);
  ASSERT_TRUE(band.ok());
  std::vector<double> counts(50);
  for (int i = 0; i < 50; ++i) counts[i] = std::fmod(i * 37.0, 23.0) * 3 - 10;  // noisy: some < 0
  auto iv = band->Intervals(counts, Edges(50));
  ASSERT_TRUE(iv.ok());
  const std::vector<size_t> by_level = {1, 4, 2, 3, 5, 0};
  for (size_t r = 1; r < by_level.size(); ++r) {
    EXPECT_LE((*iv)[by_level[r - 1]].lower, (*iv)[by_level[r]].lower);
    EXPECT_LE((*iv)[by_level[r - 1]].upper, (*iv)[by_level[r]].upper);
  }
  EXPECT_EQ((*iv)[2].lower, (*iv)[3].lower);
  EXPECT_EQ((*iv)[2].upper, (*iv)[3].upper);
  for (const ValueInterval& v : *iv) EXPECT_LE(v.lower, v.upper);
}

}  // namespace
}  // namespace dpq::dp
