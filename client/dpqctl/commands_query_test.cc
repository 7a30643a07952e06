// dpqctl query (extended language), query-batch, plan and budget set driven in-process through
// RunCli: what reaches the server, usage errors (exit 2, nothing sent), and the text and JSON
// printed. The fake services record requests and answer fixed numbers; they add no noise and keep
// no budget.
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "client/dpqctl/testing/cli_runner.h"
#include "dpq/v1/dpq.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace dpqctl {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

using ::dpqctl::testing::CliResult;
using ::dpqctl::testing::ClosedAddress;
using ::dpqctl::testing::RunDpqctl;

using ::dpqctl::testing::TempFile;

void ExpectUsageError(const CliResult& result, const std::string& message_part) {
  EXPECT_EQ(result.exit_code, 2) << result.out << result.err;
  ASSERT_FALSE(result.out.empty()) << result.err;
  EXPECT_EQ(result.JsonOut().at("error").at("code"), "INVALID_ARGUMENT");
  EXPECT_THAT(result.ErrorMessage(), HasSubstr(message_part));
}

// --- parsing, no server (the closed port proves nothing was sent: a call would exit 1) ---------

TEST(QueryCliTest, HelpListsNewAggregatesAndFlags) {
  CliResult result = RunDpqctl({"query", "--help"});
  EXPECT_EQ(result.exit_code, 0);
  for (const char* word : {"variance", "stddev", "quantile", "histogram", "--quantiles", "--bins",
                           "--group-by", "--keys", "--max-partitions"}) {
    EXPECT_THAT(result.out, HasSubstr(word));
  }
}

TEST(QueryCliTest, TopLevelHelpListsQueryBatchAndPlan) {
  CliResult result = RunDpqctl({"--help"});
  EXPECT_THAT(result.out, HasSubstr("query-batch"));
  EXPECT_THAT(result.out, HasSubstr("plan"));
}

TEST(QueryCliTest, BudgetSetHelpListsPldAndPresets) {
  CliResult result = RunDpqctl({"budget", "set", "--help"});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_THAT(result.out, HasSubstr("pld"));
  EXPECT_THAT(result.out, HasSubstr("public-statistics"));
}

TEST(QueryCliTest, MalformedQuantilesIsUsageErrorNamingTheFlag) {
  ExpectUsageError(
      RunDpqctl({"--json", "--server", ClosedAddress(), "query", "people", "--aggregate",
                 "quantile", "--column", "age", "--epsilon", "1", "--quantiles", "0.1,median"}),
      "--quantiles: 'median' is not a finite number");
}

TEST(QueryCliTest, MalformedBinsIsUsageErrorNamingTheFlag) {
  ExpectUsageError(
      RunDpqctl({"--json", "--server", ClosedAddress(), "query", "people", "--aggregate",
                 "histogram", "--column", "age", "--epsilon", "1", "--bins", "0,,10"}),
      "--bins");
  ExpectUsageError(
      RunDpqctl({"--json", "--server", ClosedAddress(), "query", "people", "--aggregate",
                 "histogram", "--column", "age", "--epsilon", "1", "--bins", "0,inf"}),
      "--bins: 'inf' is not a finite number");
}

TEST(QueryCliTest, EmptyGroupByElementIsUsageError) {
  ExpectUsageError(RunDpqctl({"--json", "--server", ClosedAddress(), "query", "people",
                              "--aggregate", "count", "--epsilon", "1", "--group-by", "city,"}),
                   "--group-by");
}

TEST(QueryCliTest, NegativeMaxPartitionsIsUsageError) {
  ExpectUsageError(RunDpqctl({"--json", "--server", ClosedAddress(), "query", "people",
                              "--aggregate", "count", "--epsilon", "1", "--max-partitions", "-1"}),
                   "--max-partitions");
}

