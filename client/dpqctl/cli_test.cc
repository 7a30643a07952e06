// dpqctl driven in-process through RunCli, against a closed port and against a fake dpq server
// that records what it receives. The fake is a test double of the API only; it adds no noise and
// keeps no budget.
#include "client/dpqctl/cli.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "client/dpqctl/commands.h"
#include "client/dpqctl/testing/cli_runner.h"
#include "dpq/v1/dpq.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace dpqctl {
namespace {

using ::testing::HasSubstr;

using ::dpqctl::testing::CliResult;
using ::dpqctl::testing::ClosedAddress;
using ::dpqctl::testing::RunDpqctl;

using ::dpqctl::testing::WriteTempFile;

// --- without a server ------------------------------------------------------------------------

TEST(CliTest, HelpListsCommandsAndExitsZero) {
  CliResult result = RunDpqctl({"--help"});
  EXPECT_EQ(result.exit_code, 0);
  for (const char* command : {"dataset", "analyst", "grant", "budget", "query", "audit"}) {
    EXPECT_THAT(result.out, HasSubstr(command));
  }
}

TEST(CliTest, SubcommandHelpShowsItsOptions) {
  CliResult result = RunDpqctl({"dataset", "create", "--help"});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_THAT(result.out, HasSubstr("--privacy-unit"));
  EXPECT_THAT(result.out, HasSubstr("--bounds"));
}

TEST(CliTest, ClosedPortIsUnavailableWithJsonError) {
  CliResult result = RunDpqctl(
      {"--json", "--server", ClosedAddress(), "--timeout", "5", "budget", "show", "people"});
  EXPECT_EQ(result.exit_code, 1);
  const nlohmann::json json = result.JsonOut();
  EXPECT_EQ(json.at("error").at("code"), "UNAVAILABLE");
  EXPECT_TRUE(json.at("error").at("message").is_string());
  EXPECT_THAT(result.err, HasSubstr("UNAVAILABLE"));
}

TEST(CliTest, ClosedPortWithoutJsonPrintsNothingOnStdout) {
  CliResult result = RunDpqctl({"--server", ClosedAddress(), "--timeout", "5", "dataset", "list"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.out, "");
  EXPECT_THAT(result.err, HasSubstr("UNAVAILABLE"));
}

TEST(CliTest, CommandFunctionReportsUnavailable) {
  GlobalOptions options;
  options.server = ClosedAddress();
  options.timeout_seconds = 5;
  std::ostringstream out, err;
  EXPECT_EQ(RunAudit(options, Output{out, err, true}, "people"), kExitRpcError);
  EXPECT_EQ(nlohmann::json::parse(out.str()).at("error").at("code"), "UNAVAILABLE");
}

TEST(CliTest, MissingRequiredFlagIsUsageErrorWithJson) {
  CliResult result = RunDpqctl({"query", "people", "--aggregate", "count", "--json"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.JsonOut().at("error").at("code"), "INVALID_ARGUMENT");
  EXPECT_THAT(result.JsonOut().at("error").at("message").get<std::string>(),
              HasSubstr("--epsilon"));
}

TEST(CliTest, UnknownAggregateIsUsageError) {
  CliResult result =
      RunDpqctl({"--json", "query", "people", "--aggregate", "median", "--epsilon", "1"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.JsonOut().at("error").at("code"), "INVALID_ARGUMENT");
}

TEST(CliTest, NanEpsilonIsUsageError) {
  CliResult result =
      RunDpqctl({"--json", "query", "people", "--aggregate", "count", "--epsilon", "nan"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.JsonOut().at("error").at("message").get<std::string>(), HasSubstr("finite"));
}

TEST(CliTest, NonPositiveTimeoutIsUsageError) {
  EXPECT_EQ(RunDpqctl({"--timeout", "0", "dataset", "list"}).exit_code, 2);
}

TEST(CliTest, NoSubcommandIsUsageError) {
  CliResult result = RunDpqctl({"dataset"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.out, "");
}

TEST(CliTest, MalformedBoundsIsUsageErrorBeforeAnyCall) {
  const std::string csv = WriteTempFile("id,age\n1,30\n");
  // The closed port proves nothing was sent: a call would have exited 1 with UNAVAILABLE.
  CliResult result =
      RunDpqctl({"--json", "--server", ClosedAddress(), "dataset", "create", "people", "--csv", csv,
                 "--privacy-unit", "id", "--bounds", "age=10:1"});
  std::remove(csv.c_str());
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.JsonOut().at("error").at("code"), "INVALID_ARGUMENT");
  EXPECT_THAT(result.JsonOut().at("error").at("message").get<std::string>(), HasSubstr("--bounds"));
}

TEST(CliTest, BoundsOnTextColumnIsUsageError) {
  const std::string csv = WriteTempFile("id,city\n1,oslo\n");
  CliResult result =
      RunDpqctl({"--json", "--server", ClosedAddress(), "dataset", "create", "people", "--csv", csv,
                 "--privacy-unit", "id", "--bounds", "city=0:1"});
  std::remove(csv.c_str());
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.JsonOut().at("error").at("message").get<std::string>(),
              HasSubstr("numeric columns only"));
}

TEST(CliTest, CategoriesOnNumericColumnIsUsageErrorBeforeAnyCall) {
  const std::string csv = WriteTempFile("id,age\n1,30\n");
  CliResult result =
      RunDpqctl({"--json", "--server", ClosedAddress(), "dataset", "create", "people", "--csv", csv,
                 "--privacy-unit", "id", "--categories", "age=1|2"});
  std::remove(csv.c_str());
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.JsonOut().at("error").at("message").get<std::string>(),
              HasSubstr("text columns only"));
}

TEST(CliTest, DuplicateCategoryIsUsageError) {
  const std::string csv = WriteTempFile("id,city\n1,oslo\n");
  CliResult result =
      RunDpqctl({"--json", "--server", ClosedAddress(), "dataset", "create", "people", "--csv", csv,
                 "--privacy-unit", "id", "--categories", "city=oslo|oslo"});
  std::remove(csv.c_str());
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.JsonOut().at("error").at("message").get<std::string>(),
              HasSubstr("more than once"));
}

TEST(CliTest, UndeclaredTypesAreAUsageErrorBeforeAnyCall) {
  const std::string csv = WriteTempFile("id,age\n1,2.5\n");
  CliResult result =
      RunDpqctl({"--json", "--server", ClosedAddress(), "dataset", "create", "people", "--csv", csv,
                 "--privacy-unit", "id", "--type", "id=integer"});
  std::remove(csv.c_str());
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.JsonOut().at("error").at("code"), "INVALID_ARGUMENT");
  EXPECT_THAT(result.JsonOut().at("error").at("message").get<std::string>(),
              HasSubstr("Inferred from this file: --type age=double."));
}

TEST(CliTest, DatasetCreateHelpShowsCategories) {
  CliResult result = RunDpqctl({"dataset", "create", "--help"});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_THAT(result.out, HasSubstr("--categories"));
}

TEST(CliTest, MissingCsvFileIsUsageError) {
  CliResult result = RunDpqctl({"--json", "dataset", "create", "people", "--csv",
                                "/nonexistent/people.csv", "--privacy-unit", "id"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.JsonOut().at("error").at("message").get<std::string>(), HasSubstr("--csv"));
}

// --- against a fake server -------------------------------------------------------------------

class FakeAnalystService final : public dpq::v1::AnalystService::Service {
 public:
  grpc::Status GetBudget(grpc::ServerContext* context, const dpq::v1::GetBudgetRequest* request,
                         dpq::v1::Budget* response) override {
    Record(context);
    if (request->dataset() == "exhausted") {
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "budget of 'exhausted' is spent");
    }
    response->set_dataset(request->dataset());
    response->set_epsilon_total(1);
    response->set_epsilon_spent(0.25);
    response->set_epsilon_remaining(0.75);
    response->set_accountant("basic");
    return grpc::Status::OK;
  }

  grpc::Status Query(grpc::ServerContext* context, const dpq::v1::QueryRequest* request,
                     dpq::v1::QueryResponse* response) override {
    Record(context);
    std::lock_guard<std::mutex> lock(mutex_);
    last_query_ = *request;
    response->set_value(12.5);
    response->set_mechanism(request->mechanism() == dpq::v1::MECHANISM_UNSPECIFIED
                                ? dpq::v1::MECHANISM_LAPLACE
                                : request->mechanism());
    response->set_epsilon(request->epsilon());
    response->set_delta(request->delta());
    if (request->has_lower()) response->set_lower(request->lower());
    if (request->has_upper()) response->set_upper(request->upper());
    response->set_request_id(request->request_id().empty() ? "generated" : request->request_id());
    return grpc::Status::OK;
  }

  std::string authorization() {
    std::lock_guard<std::mutex> lock(mutex_);
    return authorization_;
  }
  dpq::v1::QueryRequest last_query() {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_query_;
  }

 private:
  void Record(grpc::ServerContext* context) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = context->client_metadata().find("authorization");
    authorization_ = it == context->client_metadata().end()
                         ? ""
                         : std::string(it->second.data(), it->second.size());
  }

