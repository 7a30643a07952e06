#include "client/dpqctl/query_request.h"

#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dpqctl {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

void ExpectInvalid(const absl::Status& status, const std::string& fragment) {
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(status.message(), HasSubstr(fragment));
}

// --- ParseNumberList / ParseNameList -----------------------------------------------------------

TEST(ParseNumberListTest, ParsesCommaSeparatedDecimals) {
  absl::StatusOr<std::vector<double>> parsed = ParseNumberList({"0.1,0.5,0.9"}, "--quantiles");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_THAT(*parsed, ElementsAre(0.1, 0.5, 0.9));
}

TEST(ParseNumberListTest, ParsesNegativeScientificAndSpacedValues) {
  absl::StatusOr<std::vector<double>> parsed = ParseNumberList({"-10, 0 ,1e3"}, "--bins");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_THAT(*parsed, ElementsAre(-10, 0, 1000));
}

TEST(ParseNumberListTest, ConcatenatesRepeatedFlags) {
  absl::StatusOr<std::vector<double>> parsed = ParseNumberList({"0,10", "20"}, "--bins");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_THAT(*parsed, ElementsAre(0, 10, 20));
}

TEST(ParseNumberListTest, RefusesNonNumberNamingFlagAndElement) {
  absl::Status status = ParseNumberList({"0.1,half"}, "--quantiles").status();
  ExpectInvalid(status, "--quantiles");
  EXPECT_THAT(status.message(), HasSubstr("'half'"));
}

TEST(ParseNumberListTest, RefusesNonFiniteValues) {
  ExpectInvalid(ParseNumberList({"0,inf"}, "--bins").status(), "not a finite number");
  ExpectInvalid(ParseNumberList({"nan"}, "--bins").status(), "not a finite number");
  ExpectInvalid(ParseNumberList({"1e999"}, "--bins").status(), "not a finite number");
}

TEST(ParseNumberListTest, RefusesEmptyElementsAndEmptyList) {
  ExpectInvalid(ParseNumberList({"1,,2"}, "--bins").status(), "empty element");
  ExpectInvalid(ParseNumberList({"1,2,"}, "--bins").status(), "empty element");
  ExpectInvalid(ParseNumberList({""}, "--bins").status(), "--bins");
  ExpectInvalid(ParseNumberList({}, "--bins").status(), "empty");
}

TEST(ParseNumberListTest, RefusesTrailingGarbage) {
  ExpectInvalid(ParseNumberList({"0.5x"}, "--quantiles").status(), "'0.5x'");
}

TEST(ParseNameListTest, SplitsAtCommasKeepingSpaces) {
  absl::StatusOr<std::vector<std::string>> parsed = ParseNameList({"New York,Oslo"}, "--keys");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_THAT(*parsed, ElementsAre("New York", "Oslo"));
}

TEST(ParseNameListTest, RefusesEmptyElementNamingFlag) {
  ExpectInvalid(ParseNameList({"age,,city"}, "--group-by").status(), "--group-by");
}

// --- BuildQueryRequest -------------------------------------------------------------------------

TEST(BuildQueryRequestTest, CopiesEveryField) {
  QueryArgs args;
  args.dataset = "people";
  args.aggregate = "histogram";
  args.column = "age";
  args.lower = 0;
  args.upper = 100;
  args.epsilon = 0.5;
  args.mechanism = "gaussian";
  args.delta = 1e-6;
  args.max_contributions = 2;
  args.request_id = "r1";
  args.confidence = 0.9;
  args.where = "age > 3";
  args.quantiles = {0.5};
  args.bins = {0, 10, 100};
  args.group_by = {"city", "sex"};
  args.keys = {"oslo"};
  args.max_partitions = 4;
  absl::StatusOr<dpq::v1::QueryRequest> request = BuildQueryRequest(args);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->dataset(), "people");
  EXPECT_EQ(request->aggregate(), dpq::v1::AGGREGATE_HISTOGRAM);
  EXPECT_EQ(request->column(), "age");
  EXPECT_EQ(request->lower(), 0);
  EXPECT_EQ(request->upper(), 100);
  EXPECT_EQ(request->epsilon(), 0.5);
  EXPECT_EQ(request->mechanism(), dpq::v1::MECHANISM_GAUSSIAN);
  EXPECT_EQ(request->delta(), 1e-6);
  EXPECT_EQ(request->max_contributions(), 2);
  EXPECT_EQ(request->request_id(), "r1");
  EXPECT_EQ(request->confidence(), 0.9);
  EXPECT_EQ(request->where(), "age > 3");
  EXPECT_THAT(request->quantiles(), ElementsAre(0.5));
  EXPECT_THAT(request->bins(), ElementsAre(0, 10, 100));
  EXPECT_THAT(request->group_by(), ElementsAre("city", "sex"));
  EXPECT_THAT(request->keys(), ElementsAre("oslo"));
  EXPECT_EQ(request->max_partitions(), 4);
}