TEST(QueryCliTest, MalformedListWithoutJsonGoesToStderr) {
  CliResult result = RunDpqctl({"--server", ClosedAddress(), "query", "people", "--aggregate",
                                "quantile", "--epsilon", "1", "--quantiles", "x"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.out, "");
  EXPECT_THAT(result.err, HasSubstr("--quantiles"));
}

TEST(QueryBatchCliTest, MissingFileIsUsageError) {
  ExpectUsageError(RunDpqctl({"--json", "--server", ClosedAddress(), "query-batch", "people",
                              "--file", "/nonexistent/queries.json"}),
                   "--file: cannot open");
}

TEST(QueryBatchCliTest, InvalidJsonIsUsageError) {
  TempFile file("[{\"aggregate\": \"count\",");
  ExpectUsageError(RunDpqctl({"--json", "--server", ClosedAddress(), "query-batch", "people",
                              "--file", file.path}),
                   "not valid JSON");
}

TEST(QueryBatchCliTest, UnknownKeyNamesFileIndexAndKey) {
  TempFile file(R"([{"aggregate": "count", "epsilon": 1}, {"aggregate": "count", "eps": 1}])");
  CliResult result = RunDpqctl(
      {"--json", "--server", ClosedAddress(), "query-batch", "people", "--file", file.path});
  ExpectUsageError(result, "queries[1].eps: unknown key");
  EXPECT_THAT(result.ErrorMessage(), HasSubstr(file.path));
}

TEST(QueryBatchCliTest, UnknownAggregateNamesIndexAndKey) {
  TempFile file(R"([{"aggregate": "median", "epsilon": 1}])");
  ExpectUsageError(RunDpqctl({"--json", "--server", ClosedAddress(), "query-batch", "people",
                              "--file", file.path}),
                   "queries[0].aggregate: 'median'");
}

TEST(QueryBatchCliTest, MoreThanAThousandQueriesIsUsageError) {
  nlohmann::json queries = nlohmann::json::array();
  for (int i = 0; i < 1001; ++i) queries.push_back({{"aggregate", "count"}, {"epsilon", 0.001}});
  TempFile file(queries.dump());
  ExpectUsageError(RunDpqctl({"--json", "--server", ClosedAddress(), "query-batch", "people",
                              "--file", file.path}),
                   "at most 1000");
}

TEST(QueryBatchCliTest, FileIsRequired) {
  ExpectUsageError(RunDpqctl({"--json", "--server", ClosedAddress(), "query-batch", "people"}),
                   "--file");
}

TEST(PlanCliTest, NeitherEpsilonNorTargetErrorIsUsageError) {
  ExpectUsageError(
      RunDpqctl({"--json", "--server", ClosedAddress(), "plan", "people", "--aggregate", "count"}),
      "exactly one of --epsilon and --target-error");
}

TEST(PlanCliTest, BothEpsilonAndTargetErrorIsUsageError) {
  ExpectUsageError(RunDpqctl({"--json", "--server", ClosedAddress(), "plan", "people",
                              "--aggregate", "count", "--epsilon", "1", "--target-error", "5"}),
                   "exactly one of --epsilon and --target-error");
}

TEST(PlanCliTest, NanTargetErrorIsUsageError) {
  ExpectUsageError(RunDpqctl({"--json", "--server", ClosedAddress(), "plan", "people",
                              "--aggregate", "count", "--target-error", "nan"}),
                   "finite");
}

TEST(BudgetSetCliTest, WithoutEpsilonOrPresetIsUsageError) {
  ExpectUsageError(RunDpqctl({"--json", "--server", ClosedAddress(), "budget", "set", "people",
                              "--delta", "1e-6"}),
                   "--epsilon (or --preset) is required");
}

// --- against a fake server ---------------------------------------------------------------------

void FillBudget(dpq::v1::Budget* budget) {
  budget->set_dataset("people");
  budget->set_epsilon_total(2);
  budget->set_epsilon_spent(0.5);
  budget->set_epsilon_remaining(1.5);
  budget->set_accountant("pld");
  budget->set_preset("healthcare");
}

// Answers a query by its aggregate: COUNT one plain row; QUANTILE one row per level (rank error,
// no interval); HISTOGRAM or any group-by several labelled/keyed rows. Columns named "cached" are
// answered from the "cache", and a where filter "warn" adds a warning.
void Answer(const dpq::v1::QueryRequest& request, dpq::v1::QueryResponse* response) {
  response->set_mechanism(dpq::v1::MECHANISM_LAPLACE);
  response->set_epsilon(request.epsilon());
  response->set_noise_scale(2);
  response->set_sensitivity(1);
  response->set_max_contributions(1);
  response->set_max_partitions(request.max_partitions() > 0 ? request.max_partitions() : 1);
  response->set_request_id(request.request_id().empty() ? "generated" : request.request_id());
  response->set_cached(request.column() == "cached");
  if (request.where() == "warn") response->add_warnings("epsilon 6 is above the usual range");
  FillBudget(response->mutable_budget());
  auto add_row = [&](std::vector<std::string> key, const std::string& label, double value) {
    dpq::v1::ResultRow* row = response->add_rows();
    for (const std::string& part : key) row->add_key(part);
    row->set_label(label);
    row->set_value(value);
    row->set_noise_scale(2);
    if (request.aggregate() == dpq::v1::AGGREGATE_QUANTILE) {
      row->set_rank_error(12.5);
    } else {
      row->mutable_interval()->set_confidence(0.95);
      row->mutable_interval()->set_lower(value - 6);
      row->mutable_interval()->set_upper(value + 6);
    }
  };
  if (request.aggregate() == dpq::v1::AGGREGATE_QUANTILE) {
    for (double q : request.quantiles()) add_row({}, "q=" + std::to_string(q).substr(0, 3), 40);
  } else if (request.group_by_size() > 0) {
    add_row({"oslo", "f"}, "", 10);
    add_row({"bergen", "m"}, "", 20);
  } else if (request.aggregate() == dpq::v1::AGGREGATE_HISTOGRAM) {
    add_row({}, "[0, 10)", 3);
    add_row({}, "[10, 20]", 4);
  } else {
    add_row({}, "", 41.5);
  }
  response->set_value(response->rows(0).value());
  *response->mutable_interval() = response->rows(0).interval();
}

class FakeAnalystService final : public dpq::v1::AnalystService::Service {
 public:
  grpc::Status Query(grpc::ServerContext*, const dpq::v1::QueryRequest* request,
                     dpq::v1::QueryResponse* response) override {
    std::lock_guard<std::mutex> lock(mutex_);
    last_query_ = *request;
    Answer(*request, response);
    return grpc::Status::OK;
  }

  grpc::Status QueryBatch(grpc::ServerContext*, const dpq::v1::QueryBatchRequest* request,
                          dpq::v1::QueryBatchResponse* response) override {
    std::lock_guard<std::mutex> lock(mutex_);
    last_batch_ = *request;
    double sum = 0;
    for (const dpq::v1::QueryRequest& query : request->queries()) {
      Answer(query, response->add_answers());
      sum += query.epsilon();
    }
    response->set_request_id(request->request_id().empty() ? "batch-1" : request->request_id());
    response->set_epsilon(sum / 2);
    response->set_delta(request->delta());
    response->set_epsilon_sum(sum);
    FillBudget(response->mutable_budget());
    return grpc::Status::OK;
  }

  grpc::Status Plan(grpc::ServerContext*, const dpq::v1::PlanRequest* request,
                    dpq::v1::PlanResponse* response) override {
    std::lock_guard<std::mutex> lock(mutex_);
    last_plan_ = *request;
    response->set_epsilon(request->query().epsilon() > 0 ? request->query().epsilon() : 0.25);
    response->set_mechanism(dpq::v1::MECHANISM_LAPLACE);
    response->set_sensitivity(1);
    response->set_noise_scale(4);
    response->set_error(11.98);
    response->set_confidence(0.95);
    if (request->query().epsilon() > 5) response->add_warnings("epsilon 6 is large");
    return grpc::Status::OK;
  }

  dpq::v1::QueryRequest last_query() {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_query_;
  }
  dpq::v1::QueryBatchRequest last_batch() {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_batch_;
  }
  dpq::v1::PlanRequest last_plan() {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_plan_;
  }

 private:
  std::mutex mutex_;
  dpq::v1::QueryRequest last_query_;
  dpq::v1::QueryBatchRequest last_batch_;
  dpq::v1::PlanRequest last_plan_;
};

class FakeAdminService final : public dpq::v1::AdminService::Service {
 public:
  grpc::Status SetBudget(grpc::ServerContext*, const dpq::v1::SetBudgetRequest* request,
                         dpq::v1::Budget* response) override {
    std::lock_guard<std::mutex> lock(mutex_);
    last_set_ = *request;
    response->set_dataset(request->dataset());
    response->set_epsilon_total(request->epsilon() > 0 ? request->epsilon() : 2);
    response->set_epsilon_remaining(response->epsilon_total());
    response->set_delta_total(request->delta());
    response->set_accountant(request->accountant().empty() ? "basic" : request->accountant());
    response->set_preset(request->preset());
    if (request->epsilon() > 2) {
      response->add_warnings("epsilon " + std::to_string(static_cast<int>(request->epsilon())) +
                             " is above the usual range 0.5-2 for healthcare");
    }
    return grpc::Status::OK;
  }

  dpq::v1::SetBudgetRequest last_set() {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_set_;
  }

 private:
  std::mutex mutex_;
  dpq::v1::SetBudgetRequest last_set_;
};

class QueryFakeServerTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NE(server_.server(), nullptr); }

  FakeAnalystService analyst_;
  FakeAdminService admin_;
  ::dpqctl::testing::LoopbackServer server_{{&analyst_, &admin_}};
  const std::string address_ = server_.address();
};