  std::mutex mutex_;
  std::string authorization_;
  dpq::v1::QueryRequest last_query_;
};

class FakeAdminService final : public dpq::v1::AdminService::Service {
 public:
  grpc::Status CreateDataset(grpc::ServerContext* context,
                             grpc::ServerReader<dpq::v1::CreateDatasetRequest>* reader,
                             dpq::v1::CreateDatasetResponse* response) override {
    std::lock_guard<std::mutex> lock(mutex_);
    dpq::v1::CreateDatasetRequest request;
    bool first = true;
    while (reader->Read(&request)) {
      if (first) {
        if (!request.has_header()) {
          return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "header must come first");
        }
        header_ = request.header();
        first = false;
        continue;
      }
      if (request.has_end()) {
        end_bytes_ = request.end().csv_bytes();
        continue;
      }
      chunk_sizes_.push_back(request.csv_chunk().size());
      csv_ += request.csv_chunk();
    }
    *response->mutable_dataset()->mutable_columns() = header_.columns();
    response->mutable_dataset()->set_name(header_.name());
    response->mutable_dataset()->set_privacy_unit(header_.privacy_unit());
    response->set_rows_loaded(std::count(csv_.begin(), csv_.end(), '\n') - 1);
    return grpc::Status::OK;
  }

  grpc::Status CreateAnalyst(grpc::ServerContext*, const dpq::v1::CreateAnalystRequest* request,
                             dpq::v1::CreateAnalystResponse* response) override {
    response->set_name(request->name());
    response->set_role(request->role());
    response->set_token("tok-123");
    return grpc::Status::OK;
  }

  dpq::v1::DatasetHeader header() {
    std::lock_guard<std::mutex> lock(mutex_);
    return header_;
  }
  std::string csv() {
    std::lock_guard<std::mutex> lock(mutex_);
    return csv_;
  }
  std::vector<size_t> chunk_sizes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return chunk_sizes_;
  }
  int64_t end_bytes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return end_bytes_;
  }

 private:
  std::mutex mutex_;
  dpq::v1::DatasetHeader header_;
  std::string csv_;
  std::vector<size_t> chunk_sizes_;
  int64_t end_bytes_ = -1;
};

class CliFakeServerTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NE(server_.server(), nullptr); }

  FakeAnalystService analyst_;
  FakeAdminService admin_;
  ::dpqctl::testing::LoopbackServer server_{{&analyst_, &admin_}};
  const std::string address_ = server_.address();
};

TEST_F(CliFakeServerTest, BudgetShowSendsBearerTokenAndPrintsBudgetJson) {
  CliResult result =
      RunDpqctl({"--server", address_, "--token", "s3cret", "budget", "show", "people", "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(analyst_.authorization(), "Bearer s3cret");
  const nlohmann::json json = result.JsonOut();
  EXPECT_EQ(json.at("dataset"), "people");
  EXPECT_EQ(json.at("epsilon_remaining"), 0.75);
  EXPECT_EQ(json.at("accountant"), "basic");
  EXPECT_EQ(result.err, "");
}

TEST_F(CliFakeServerTest, NoTokenSendsNoAuthorizationHeader) {
  ASSERT_EQ(RunDpqctl({"--server", address_, "--token", "", "budget", "show", "people"}).exit_code,
            0);
  EXPECT_EQ(analyst_.authorization(), "");
}

TEST_F(CliFakeServerTest, ServerErrorCodeNameReachesJson) {
  CliResult result = RunDpqctl({"--server", address_, "--json", "budget", "show", "exhausted"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.JsonOut(), (nlohmann::json{{"error",
                                               {{"code", "RESOURCE_EXHAUSTED"},
                                                {"message", "budget of 'exhausted' is spent"}}}}));
}

TEST_F(CliFakeServerTest, UnimplementedRpcIsReportedByName) {
  CliResult result = RunDpqctl({"--server", address_, "--json", "audit", "people"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.JsonOut().at("error").at("code"), "UNIMPLEMENTED");
}

TEST_F(CliFakeServerTest, QuerySendsEveryFieldAndPrintsEnumWords) {
  CliResult result =
      RunDpqctl({"--server",    address_,       "--json",   "query",        "people",
                 "--aggregate", "mean",         "--column", "income",       "--lower",
                 "-5",          "--upper",      "5",        "--epsilon",    "0.5",
                 "--mechanism", "gaussian",     "--delta",  "1e-6",         "--max-contributions",
                 "3",           "--request-id", "q-1",      "--confidence", "0.9"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const dpq::v1::QueryRequest sent = analyst_.last_query();
  EXPECT_EQ(sent.dataset(), "people");
  EXPECT_EQ(sent.aggregate(), dpq::v1::AGGREGATE_MEAN);
  EXPECT_EQ(sent.column(), "income");
  ASSERT_TRUE(sent.has_lower());
  EXPECT_EQ(sent.lower(), -5);
  EXPECT_EQ(sent.upper(), 5);
  EXPECT_EQ(sent.epsilon(), 0.5);
  EXPECT_EQ(sent.delta(), 1e-6);
  EXPECT_EQ(sent.mechanism(), dpq::v1::MECHANISM_GAUSSIAN);
  EXPECT_EQ(sent.max_contributions(), 3);
  EXPECT_EQ(sent.request_id(), "q-1");
  EXPECT_EQ(sent.confidence(), 0.9);
  const nlohmann::json json = result.JsonOut();
  EXPECT_EQ(json.at("mechanism"), "gaussian");
  EXPECT_EQ(json.at("value"), 12.5);
  EXPECT_EQ(json.at("lower"), -5.0);
  EXPECT_TRUE(json.contains("count_noise_scale"));
  EXPECT_TRUE(json.contains("budget"));
}

TEST_F(CliFakeServerTest, CountQueryLeavesOptionalFieldsUnset) {
  CliResult result = RunDpqctl(
      {"--server", address_, "query", "people", "--aggregate", "count", "--epsilon", "1"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const dpq::v1::QueryRequest sent = analyst_.last_query();
  EXPECT_FALSE(sent.has_lower());
  EXPECT_FALSE(sent.has_upper());
  EXPECT_EQ(sent.mechanism(), dpq::v1::MECHANISM_UNSPECIFIED);
  EXPECT_THAT(result.out, HasSubstr("value:"));
  EXPECT_THAT(result.out, HasSubstr("laplace"));
}

TEST_F(CliFakeServerTest, DatasetCreateStreamsHeaderThenWholeFileInMebibyteChunks) {
  // ~2.6 MiB: three chunks, the last one partial.
  std::string csv = "id,age,income,city,note\r\n";
  for (int i = 0; csv.size() < (5u << 19); ++i) {
    csv += std::to_string(i) + "," + std::to_string(20 + i % 50) + "," + std::to_string(i % 7) +
           ".25,oslo,\r\n";
  }
  const std::string path = WriteTempFile(csv);
  CliResult result =
      RunDpqctl({"--server", address_, "--json", "dataset", "create", "--infer-types", "people",
                 "--csv", path, "--privacy-unit", "id", "--bounds", "age=0:120", "--bounds",
                 "income=0:10", "--type", "id=text"});
  std::remove(path.c_str());
  ASSERT_EQ(result.exit_code, 0) << result.err;

  const dpq::v1::DatasetHeader header = admin_.header();
  EXPECT_EQ(header.name(), "people");
  EXPECT_EQ(header.privacy_unit(), "id");
  ASSERT_EQ(header.columns_size(), 5);
  EXPECT_EQ(header.columns(0).type(), dpq::v1::COLUMN_TYPE_TEXT);  // declared
  EXPECT_EQ(header.columns(1).type(), dpq::v1::COLUMN_TYPE_INTEGER);
  EXPECT_EQ(header.columns(1).lower(), 0);
  EXPECT_EQ(header.columns(1).upper(), 120);
  EXPECT_EQ(header.columns(2).type(), dpq::v1::COLUMN_TYPE_DOUBLE);
  EXPECT_EQ(header.columns(3).type(), dpq::v1::COLUMN_TYPE_TEXT);
  EXPECT_EQ(header.columns(4).type(), dpq::v1::COLUMN_TYPE_TEXT);  // all empty
  EXPECT_FALSE(header.columns(3).has_lower());

  EXPECT_EQ(admin_.csv(), csv);
  EXPECT_EQ(admin_.end_bytes(), static_cast<int64_t>(csv.size())) << "the upload ends with `end`";
  const std::vector<size_t> chunks = admin_.chunk_sizes();
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[0], 1u << 20);
  EXPECT_EQ(chunks[1], 1u << 20);

  const nlohmann::json json = result.JsonOut();
  EXPECT_EQ(json.at("dataset").at("name"), "people");
  EXPECT_EQ(json.at("dataset").at("columns")[1].at("upper"), 120.0);
  EXPECT_TRUE(json.at("rows_loaded").is_number_integer());
}

TEST_F(CliFakeServerTest, DatasetCreateSendsCategoriesAndPrintsNoProgressOffTerminal) {
  const std::string path = WriteTempFile("id,city,sex\n1,oslo,f\n2,bergen,m\n");
  CliResult result = RunDpqctl({"--server", address_, "dataset", "create", "--infer-types",
                                "people", "--csv", path, "--privacy-unit", "id", "--categories",
                                "city=oslo|bergen|new york", "--categories", "sex=f|m"});
  std::remove(path.c_str());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const dpq::v1::DatasetHeader header = admin_.header();
  EXPECT_THAT(header.columns(1).categories(), ::testing::ElementsAre("oslo", "bergen", "new york"));
  EXPECT_THAT(header.columns(2).categories(), ::testing::ElementsAre("f", "m"));
  EXPECT_EQ(header.columns(0).categories_size(), 0);
  // The fake echoes the columns back: `dataset create` prints the schema with its categories.
  EXPECT_THAT(result.out, HasSubstr("CATEGORIES"));
  EXPECT_THAT(result.out, HasSubstr("oslo|bergen|new york"));
  // The progress line is for terminals only; the test's stderr buffer is none.
  EXPECT_EQ(result.err, "");
}

TEST_F(CliFakeServerTest, AnalystCreatePrintsTokenOnceWarning) {
  CliResult text = RunDpqctl({"--server", address_, "analyst", "create", "alice"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("tok-123"));
  EXPECT_THAT(text.out, HasSubstr("only once"));

  CliResult json =
      RunDpqctl({"--server", address_, "--json", "analyst", "create", "bob", "--role", "admin"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(json.JsonOut(),
            (nlohmann::json{{"name", "bob"}, {"role", "admin"}, {"token", "tok-123"}}));
}

}  // namespace
}  // namespace dpqctl
