#include "client/dpqctl/json_output.h"

#include <limits>
#include <sstream>

#include "client/dpqctl/enum_names.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dpqctl {
namespace {

using ::testing::HasSubstr;

TEST(EnumWordsTest, AreLowerCaseWithoutPrefix) {
  EXPECT_EQ(MechanismWord(dpq::v1::MECHANISM_LAPLACE), "laplace");
  EXPECT_EQ(MechanismWord(dpq::v1::MECHANISM_GAUSSIAN), "gaussian");
  EXPECT_EQ(AggregateWord(dpq::v1::AGGREGATE_COUNT), "count");
  EXPECT_EQ(AggregateWord(dpq::v1::AGGREGATE_SUM), "sum");
  EXPECT_EQ(AggregateWord(dpq::v1::AGGREGATE_MEAN), "mean");
  EXPECT_EQ(AggregateWord(dpq::v1::AGGREGATE_VARIANCE), "variance");
  EXPECT_EQ(AggregateWord(dpq::v1::AGGREGATE_STDDEV), "stddev");
  EXPECT_EQ(AggregateWord(dpq::v1::AGGREGATE_QUANTILE), "quantile");
  EXPECT_EQ(AggregateWord(dpq::v1::AGGREGATE_HISTOGRAM), "histogram");
  EXPECT_EQ(ColumnTypeWord(dpq::v1::COLUMN_TYPE_INTEGER), "integer");
  EXPECT_EQ(ColumnTypeWord(dpq::v1::COLUMN_TYPE_DOUBLE), "double");
  EXPECT_EQ(ColumnTypeWord(dpq::v1::COLUMN_TYPE_TEXT), "text");
  EXPECT_EQ(RoleWord(dpq::v1::ROLE_ADMIN), "admin");
  EXPECT_EQ(RoleWord(dpq::v1::ROLE_ANALYST), "analyst");
}

TEST(EnumWordsTest, ZeroValueIsUnspecifiedAndUnknownValueIsItsNumber) {
  EXPECT_EQ(MechanismWord(dpq::v1::MECHANISM_UNSPECIFIED), "unspecified");
  EXPECT_EQ(AggregateWord(static_cast<dpq::v1::Aggregate>(42)), "42");
}

TEST(EnumWordsTest, ParseRoundTripsEveryWord) {
  EXPECT_EQ(*ParseMechanismWord("gaussian", "--mechanism"), dpq::v1::MECHANISM_GAUSSIAN);
  EXPECT_EQ(*ParseAggregateWord("mean", "--aggregate"), dpq::v1::AGGREGATE_MEAN);
  EXPECT_EQ(*ParseRoleWord("admin", "--role"), dpq::v1::ROLE_ADMIN);
  EXPECT_EQ(*ParseColumnTypeWord("text", "--type"), dpq::v1::COLUMN_TYPE_TEXT);
}

TEST(EnumWordsTest, ParseRefusesUnknownWordNamingTheFlag) {
  absl::StatusOr<dpq::v1::Mechanism> parsed = ParseMechanismWord("exponential", "--mechanism");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(parsed.status().message(), HasSubstr("--mechanism"));
  EXPECT_THAT(parsed.status().message(), HasSubstr("laplace, gaussian"));
}

TEST(ColumnToJsonTest, OmitsAbsentBounds) {
  dpq::v1::Column column;
  column.set_name("city");
  column.set_type(dpq::v1::COLUMN_TYPE_TEXT);
  EXPECT_EQ(ColumnToJson(column), (nlohmann::json{{"name", "city"}, {"type", "text"}}));
}

TEST(ColumnToJsonTest, PrintsDeclaredCategories) {
  dpq::v1::Column column;
  column.set_name("city");
  column.set_type(dpq::v1::COLUMN_TYPE_TEXT);
  column.add_categories("oslo");
  column.add_categories("bergen");
  EXPECT_EQ(
      ColumnToJson(column),
      (nlohmann::json{{"name", "city"}, {"type", "text"}, {"categories", {"oslo", "bergen"}}}));
}

TEST(ColumnToJsonTest, PrintsPresentBoundsIncludingZero) {
  dpq::v1::Column column;
  column.set_name("age");
  column.set_type(dpq::v1::COLUMN_TYPE_INTEGER);
  column.set_lower(0);
  column.set_upper(120);
  const nlohmann::json json = ColumnToJson(column);
  EXPECT_EQ(json.at("type"), "integer");
  EXPECT_EQ(json.at("lower"), 0.0);
  EXPECT_EQ(json.at("upper"), 120.0);
}

TEST(DatasetToJsonTest, HasEveryField) {
  dpq::v1::Dataset dataset;
  dataset.set_name("people");
  dataset.set_privacy_unit("id");
  dataset.set_population("clinic");
  dataset.set_version(3);
  dataset.set_created_at("2024-01-02T03:04:05Z");
  dataset.add_columns()->set_name("id");
  const nlohmann::json json = DatasetToJson(dataset);
  EXPECT_EQ(json.at("name"), "people");
  EXPECT_EQ(json.at("privacy_unit"), "id");
  EXPECT_EQ(json.at("population"), "clinic");
  EXPECT_EQ(json.at("is_public"), false);
  EXPECT_EQ(json.at("version"), 3);
  EXPECT_EQ(json.at("created_at"), "2024-01-02T03:04:05Z");
  ASSERT_EQ(json.at("columns").size(), 1u);
  EXPECT_EQ(json.at("columns")[0].at("type"), "unspecified");
}

TEST(ListDatasetsResponseToJsonTest, EmptyListIsAnEmptyArray) {
  EXPECT_EQ(ListDatasetsResponseToJson({}).dump(), R"({"datasets":[]})");
}

dpq::v1::Budget SampleBudget() {
  dpq::v1::Budget budget;
  budget.set_dataset("people");
  budget.set_epsilon_total(1);
  budget.set_delta_total(1e-6);
  budget.set_epsilon_spent(0.25);
  budget.set_epsilon_remaining(0.75);
  budget.set_delta_remaining(1e-6);
  budget.set_accountant("basic");
  return budget;
}

TEST(BudgetToJsonTest, HasEveryFieldOfTheBudgetMessage) {
  const nlohmann::json json = BudgetToJson(SampleBudget());
  for (const char* key :
       {"dataset", "epsilon_total", "delta_total", "epsilon_spent", "delta_spent",
        "epsilon_remaining", "delta_remaining", "accountant", "preset", "max_query_epsilon",
        "warnings", "population", "via_dataset", "per_block", "blocks"}) {
    EXPECT_TRUE(json.contains(key)) << key;
  }
  EXPECT_EQ(json.size(), 15u);
  EXPECT_EQ(json.at("blocks"), nlohmann::json::array());
  EXPECT_TRUE(json.at("max_query_epsilon").is_null()) << "absent: no limit";
  EXPECT_EQ(json.at("epsilon_remaining"), 0.75);
  EXPECT_EQ(json.at("delta_spent"), 0.0);
  EXPECT_EQ(json.at("preset"), "");
  EXPECT_EQ(json.at("warnings"), nlohmann::json::array());
}

TEST(BudgetToJsonTest, PrintsPresetAndWarnings) {
  dpq::v1::Budget budget = SampleBudget();
  budget.set_preset("census");
  budget.add_warnings("epsilon 3 is above the usual range 0.1-1 for census");
  const nlohmann::json json = BudgetToJson(budget);
  EXPECT_EQ(json.at("preset"), "census");
  EXPECT_EQ(json.at("warnings"),
            nlohmann::json::array({"epsilon 3 is above the usual range 0.1-1 for census"}));
}

TEST(QueryResponseToJsonTest, CountOmitsBoundsAndCountNoiseScale) {
  dpq::v1::QueryResponse response;
  response.set_value(41.7);
  response.set_mechanism(dpq::v1::MECHANISM_LAPLACE);
  response.set_epsilon(0.1);
  response.set_noise_scale(10);
  response.set_sensitivity(1);
  response.set_request_id("r1");
  response.set_max_contributions(1);
  response.mutable_interval()->set_confidence(0.95);
  *response.mutable_budget() = SampleBudget();
  const nlohmann::json json = QueryResponseToJson(response, dpq::v1::AGGREGATE_COUNT);
  EXPECT_EQ(json.at("mechanism"), "laplace");
  EXPECT_EQ(json.at("value"), 41.7);
  EXPECT_EQ(json.at("noise_scale"), 10.0);
  EXPECT_EQ(json.at("interval").at("confidence"), 0.95);
  EXPECT_EQ(json.at("budget").at("epsilon_remaining"), 0.75);
  EXPECT_EQ(json.at("request_id"), "r1");
  EXPECT_EQ(json.at("replayed"), false);
  EXPECT_EQ(json.at("max_contributions"), 1);
  EXPECT_FALSE(json.contains("lower"));
  EXPECT_FALSE(json.contains("upper"));
  EXPECT_FALSE(json.contains("count_noise_scale"));
}

TEST(QueryResponseToJsonTest, MeanHasBoundsAndCountNoiseScale) {
  dpq::v1::QueryResponse response;
  response.set_mechanism(dpq::v1::MECHANISM_GAUSSIAN);
  response.set_lower(-5);
  response.set_upper(5);
  response.set_count_noise_scale(2.5);
  const nlohmann::json json = QueryResponseToJson(response, dpq::v1::AGGREGATE_MEAN);
  EXPECT_EQ(json.at("mechanism"), "gaussian");
  EXPECT_EQ(json.at("lower"), -5.0);
  EXPECT_EQ(json.at("upper"), 5.0);
  EXPECT_EQ(json.at("count_noise_scale"), 2.5);
}

TEST(QueryResponseToJsonTest, NewFieldsHaveDefaultsForAScalarAnswer) {
  const nlohmann::json json = QueryResponseToJson({}, dpq::v1::AGGREGATE_COUNT);
  EXPECT_EQ(json.at("rows"), nlohmann::json::array());
  EXPECT_EQ(json.at("cached"), false);
  EXPECT_EQ(json.at("warnings"), nlohmann::json::array());
  EXPECT_EQ(json.at("max_partitions"), 0);
}

TEST(QueryResponseToJsonTest, VarianceAndStddevHaveCountNoiseScale) {
  EXPECT_TRUE(QueryResponseToJson({}, dpq::v1::AGGREGATE_VARIANCE).contains("count_noise_scale"));
  EXPECT_TRUE(QueryResponseToJson({}, dpq::v1::AGGREGATE_STDDEV).contains("count_noise_scale"));
  EXPECT_FALSE(QueryResponseToJson({}, dpq::v1::AGGREGATE_HISTOGRAM).contains("count_noise_scale"));
}

TEST(QueryResponseToJsonTest, PrintsRowsCachedWarningsAndMaxPartitions) {
  dpq::v1::QueryResponse response;
  response.set_cached(true);
  response.set_max_partitions(2);
  response.add_warnings("w1");
  dpq::v1::ResultRow* row = response.add_rows();
  row->add_key("oslo");
  row->set_value(3);
  const nlohmann::json json = QueryResponseToJson(response, dpq::v1::AGGREGATE_COUNT);
  EXPECT_EQ(json.at("cached"), true);
  EXPECT_EQ(json.at("max_partitions"), 2);
  EXPECT_EQ(json.at("warnings"), nlohmann::json::array({"w1"}));
  ASSERT_EQ(json.at("rows").size(), 1u);
  EXPECT_EQ(json.at("rows")[0].at("key"), nlohmann::json::array({"oslo"}));
}

TEST(ResultRowToJsonTest, IntervalRowHasEveryField) {
  dpq::v1::ResultRow row;
  row.add_key("oslo");
  row.add_key("f");
  row.set_label("[0, 10)");
  row.set_value(12);
  row.set_noise_scale(2);
  row.mutable_interval()->set_confidence(0.9);
  row.mutable_interval()->set_lower(8);
  row.mutable_interval()->set_upper(16);
  EXPECT_EQ(ResultRowToJson(row),
            (nlohmann::json{{"key", {"oslo", "f"}},
                            {"label", "[0, 10)"},
                            {"value", 12.0},
                            {"interval", {{"confidence", 0.9}, {"lower", 8.0}, {"upper", 16.0}}},
                            {"noise_scale", 2.0},
                            {"rank_error", 0.0}}));
}

TEST(ResultRowToJsonTest, QuantileRowHasNullIntervalAndRankError) {
  dpq::v1::ResultRow row;
  row.set_label("q=0.5");
  row.set_value(41);
  row.set_rank_error(7.5);
  const nlohmann::json json = ResultRowToJson(row);
  EXPECT_TRUE(json.at("interval").is_null());
  EXPECT_EQ(json.at("rank_error"), 7.5);
  EXPECT_EQ(json.at("key"), nlohmann::json::array());
}

// The NULL group (ResultRow.null_keys) is JSON null; "" without null_keys stays a string.
TEST(ResultRowToJsonTest, NullKeysAreJsonNull) {
  dpq::v1::ResultRow row;
  row.add_key("");
  row.add_key("");
  row.add_null_keys(1);
  row.set_value(3);
  EXPECT_EQ(ResultRowToJson(row).at("key"), (nlohmann::json::array({"", nullptr})));
}

TEST(QueryBatchResponseToJsonTest, AnswersUseTheirRequestsAggregates) {
  dpq::v1::QueryBatchRequest request;
  request.add_queries()->set_aggregate(dpq::v1::AGGREGATE_MEAN);
  request.add_queries()->set_aggregate(dpq::v1::AGGREGATE_COUNT);
  dpq::v1::QueryBatchResponse response;
  response.set_request_id("b1");
  response.set_epsilon(0.7);
  response.set_delta(1e-6);
  response.set_epsilon_sum(1);
  response.set_replayed(true);
  *response.mutable_budget() = SampleBudget();
  response.add_answers()->set_value(1);
  response.add_answers()->set_value(2);
  response.add_answers()->set_value(3);  // one more than asked: still printed
  const nlohmann::json json = QueryBatchResponseToJson(response, request);
  EXPECT_EQ(json.at("request_id"), "b1");
  EXPECT_EQ(json.at("epsilon"), 0.7);
  EXPECT_EQ(json.at("delta"), 1e-6);
  EXPECT_EQ(json.at("epsilon_sum"), 1.0);
  EXPECT_EQ(json.at("replayed"), true);
  EXPECT_EQ(json.at("budget"), BudgetToJson(SampleBudget()));
  ASSERT_EQ(json.at("answers").size(), 3u);
  EXPECT_TRUE(json.at("answers")[0].contains("count_noise_scale"));
  EXPECT_FALSE(json.at("answers")[1].contains("count_noise_scale"));
  EXPECT_EQ(json.at("answers")[2].at("value"), 3.0);
  EXPECT_EQ(json.size(), 7u);
}

TEST(PlanResponseToJsonTest, HasEveryFieldAndNullForInfiniteError) {
  dpq::v1::PlanResponse response;
  response.set_epsilon(0.5);
  response.set_mechanism(dpq::v1::MECHANISM_GAUSSIAN);
  response.set_error(std::numeric_limits<double>::infinity());
  response.add_warnings("w");
  const nlohmann::json json = PlanResponseToJson(response);
  for (const char* key : {"epsilon", "delta", "mechanism", "sensitivity", "noise_scale", "error",
                          "confidence", "rank_error", "warnings", "components"}) {
    EXPECT_TRUE(json.contains(key)) << key;
  }
  // The report's optional parts (quantile, keys, value_expression) are absent when unset.
  EXPECT_EQ(json.size(), 10u);
  EXPECT_EQ(json.at("rank_error"), false);
  EXPECT_EQ(json.at("mechanism"), "gaussian");
  EXPECT_TRUE(json.at("error").is_null());
  EXPECT_EQ(json.at("warnings"), nlohmann::json::array({"w"}));
}

TEST(CreateAnalystResponseToJsonTest, PrintsRoleWordAndToken) {
  dpq::v1::CreateAnalystResponse response;
  response.set_name("alice");
  response.set_role(dpq::v1::ROLE_ANALYST);
  response.set_token("secret");
  EXPECT_EQ(CreateAnalystResponseToJson(response),
            (nlohmann::json{{"name", "alice"}, {"role", "analyst"}, {"token", "secret"}}));
}

TEST(GrantToJsonTest, RestatesTheRequest) {
  dpq::v1::GrantRequest request;
  request.set_analyst("alice");
  request.set_dataset("people");
  EXPECT_EQ(GrantToJson(request),
            (nlohmann::json{{"analyst", "alice"}, {"dataset", "people"}, {"granted", true}}));
}

TEST(AuditEntryToJsonTest, HasEveryFieldWithEnumWords) {
  dpq::v1::AuditEntry entry;
  entry.set_seq(7);
  entry.set_aggregate(dpq::v1::AGGREGATE_SUM);
  entry.set_mechanism(dpq::v1::MECHANISM_LAPLACE);
  entry.set_column("income");
  entry.set_rows(3);
  entry.set_kind("query");
  entry.set_datasets("patients,visits");
  entry.set_blocks("day:2026-11-29:2026-12-05");
  const nlohmann::json json = AuditEntryToJson(entry);
  EXPECT_EQ(json.size(), 15u);
  EXPECT_EQ(json.at("datasets"), "patients,visits");
  EXPECT_EQ(json.at("blocks"), "day:2026-11-29:2026-12-05");
  EXPECT_EQ(json.at("kind"), "query");
  EXPECT_EQ(json.at("rows"), 3);
  EXPECT_EQ(json.at("seq"), 7);
  EXPECT_EQ(json.at("aggregate"), "sum");
  EXPECT_EQ(json.at("mechanism"), "laplace");
  EXPECT_EQ(json.at("column"), "income");
}

TEST(CreateDatasetResponseToJsonTest, NestsDatasetAndRowsLoaded) {
  dpq::v1::CreateDatasetResponse response;
  response.mutable_dataset()->set_name("people");
  response.set_rows_loaded(1234);
  const nlohmann::json json = CreateDatasetResponseToJson(response);
  EXPECT_EQ(json.at("dataset").at("name"), "people");
  EXPECT_EQ(json.at("rows_loaded"), 1234);
}

TEST(ErrorToJsonTest, HasCodeAndMessage) {
  EXPECT_EQ(ErrorToJson("RESOURCE_EXHAUSTED", "budget exhausted").dump(),
            R"({"error":{"code":"RESOURCE_EXHAUSTED","message":"budget exhausted"}})");
}

TEST(WriteJsonTest, ReplacesInvalidUtf8InsteadOfThrowing) {
  std::ostringstream out;
  WriteJson(out, ErrorToJson("INTERNAL", "bad \xff byte"));
  EXPECT_THAT(out.str(), HasSubstr("bad \xEF\xBF\xBD byte"));
  EXPECT_EQ(nlohmann::json::parse(out.str()).at("error").at("code"), "INTERNAL");
}

}  // namespace
}  // namespace dpqctl