TEST(BuildQueryRequestTest, EveryNewAggregateWordParses) {
  const std::vector<std::pair<std::string, dpq::v1::Aggregate>> words = {
      {"variance", dpq::v1::AGGREGATE_VARIANCE},
      {"stddev", dpq::v1::AGGREGATE_STDDEV},
      {"quantile", dpq::v1::AGGREGATE_QUANTILE},
      {"histogram", dpq::v1::AGGREGATE_HISTOGRAM}};
  for (const auto& [word, value] : words) {
    QueryArgs args;
    args.aggregate = word;
    absl::StatusOr<dpq::v1::QueryRequest> request = BuildQueryRequest(args);
    ASSERT_TRUE(request.ok()) << word;
    EXPECT_EQ(request->aggregate(), value) << word;
  }
}

TEST(BuildQueryRequestTest, LeavesAbsentBoundsAndMechanismUnset) {
  QueryArgs args;
  args.aggregate = "count";
  absl::StatusOr<dpq::v1::QueryRequest> request = BuildQueryRequest(args);
  ASSERT_TRUE(request.ok());
  EXPECT_FALSE(request->has_lower());
  EXPECT_FALSE(request->has_upper());
  EXPECT_EQ(request->mechanism(), dpq::v1::MECHANISM_UNSPECIFIED);
  EXPECT_EQ(request->quantiles_size(), 0);
}

TEST(BuildQueryRequestTest, UnknownWordsNameThePrefixedFlag) {
  QueryArgs args;
  args.aggregate = "median";
  ExpectInvalid(BuildQueryRequest(args).status(), "--aggregate: 'median'");
  ExpectInvalid(BuildQueryRequest(args, "queries[2].").status(), "queries[2].aggregate");
  args.aggregate = "sum";
  args.mechanism = "exponential";
  ExpectInvalid(BuildQueryRequest(args, "queries[0].").status(), "queries[0].mechanism");
}

// --- ParseQueryBatchJson -----------------------------------------------------------------------

TEST(ParseQueryBatchJsonTest, ReadsEveryKey) {
  const nlohmann::json document = nlohmann::json::parse(R"([
    {"aggregate": "sum", "column": "x", "lower": 0, "upper": 10, "epsilon": 0.1,
     "mechanism": "laplace", "delta": 0, "max_contributions": 2, "where": "y > 1",
     "confidence": 0.9, "quantiles": [0.5], "bins": [0, 5, 10], "group_by": ["g"],
     "keys": ["a", "b"], "max_partitions": 3},
    {"aggregate": "count", "epsilon": 1}
  ])");
  absl::StatusOr<std::vector<QueryArgs>> queries = ParseQueryBatchJson(document, "people");
  ASSERT_TRUE(queries.ok()) << queries.status();
  ASSERT_EQ(queries->size(), 2u);
  const QueryArgs& first = (*queries)[0];
  EXPECT_EQ(first.dataset, "people");
  EXPECT_EQ(first.aggregate, "sum");
  EXPECT_EQ(first.column, "x");
  EXPECT_EQ(first.lower, 0.0);
  EXPECT_EQ(first.upper, 10.0);
  EXPECT_EQ(first.epsilon, 0.1);
  EXPECT_EQ(first.mechanism, "laplace");
  EXPECT_EQ(first.max_contributions, 2);
  EXPECT_EQ(first.where, "y > 1");
  EXPECT_EQ(first.confidence, 0.9);
  EXPECT_THAT(first.quantiles, ElementsAre(0.5));
  EXPECT_THAT(first.bins, ElementsAre(0, 5, 10));
  EXPECT_THAT(first.group_by, ElementsAre("g"));
  EXPECT_THAT(first.keys, ElementsAre("a", "b"));
  EXPECT_EQ(first.max_partitions, 3);
  const QueryArgs& second = (*queries)[1];
  EXPECT_EQ(second.aggregate, "count");
  EXPECT_FALSE(second.lower.has_value());
  EXPECT_TRUE(second.bins.empty());
}

TEST(ParseQueryBatchJsonTest, UnknownKeyNamesIndexAndKey) {
  absl::Status status = ParseQueryBatchJson(nlohmann::json::parse(R"([
    {"aggregate": "count", "epsilon": 1},
    {"aggregate": "count", "epsilon": 1, "epsilom": 2}
  ])"),
                                            "d")
                            .status();
  ExpectInvalid(status, "queries[1].epsilom: unknown key");
  EXPECT_THAT(status.message(), HasSubstr("epsilon"));  // the list of known keys
}

