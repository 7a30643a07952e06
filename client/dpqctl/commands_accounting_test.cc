// dpqctl price and calibrate driven in-process through RunCli: argument parsing (usage errors
// exit 2 and send nothing), what reaches the server, and the JSON/text printed. The fake
// AccountingService records requests and answers fixed numbers; it does no accounting.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <limits>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "client/dpqctl/cli.h"
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

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using ::dpqctl::testing::CliResult;
using ::dpqctl::testing::ClosedAddress;
using ::dpqctl::testing::RunDpqctl;

void ExpectUsageError(const CliResult& result, const std::string& message_part) {
  EXPECT_EQ(result.exit_code, 2) << result.out << result.err;
  ASSERT_FALSE(result.out.empty()) << result.err;
  EXPECT_EQ(result.JsonOut().at("error").at("code"), "INVALID_ARGUMENT");
  EXPECT_THAT(result.ErrorMessage(), HasSubstr(message_part));
}

// --- parsing, no server ----------------------------------------------------------------------

TEST(AccountingCliTest, HelpListsPriceAndCalibrate) {
  CliResult result = RunDpqctl({"--help"});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_THAT(result.out, HasSubstr("price"));
  EXPECT_THAT(result.out, HasSubstr("calibrate"));
}

TEST(AccountingCliTest, PriceHelpShowsEventSyntax) {
  CliResult result = RunDpqctl({"price", "--help"});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_THAT(result.out, HasSubstr("--event"));
  EXPECT_THAT(result.out, HasSubstr("subsampled-gaussian:q=Q,sigma=Z"));
}

TEST(AccountingCliTest, PriceWithoutEventIsUsageError) {
  ExpectUsageError(RunDpqctl({"--json", "--server", ClosedAddress(), "price", "--accountant", "rdp",
                              "--delta", "1e-5"}),
                   "--event");
}

TEST(AccountingCliTest, PriceWithoutAccountantIsUsageError) {
  ExpectUsageError(RunDpqctl({"--json", "--server", ClosedAddress(), "price", "--delta", "1e-5",
                              "--event", "pure:epsilon=1"}),
                   "--accountant");
}

TEST(AccountingCliTest, PriceWithoutDeltaIsUsageError) {
  ExpectUsageError(RunDpqctl({"--json", "--server", ClosedAddress(), "price", "--accountant",
                              "basic", "--event", "pure:epsilon=1"}),
                   "--delta");
}

TEST(AccountingCliTest, PriceNanDeltaIsUsageError) {
  ExpectUsageError(RunDpqctl({"--json", "--server", ClosedAddress(), "price", "--accountant",
                              "basic", "--delta", "nan", "--event", "pure:epsilon=1"}),
                   "finite");
}

TEST(AccountingCliTest, PriceEmptyEventIsUsageError) {
  ExpectUsageError(RunDpqctl({"--json", "--server", ClosedAddress(), "price", "--accountant",
                              "basic", "--delta", "1e-5", "--event", ""}),
                   "--event");
}

TEST(AccountingCliTest, CalibrateNonIntegerStepsIsUsageError) {
  // (An empty value is CLI11's "use the default", i.e. 0, which the server refuses by name.)
  for (const char* steps : {"1.5", "ten", "1e3x"}) {
    SCOPED_TRACE(steps);
    ExpectUsageError(
        RunDpqctl({"--json", "--server", ClosedAddress(), "calibrate", "--accountant", "rdp",
                   "--target-epsilon", "3", "--delta", "1e-5", "--q", "0.01", "--steps", steps}),
        "--steps");
  }
}

TEST(AccountingCliTest, CalibrateMissingEachRequiredFlagIsUsageError) {
  const std::vector<std::vector<std::string>> flags = {{"--accountant", "rdp"},
                                                       {"--target-epsilon", "3"},
                                                       {"--delta", "1e-5"},
                                                       {"--q", "0.01"},
                                                       {"--steps", "100"}};
  for (size_t skip = 0; skip < flags.size(); ++skip) {
    SCOPED_TRACE(flags[skip][0]);
    std::vector<std::string> args = {"--json", "--server", ClosedAddress(), "calibrate"};
    for (size_t i = 0; i < flags.size(); ++i) {
      if (i != skip) args.insert(args.end(), flags[i].begin(), flags[i].end());
    }
    ExpectUsageError(RunDpqctl(args), flags[skip][0]);
  }
}

TEST(AccountingCliTest, CalibrateInfiniteTargetIsUsageError) {
  ExpectUsageError(
      RunDpqctl({"--json", "--server", ClosedAddress(), "calibrate", "--accountant", "rdp",
                 "--target-epsilon", "inf", "--delta", "1e-5", "--q", "0.01", "--steps", "100"}),
      "finite");
}