TEST_F(QueryFakeServerTest, QuerySendsListFlags) {
  CliResult result = RunDpqctl(
      {"--server",      address_,           "--json", "query",       "people",   "--aggregate",
       "histogram",     "--column",         "age",    "--epsilon",   "0.5",      "--bins",
       "-10,0,10",      "--bins",           "50",     "--group-by",  "city,sex", "--keys",
       "New York,oslo", "--max-partitions", "3",      "--quantiles", "0.5"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const dpq::v1::QueryRequest sent = analyst_.last_query();
  EXPECT_EQ(sent.aggregate(), dpq::v1::AGGREGATE_HISTOGRAM);
  EXPECT_THAT(sent.bins(), ElementsAre(-10, 0, 10, 50));
  EXPECT_THAT(sent.group_by(), ElementsAre("city", "sex"));
  EXPECT_THAT(sent.keys(), ElementsAre("New York", "oslo"));
  EXPECT_THAT(sent.quantiles(), ElementsAre(0.5));
  EXPECT_EQ(sent.max_partitions(), 3);
}

TEST_F(QueryFakeServerTest, QueryWithoutListFlagsSendsNone) {
  ASSERT_EQ(
      RunDpqctl({"--server", address_, "query", "people", "--aggregate", "count", "--epsilon", "1"})
          .exit_code,
      0);
  const dpq::v1::QueryRequest sent = analyst_.last_query();
  EXPECT_EQ(sent.quantiles_size(), 0);
  EXPECT_EQ(sent.bins_size(), 0);
  EXPECT_EQ(sent.group_by_size(), 0);
  EXPECT_EQ(sent.keys_size(), 0);
  EXPECT_EQ(sent.max_partitions(), 0);
}

TEST_F(QueryFakeServerTest, ScalarAnswerPrintsAsBefore) {
  CliResult result = RunDpqctl(
      {"--server", address_, "query", "people", "--aggregate", "count", "--epsilon", "1"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("value:        41.5\n"));
  EXPECT_THAT(result.out, HasSubstr("interval:     95.0% [35.5, 47.5]\n"));
  EXPECT_THAT(result.out, HasSubstr("charged:      epsilon 1.0, delta 0.0\n"));
  EXPECT_THAT(result.out, Not(HasSubstr("VALUE")));
  EXPECT_EQ(result.err, "");
}

TEST_F(QueryFakeServerTest, GroupByAnswerPrintsTableWithKeyColumns) {
  CliResult result = RunDpqctl({"--server", address_, "query", "people", "--aggregate", "count",
                                "--epsilon", "1", "--group-by", "city,sex"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("CITY    SEX  VALUE  95.0% INTERVAL  NOISE SCALE\n"));
  EXPECT_THAT(result.out, HasSubstr("oslo    f    10.0   [4.0, 16.0]     2\n"));
  EXPECT_THAT(result.out, HasSubstr("bergen  m    20.0   [14.0, 26.0]    2\n"));
  EXPECT_THAT(result.out, HasSubstr("max partitions per unit: 1\n"));
  EXPECT_THAT(result.out, HasSubstr("charged:      epsilon 1.0"));
  EXPECT_THAT(result.out, Not(HasSubstr("value:")));
}

TEST_F(QueryFakeServerTest, QuantileAnswerPrintsRankError) {
  CliResult result = RunDpqctl({"--server", address_, "query", "people", "--aggregate", "quantile",
                                "--column", "age", "--epsilon", "1", "--quantiles", "0.1,0.9"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("LABEL"));
  EXPECT_THAT(result.out, HasSubstr("q=0.1"));
  EXPECT_THAT(result.out, HasSubstr("rank \u00b113"));  // 12.5 rows, to 2 significant digits
  EXPECT_TRUE(absl::EndsWith(result.out, "\n"));
}

TEST_F(QueryFakeServerTest, CachedAnswerSaysNothingWasCharged) {
  CliResult result = RunDpqctl({"--server", address_, "query", "people", "--aggregate", "sum",
                                "--column", "cached", "--epsilon", "1"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("cached (no budget charged)"));
}

TEST_F(QueryFakeServerTest, WarningsGoToStderrInTextMode) {
  CliResult result = RunDpqctl({"--server", address_, "query", "people", "--aggregate", "count",
                                "--epsilon", "1", "--where", "warn"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err, "warning: epsilon 6 is above the usual range\n");
  EXPECT_THAT(result.out, Not(HasSubstr("warning")));
}

TEST_F(QueryFakeServerTest, QueryJsonAddsRowsCachedWarningsAndMaxPartitions) {
  CliResult result = RunDpqctl({"--server", address_, "--json", "query", "people", "--aggregate",
                                "quantile", "--column", "cached", "--epsilon", "1", "--quantiles",
                                "0.5", "--where", "warn", "--max-partitions", "2"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err, "");  // with --json the warnings are in the document only
  const nlohmann::json json = result.JsonOut();
  // The fields from before the extension are unchanged.
  for (const char* key : {"value", "mechanism", "epsilon", "delta", "noise_scale", "sensitivity",
                          "interval", "budget", "request_id", "replayed", "max_contributions"}) {
    EXPECT_TRUE(json.contains(key)) << key;
  }
  EXPECT_EQ(json.at("cached"), true);
  EXPECT_EQ(json.at("warnings"), nlohmann::json::array({"epsilon 6 is above the usual range"}));
  EXPECT_EQ(json.at("max_partitions"), 2);
  ASSERT_EQ(json.at("rows").size(), 1u);
  const nlohmann::json& row = json.at("rows")[0];
  EXPECT_EQ(row.at("key"), nlohmann::json::array());
  EXPECT_EQ(row.at("label"), "q=0.5");
  EXPECT_EQ(row.at("value"), 40.0);
  EXPECT_TRUE(row.at("interval").is_null());
  EXPECT_EQ(row.at("rank_error"), 12.5);
  EXPECT_EQ(row.at("noise_scale"), 2.0);
  EXPECT_EQ(json.at("budget").at("preset"), "healthcare");
}

TEST_F(QueryFakeServerTest, QueryBatchSendsEveryQueryAndPrintsJson) {
  TempFile file(R"([
    {"aggregate": "sum", "column": "x", "lower": 0, "upper": 10, "epsilon": 0.1,
     "mechanism": "laplace", "max_contributions": 2},
    {"aggregate": "histogram", "column": "age", "bins": [0, 10, 20], "epsilon": 0.3},
    {"aggregate": "count", "group_by": ["city", "sex"], "keys": ["oslo"], "epsilon": 0.2,
     "max_partitions": 2, "where": "warn"}
  ])");
  CliResult result = RunDpqctl({"--server", address_, "--json", "query-batch", "people", "--file",
                                file.path, "--delta", "1e-6", "--request-id", "b-7"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const dpq::v1::QueryBatchRequest sent = analyst_.last_batch();
  EXPECT_EQ(sent.dataset(), "people");
  EXPECT_EQ(sent.delta(), 1e-6);
  EXPECT_EQ(sent.request_id(), "b-7");
  ASSERT_EQ(sent.queries_size(), 3);
  EXPECT_EQ(sent.queries(0).aggregate(), dpq::v1::AGGREGATE_SUM);
  EXPECT_EQ(sent.queries(0).column(), "x");
  EXPECT_TRUE(sent.queries(0).has_lower());
  EXPECT_EQ(sent.queries(0).upper(), 10);
  EXPECT_EQ(sent.queries(0).mechanism(), dpq::v1::MECHANISM_LAPLACE);
  EXPECT_EQ(sent.queries(0).max_contributions(), 2);
  EXPECT_EQ(sent.queries(0).dataset(), "");
  EXPECT_EQ(sent.queries(0).request_id(), "");
  EXPECT_THAT(sent.queries(1).bins(), ElementsAre(0, 10, 20));
  EXPECT_FALSE(sent.queries(1).has_lower());
  EXPECT_THAT(sent.queries(2).group_by(), ElementsAre("city", "sex"));
  EXPECT_THAT(sent.queries(2).keys(), ElementsAre("oslo"));
  EXPECT_EQ(sent.queries(2).max_partitions(), 2);

  const nlohmann::json json = result.JsonOut();
  EXPECT_EQ(json.at("request_id"), "b-7");
  EXPECT_DOUBLE_EQ(json.at("epsilon").get<double>(), 0.3);
  EXPECT_EQ(json.at("delta"), 1e-6);
  EXPECT_DOUBLE_EQ(json.at("epsilon_sum").get<double>(), 0.6);
  EXPECT_EQ(json.at("replayed"), false);
  EXPECT_EQ(json.at("budget").at("accountant"), "pld");
  ASSERT_EQ(json.at("answers").size(), 3u);
  EXPECT_EQ(json.at("answers")[1].at("rows").size(), 2u);
  EXPECT_EQ(json.at("answers")[2].at("rows")[0].at("key"), nlohmann::json::array({"oslo", "f"}));
  EXPECT_EQ(json.at("answers")[2].at("warnings").size(), 1u);
  EXPECT_EQ(result.err, "");
}

TEST_F(QueryFakeServerTest, QueryBatchTextHasOneBlockPerAnswerAndTheJointCharge) {
  TempFile file(R"([
    {"aggregate": "sum", "column": "x", "epsilon": 0.25},
    {"aggregate": "count", "group_by": ["city", "sex"], "epsilon": 0.25, "where": "warn"}
  ])");
  CliResult result =
      RunDpqctl({"--server", address_, "query-batch", "people", "--file", file.path});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("query 1 (sum of x):\n  value:        41.5\n"));
  EXPECT_THAT(result.out, HasSubstr("query 2 (count by city, sex):\n  CITY    SEX"));
  EXPECT_THAT(result.out, HasSubstr("  price alone:  epsilon 0.25, delta 0.0\n"));
  EXPECT_THAT(result.out,
              HasSubstr("charged epsilon=0.25 delta=0.0 jointly (sum of the queries: 0.5)\n"));
  EXPECT_THAT(result.out, HasSubstr("request id:   batch-1\n"));
  EXPECT_EQ(result.err, "warning: query 2: epsilon 6 is above the usual range\n");
}

TEST_F(QueryFakeServerTest, PlanWithTargetErrorSendsZeroEpsilon) {
  CliResult result =
      RunDpqctl({"--server", address_, "--json", "plan", "people", "--aggregate", "mean",
                 "--column", "income", "--target-error", "5", "--expected-count", "1000",
                 "--confidence", "0.9", "--group-by", "city"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const dpq::v1::PlanRequest sent = analyst_.last_plan();
  EXPECT_EQ(sent.query().dataset(), "people");
  EXPECT_EQ(sent.query().aggregate(), dpq::v1::AGGREGATE_MEAN);
  EXPECT_EQ(sent.query().column(), "income");
  EXPECT_EQ(sent.query().epsilon(), 0);
  EXPECT_EQ(sent.query().confidence(), 0.9);
  EXPECT_THAT(sent.query().group_by(), ElementsAre("city"));
  EXPECT_EQ(sent.target_error(), 5);
  EXPECT_EQ(sent.expected_count(), 1000);
  // The fake server states no noise components: the list is there, empty.
  EXPECT_EQ(result.JsonOut(), (nlohmann::json{{"epsilon", 0.25},
                                              {"components", nlohmann::json::array()},
                                              {"delta", 0.0},
                                              {"mechanism", "laplace"},
                                              {"sensitivity", 1.0},
                                              {"noise_scale", 4.0},
                                              {"error", 11.98},
                                              {"confidence", 0.95},
                                              {"rank_error", false},
                                              {"warnings", nlohmann::json::array()}}));
}

TEST_F(QueryFakeServerTest, PlanWithEpsilonPrintsErrorLineAndWarnings) {
  CliResult result =
      RunDpqctl({"--server", address_, "plan", "people", "--aggregate", "count", "--epsilon", "6"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(analyst_.last_plan().query().epsilon(), 6);
  EXPECT_EQ(analyst_.last_plan().target_error(), 0);
  EXPECT_EQ(result.out,
            "epsilon 6.0 gives \u00b111.98 at confidence 0.95 (laplace, noise scale 4.0, "
            "sensitivity 1.0)\n");
  EXPECT_EQ(result.err, "warning: epsilon 6 is large\n");
}

TEST_F(QueryFakeServerTest, BudgetSetWithPresetAloneSendsZeroEpsilon) {
  CliResult result = RunDpqctl({"--server", address_, "--json", "budget", "set", "people",
                                "--preset", "healthcare", "--accountant", "pld"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const dpq::v1::SetBudgetRequest sent = admin_.last_set();
  EXPECT_EQ(sent.epsilon(), 0);
  EXPECT_EQ(sent.delta(), 0);
  EXPECT_EQ(sent.preset(), "healthcare");
  EXPECT_EQ(sent.accountant(), "pld");
  const nlohmann::json json = result.JsonOut();
  EXPECT_EQ(json.at("preset"), "healthcare");
  EXPECT_EQ(json.at("warnings"), nlohmann::json::array());
  EXPECT_EQ(json.at("epsilon_total"), 2.0);
}

TEST_F(QueryFakeServerTest, BudgetSetPrintsWarnings) {
  CliResult text = RunDpqctl({"--server", address_, "budget", "set", "people", "--epsilon", "6",
                              "--delta", "1e-6", "--preset", "healthcare"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("(basic composition, preset healthcare)"));
  EXPECT_EQ(text.err, "warning: epsilon 6 is above the usual range 0.5-2 for healthcare\n");
  EXPECT_EQ(admin_.last_set().epsilon(), 6);
  EXPECT_EQ(admin_.last_set().delta(), 1e-6);

  CliResult json =
      RunDpqctl({"--server", address_, "--json", "budget", "set", "people", "--epsilon", "6"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(json.JsonOut().at("warnings"),
            nlohmann::json::array({"epsilon 6 is above the usual range 0.5-2 for healthcare"}));
  EXPECT_EQ(json.err, "");
}

}  // namespace
}  // namespace dpqctl
