#include "bench/load/bench_options.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dpqbench {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<BenchOptions> Parse(std::vector<std::string> args) {
  return ParseBenchOptions(args);
}

TEST(IsLoopbackTargetTest, AcceptsLoopbackForms) {
  for (const char* s :
       {"127.0.0.1:7777", "127.1.2.3:1", "localhost:80", "LOCALHOST:80", "[::1]:7777",
        "ipv4:127.0.0.1:5", "dns:///localhost:5", "unix:/tmp/x.sock"}) {
    EXPECT_TRUE(IsLoopbackTarget(s)) << s;
  }
}

TEST(IsLoopbackTargetTest, RefusesEverythingElse) {
  for (const char* s :
       {"10.0.0.1:7777", "0.0.0.0:7777", "example.com:443", "127.0.0.1", "127.0.0.1:0",
        "127.0.0.1:70000", "128.0.0.1:1", "127.0.0:1", "127.0.0.256:1", "[::2]:1", "[::1]",
        "unix:", "localhost.evil.com:1", "127.0.0.1.evil.com:1", ""}) {
    EXPECT_FALSE(IsLoopbackTarget(s)) << s;
  }
}

TEST(ParseMixTest, WeightsAndDefaults) {
  auto mix = ParseMix("count=8, sum=1,batch");
  ASSERT_TRUE(mix.ok()) << mix.status();
  ASSERT_EQ(mix->size(), 3u);
  EXPECT_EQ((*mix)[0].kind, RequestKind::kCount);
  EXPECT_EQ((*mix)[0].weight, 8);
  EXPECT_EQ((*mix)[1].kind, RequestKind::kSum);
  EXPECT_EQ((*mix)[2].kind, RequestKind::kBatch);
  EXPECT_EQ((*mix)[2].weight, 1);
}

TEST(ParseMixTest, RefusesUnknownNamesAndBadWeights) {
  EXPECT_THAT(ParseMix("median=1").status().message(), HasSubstr("unknown request 'median'"));
  EXPECT_THAT(ParseMix("count=0").status().message(), HasSubstr("weight of 'count'"));
  EXPECT_THAT(ParseMix("count=").status().message(), HasSubstr("weight of 'count'"));
  EXPECT_FALSE(ParseMix("").ok());
}

TEST(ParseBenchOptionsTest, ReadsEveryFlagInBothForms) {
  auto o = Parse({"--server",
                  "127.0.0.1:9",
                  "--token=t",
                  "--dataset",
                  "a,b",
                  "--clients",
                  "8",
                  "--duration=2.5",
                  "--count",
                  "100",
                  "--rate",
                  "50",
                  "--mix",
                  "count=3,sum=1",
                  "--column",
                  "x",
                  "--batch-size",
                  "20",
                  "--epsilon",
                  "0.5",
                  "--max-contributions",
                  "5",
                  "--timeout",
                  "3",
                  "--json"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->server, "127.0.0.1:9");
  EXPECT_EQ(o->token, "t");
  EXPECT_EQ(o->datasets, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(o->clients, 8);
  EXPECT_DOUBLE_EQ(o->duration_seconds, 2.5);
  EXPECT_EQ(o->count, 100);
  EXPECT_DOUBLE_EQ(o->rate, 50);
  EXPECT_EQ(o->mix.size(), 2u);
  EXPECT_EQ(o->column, "x");
  EXPECT_EQ(o->batch_size, 20);
  EXPECT_DOUBLE_EQ(o->epsilon, 0.5);
  EXPECT_EQ(o->max_contributions, 5);
  EXPECT_DOUBLE_EQ(o->timeout_seconds, 3);
  EXPECT_TRUE(o->json);
}

TEST(ParseBenchOptionsTest, RefusesARemoteServerWithAClearMessage) {
  auto o = Parse({"--server", "10.1.2.3:7777", "--dataset", "d"});
  ASSERT_FALSE(o.ok());
  EXPECT_THAT(o.status().message(), HasSubstr("not a loopback address"));
  EXPECT_THAT(o.status().message(), HasSubstr("--server"));
}

TEST(ParseBenchOptionsTest, BoundsTimeCountAndClients) {
  EXPECT_THAT(Parse({"--dataset", "d", "--duration", "3601"}).status().message(),
              HasSubstr("--duration"));
  EXPECT_THAT(Parse({"--dataset", "d", "--duration", "0"}).status().message(),
              HasSubstr("--duration"));
  EXPECT_THAT(Parse({"--dataset", "d", "--count", "0"}).status().message(), HasSubstr("--count"));
  EXPECT_THAT(Parse({"--dataset", "d", "--count", "100000001"}).status().message(),
              HasSubstr("--count"));
  EXPECT_THAT(Parse({"--dataset", "d", "--clients", "0"}).status().message(),
              HasSubstr("--clients"));
  EXPECT_THAT(Parse({"--dataset", "d", "--clients", "1025"}).status().message(),
              HasSubstr("--clients"));
  EXPECT_THAT(Parse({"--dataset", "d", "--rate", "-1"}).status().message(), HasSubstr("--rate"));
  EXPECT_THAT(Parse({"--dataset", "d", "--epsilon", "nan"}).status().message(),
              HasSubstr("--epsilon"));
}

TEST(ParseBenchOptionsTest, NeedsADatasetAndAColumnForSums) {
  EXPECT_THAT(Parse({}).status().message(), HasSubstr("--dataset"));
  EXPECT_THAT(Parse({"--dataset", ","}).status().message(), HasSubstr("--dataset"));
  EXPECT_THAT(Parse({"--dataset", "d", "--mix", "sum"}).status().message(), HasSubstr("--column"));
  EXPECT_TRUE(Parse({"--dataset", "d", "--mix", "sum", "--column", "x"}).ok());
}

TEST(ParseBenchOptionsTest, RefusesUnknownFlagsAndMissingValues) {
  EXPECT_THAT(Parse({"--dataset", "d", "--bogus", "1"}).status().message(),
              HasSubstr("unknown flag --bogus"));
  EXPECT_THAT(Parse({"--dataset"}).status().message(), HasSubstr("needs a value"));
  EXPECT_THAT(Parse({"stray"}).status().message(), HasSubstr("unexpected argument"));
}

TEST(ParseBenchOptionsTest, HelpStopsParsing) {
  auto o = Parse({"--help", "--server", "10.0.0.1:1"});
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->help);
  EXPECT_THAT(Usage(), HasSubstr("--server"));
}

}  // namespace
}  // namespace dpqbench