TEST(ParseQueryBatchJsonTest, WrongTypesNameIndexAndKey) {
  ExpectInvalid(
      ParseQueryBatchJson(nlohmann::json::parse(R"([{"aggregate": "count", "epsilon": "1"}])"), "d")
          .status(),
      "queries[0].epsilon: expected a number, got string");
  ExpectInvalid(
      ParseQueryBatchJson(nlohmann::json::parse(R"([{"aggregate": 1, "epsilon": 1}])"), "d")
          .status(),
      "queries[0].aggregate: expected a string");
  ExpectInvalid(
      ParseQueryBatchJson(
          nlohmann::json::parse(R"([{"aggregate": "sum", "epsilon": 1, "bins": 3}])"), "d")
          .status(),
      "queries[0].bins: expected an array of numbers");
  ExpectInvalid(
      ParseQueryBatchJson(
          nlohmann::json::parse(R"([{"aggregate": "sum", "epsilon": 1, "bins": [0, "10"]}])"), "d")
          .status(),
      "queries[0].bins[1]: expected a number");
  ExpectInvalid(
      ParseQueryBatchJson(
          nlohmann::json::parse(R"([{"aggregate": "sum", "epsilon": 1, "group_by": "city"}])"), "d")
          .status(),
      "queries[0].group_by: expected an array of strings");
  ExpectInvalid(
      ParseQueryBatchJson(
          nlohmann::json::parse(R"([{"aggregate": "sum", "epsilon": 1, "keys": ["a", 2]}])"), "d")
          .status(),
      "queries[0].keys[1]: expected a string");
}

TEST(ParseQueryBatchJsonTest, CountsMustBeNonNegativeInt32) {
  for (const char* value : {"1.5", "2.0", "-1", "true", "2147483648", "99999999999999999999"}) {
    SCOPED_TRACE(value);
    const std::string text =
        std::string(R"([{"aggregate": "count", "epsilon": 1, "max_partitions": )") + value + "}]";
    ExpectInvalid(ParseQueryBatchJson(nlohmann::json::parse(text), "d").status(),
                  "queries[0].max_partitions");
  }
  absl::StatusOr<std::vector<QueryArgs>> largest = ParseQueryBatchJson(
      nlohmann::json::parse(
          R"([{"aggregate": "count", "epsilon": 1, "max_contributions": 2147483647}])"),
      "d");
  ASSERT_TRUE(largest.ok()) << largest.status();
  EXPECT_EQ((*largest)[0].max_contributions, 2147483647);
}

TEST(ParseQueryBatchJsonTest, OverflowingNumberIsNotFinite) {
  // (nlohmann's parser refuses 1e999 itself; a document built in memory can still hold one.)
  nlohmann::json document = nlohmann::json::array();
  document.push_back({{"aggregate", "count"},
                      {"epsilon", 1},
                      {"bins", {0.0, std::numeric_limits<double>::infinity()}}});
  ExpectInvalid(ParseQueryBatchJson(document, "d").status(),
                "queries[0].bins[1]: not a finite number");
}

TEST(ParseQueryBatchJsonTest, RequiresAggregateAndEpsilon) {
  ExpectInvalid(ParseQueryBatchJson(nlohmann::json::parse(R"([{"epsilon": 1}])"), "d").status(),
                "queries[0]: key 'aggregate' is required");
  ExpectInvalid(
      ParseQueryBatchJson(nlohmann::json::parse(R"([{"aggregate": "count"}])"), "d").status(),
      "queries[0]: key 'epsilon' is required");
}

TEST(ParseQueryBatchJsonTest, RefusesNonArrayEmptyArrayAndNonObjectEntry) {
  ExpectInvalid(
      ParseQueryBatchJson(nlohmann::json::parse(R"({"aggregate": "count"})"), "d").status(),
      "expected a JSON array");
  ExpectInvalid(ParseQueryBatchJson(nlohmann::json::array(), "d").status(), "empty");
  ExpectInvalid(ParseQueryBatchJson(
                    nlohmann::json::parse(R"([{"aggregate": "count", "epsilon": 1}, 7])"), "d")
                    .status(),
                "queries[1]: expected an object");
}

TEST(ParseQueryBatchJsonTest, AcceptsAThousandQueriesAndRefusesMore) {
  nlohmann::json document = nlohmann::json::array();
  for (size_t i = 0; i < kMaxBatchQueries; ++i) {
    document.push_back({{"aggregate", "count"}, {"epsilon", 0.001}});
  }
  absl::StatusOr<std::vector<QueryArgs>> queries = ParseQueryBatchJson(document, "d");
  ASSERT_TRUE(queries.ok()) << queries.status();
  EXPECT_EQ(queries->size(), kMaxBatchQueries);
  document.push_back({{"aggregate", "count"}, {"epsilon", 0.001}});
  ExpectInvalid(ParseQueryBatchJson(document, "d").status(), "at most 1000");
}

}  // namespace
}  // namespace dpqctl