TEST(AccountingCliTest, PriceAgainstClosedPortIsUnavailable) {
  CliResult result =
      RunDpqctl({"--json", "--server", ClosedAddress(), "--timeout", "5", "price", "--accountant",
                 "basic", "--delta", "1e-5", "--event", "pure:epsilon=1"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.JsonOut().at("error").at("code"), "UNAVAILABLE");
}

// --- against a fake server -------------------------------------------------------------------

class FakeAccountingService final : public dpq::v1::AccountingService::Service {
 public:
  grpc::Status Price(grpc::ServerContext* context, const dpq::v1::PriceRequest* request,
                     dpq::v1::PriceResponse* response) override {
    std::lock_guard<std::mutex> lock(mutex_);
    Record(context);
    last_price_ = *request;
    if (request->accountant() == "nope") {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "accountant must be basic, advanced, rdp, zcdp or pld, got 'nope'");
    }
    response->set_epsilon(
        request->accountant() == "infinite" ? std::numeric_limits<double>::infinity() : 4.5);
    response->set_delta(request->delta());
    response->set_accountant(request->accountant());
    return grpc::Status::OK;
  }

  grpc::Status Calibrate(grpc::ServerContext* context, const dpq::v1::CalibrateRequest* request,
                         dpq::v1::CalibrateResponse* response) override {
    std::lock_guard<std::mutex> lock(mutex_);
    Record(context);
    last_calibrate_ = *request;
    response->set_noise_multiplier(1.25);
    response->set_epsilon(2.75);
    return grpc::Status::OK;
  }

  dpq::v1::PriceRequest last_price() {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_price_;
  }
  dpq::v1::CalibrateRequest last_calibrate() {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_calibrate_;
  }
  std::string authorization() {
    std::lock_guard<std::mutex> lock(mutex_);
    return authorization_;
  }

 private:
  void Record(grpc::ServerContext* context) {
    auto it = context->client_metadata().find("authorization");
    authorization_ = it == context->client_metadata().end()
                         ? ""
                         : std::string(it->second.data(), it->second.size());
  }

  std::mutex mutex_;
  std::string authorization_;
  dpq::v1::PriceRequest last_price_;
  dpq::v1::CalibrateRequest last_calibrate_;
};

class AccountingCliFakeServerTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NE(server_.server(), nullptr); }

  FakeAccountingService service_;
  ::dpqctl::testing::LoopbackServer server_{{&service_}};
  const std::string address_ = server_.address();
};

TEST_F(AccountingCliFakeServerTest, PriceSendsEveryEventInOrderAndPrintsJson) {
  CliResult result =
      RunDpqctl({"--server", address_, "--token", "t0k", "--json", "price", "--accountant", "rdp",
                 "--delta", "1e-5", "--event", "laplace:scale=10,count=100", "--event",
                 "gaussian:sigma=5,sensitivity=2"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const dpq::v1::PriceRequest sent = service_.last_price();
  EXPECT_EQ(sent.accountant(), "rdp");
  EXPECT_EQ(sent.delta(), 1e-5);
  EXPECT_THAT(sent.events(),
              ElementsAre("laplace:scale=10,count=100", "gaussian:sigma=5,sensitivity=2"));
  EXPECT_EQ(service_.authorization(), "Bearer t0k");
  EXPECT_EQ(result.JsonOut(),
            (nlohmann::json{{"epsilon", 4.5}, {"delta", 1e-5}, {"accountant", "rdp"}}));
  EXPECT_EQ(result.err, "");
}

TEST_F(AccountingCliFakeServerTest, PriceInfiniteEpsilonIsJsonNull) {
  CliResult result = RunDpqctl({"--server", address_, "--json", "price", "--accountant", "infinite",
                                "--delta", "1e-5", "--event", "approx:epsilon=1,delta=0.1"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(result.JsonOut().at("epsilon").is_null());
}

TEST_F(AccountingCliFakeServerTest, PriceTextNamesAccountantAndNumbers) {
  CliResult result = RunDpqctl({"--server", address_, "price", "--accountant", "pld", "--delta",
                                "1e-5", "--event", "pure:epsilon=0.1,count=3"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("pld"));
  EXPECT_THAT(result.out, HasSubstr("4.5"));
  EXPECT_THAT(result.out, HasSubstr("1e-05"));
}

TEST_F(AccountingCliFakeServerTest, ServerRefusalReachesJsonWithExitOne) {
  CliResult result = RunDpqctl({"--server", address_, "--json", "price", "--accountant", "nope",
                                "--delta", "1e-5", "--event", "pure:epsilon=1"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.JsonOut().at("error").at("code"), "INVALID_ARGUMENT");
  EXPECT_THAT(result.ErrorMessage(), HasSubstr("accountant"));
}

TEST_F(AccountingCliFakeServerTest, CalibrateSendsEveryFieldAndPrintsJson) {
  CliResult result = RunDpqctl({"--server", address_, "--json", "calibrate", "--accountant", "rdp",
                                "--target-epsilon", "3", "--delta", "1e-5", "--q",
                                "0.004266666666666667", "--steps", "10000"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const dpq::v1::CalibrateRequest sent = service_.last_calibrate();
  EXPECT_EQ(sent.accountant(), "rdp");
  EXPECT_EQ(sent.target_epsilon(), 3);
  EXPECT_EQ(sent.delta(), 1e-5);
  EXPECT_EQ(sent.q(), 0.004266666666666667);
  EXPECT_EQ(sent.steps(), 10000);
  EXPECT_EQ(result.JsonOut(), (nlohmann::json{{"noise_multiplier", 1.25}, {"epsilon", 2.75}}));
}

TEST_F(AccountingCliFakeServerTest, CalibrateLeavesRangeChecksToServer) {
  // Zero steps, q = 0 and a non-positive target parse fine: the server names the bad field.
  CliResult result =
      RunDpqctl({"--server", address_, "--json", "calibrate", "--accountant", "basic",
                 "--target-epsilon", "-1", "--delta", "0", "--q", "0", "--steps", "0"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const dpq::v1::CalibrateRequest sent = service_.last_calibrate();
  EXPECT_EQ(sent.target_epsilon(), -1);
  EXPECT_EQ(sent.steps(), 0);
  EXPECT_EQ(sent.q(), 0);
}

TEST_F(AccountingCliFakeServerTest, CalibrateTextShowsNoiseMultiplier) {
  CliResult result =
      RunDpqctl({"--server", address_, "calibrate", "--accountant", "zcdp", "--target-epsilon", "3",
                 "--delta", "1e-5", "--q", "0.01", "--steps", "100"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("noise multiplier: 1.25"));
}

}  // namespace
}  // namespace dpqctl
