#include "bench/load/latency_summary.h"

#include <vector>

#include "gtest/gtest.h"

namespace dpqbench {
namespace {

TEST(NearestRankPercentileTest, EmptyIsZero) { EXPECT_EQ(NearestRankPercentile({}, 50), 0); }

TEST(NearestRankPercentileTest, SingleSampleIsEveryPercentile) {
  const std::vector<double> one = {7};
  EXPECT_EQ(NearestRankPercentile(one, 1), 7);
  EXPECT_EQ(NearestRankPercentile(one, 50), 7);
  EXPECT_EQ(NearestRankPercentile(one, 100), 7);
}

TEST(NearestRankPercentileTest, PicksTheCeilRankOfOneToHundred) {
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  EXPECT_EQ(NearestRankPercentile(v, 50), 50);
  EXPECT_EQ(NearestRankPercentile(v, 90), 90);
  EXPECT_EQ(NearestRankPercentile(v, 99), 99);
  EXPECT_EQ(NearestRankPercentile(v, 100), 100);
  EXPECT_EQ(NearestRankPercentile(v, 0.5), 1);
}

TEST(NearestRankPercentileTest, ExactProductsDoNotRoundUp) {
  // 0.9 * 10 is 9.000000000000002 in binary floating point; the 90th of 10 samples is the 9th.
  const std::vector<double> v = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_EQ(NearestRankPercentile(v, 90), 9);
  EXPECT_EQ(NearestRankPercentile(v, 50), 5);
  EXPECT_EQ(NearestRankPercentile(v, 99), 10);
}

TEST(NearestRankPercentileTest, IsAlwaysAnObservedValue) {
  const std::vector<double> v = {1, 1000};
  EXPECT_EQ(NearestRankPercentile(v, 50), 1);
  EXPECT_EQ(NearestRankPercentile(v, 51), 1000);
}

TEST(SummarizeTest, SortsAndSummarises) {
  std::vector<double> v = {5, 1, 4, 2, 3};
  const LatencySummary s = Summarize(&v);
  EXPECT_EQ(s.samples, 5);
  EXPECT_EQ(s.p50, 3);
  EXPECT_EQ(s.p90, 5);
  EXPECT_EQ(s.max, 5);
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_EQ(v, (std::vector<double>{1, 2, 3, 4, 5}));
}

TEST(SummarizeTest, EmptyIsAllZero) {
  std::vector<double> v;
  const LatencySummary s = Summarize(&v);
  EXPECT_EQ(s.samples, 0);
  EXPECT_EQ(s.max, 0);
}

TEST(RunFiguresTest, ThroughputCountsOnlySuccesses) {
  RunFigures f;
  f.seconds = 2;
  f.requests = 10;
  f.ok = 6;
  EXPECT_DOUBLE_EQ(f.throughput(), 3);
  f.seconds = 0;
  EXPECT_EQ(f.throughput(), 0);
}

}  // namespace
}  // namespace dpqbench
