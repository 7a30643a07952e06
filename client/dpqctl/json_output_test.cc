#include "client/dpqctl/json_output.h"

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
  dataset.set_version(3);
  dataset.set_created_at("2024-01-02T03:04:05Z");
  dataset.add_columns()->set_name("id");
  const nlohmann::json json = DatasetToJson(dataset);
  EXPECT_EQ(json.at("name"), "people");
  EXPECT_EQ(json.at("privacy_unit"), "id");
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
  for (const char* key : {"dataset", "epsilon_total", "delta_total", "epsilon_spent",
                          "delta_spent", "epsilon_remaining", "delta_remaining", "accountant"}) {
    EXPECT_TRUE(json.contains(key)) << key;
  }
  EXPECT_EQ(json.size(), 8u);
  EXPECT_EQ(json.at("epsilon_remaining"), 0.75);
  EXPECT_EQ(json.at("delta_spent"), 0.0);
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
  const nlohmann::json json = AuditEntryToJson(entry);
  EXPECT_EQ(json.size(), 11u);
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
