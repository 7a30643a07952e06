// `dpqctl health` against gRPC's own health service (grpc::EnableDefaultHealthCheckService, the
// one dpqd serves) on loopback, and against a closed port.
#include <memory>
#include <string>

#include "client/dpqctl/testing/cli_runner.h"
#include "dpq/v1/dpq.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"

namespace dpqctl {
namespace {

using ::dpqctl::testing::CliResult;
using ::dpqctl::testing::ClosedAddress;
using ::dpqctl::testing::RunDpqctl;
using ::testing::HasSubstr;

class HealthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::EnableDefaultHealthCheckService(true);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    // gRPC builds no server without one synchronous service; every method answers UNIMPLEMENTED.
    builder.RegisterService(&analyst_service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_NE(port_, 0);
    server_->GetHealthCheckService()->SetServingStatus("dpq.v1.AnalystService", true);
  }
  void TearDown() override { server_->Shutdown(); }

  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  dpq::v1::AnalystService::Service analyst_service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

TEST_F(HealthTest, ServingExitsZeroAndSaysSo) {
  CliResult result = RunDpqctl({"--server", address(), "health"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "SERVING\n");

  result =
      RunDpqctl({"--server", address(), "--json", "health", "--service", "dpq.v1.AnalystService"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.JsonOut(),
            (nlohmann::json{{"service", "dpq.v1.AnalystService"}, {"status", "SERVING"}}));
}

TEST_F(HealthTest, NotServingExitsOne) {
  server_->GetHealthCheckService()->SetServingStatus(false);
  CliResult result = RunDpqctl({"--server", address(), "health"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.out, "NOT_SERVING\n");

  result = RunDpqctl({"--server", address(), "--json", "health"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.JsonOut().at("status"), "NOT_SERVING");
}

TEST_F(HealthTest, UnknownServiceIsNotFound) {
  CliResult result = RunDpqctl({"--server", address(), "--json", "health", "--service", "no.Such"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.JsonOut().at("error").at("code"), "NOT_FOUND");
}

TEST(HealthClosedPortTest, NothingListeningIsUnavailable) {
  CliResult result = RunDpqctl({"--server", ClosedAddress(), "--timeout", "5", "health"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr("UNAVAILABLE"));
  EXPECT_EQ(result.out, "");
}

}  // namespace
}  // namespace dpqctl
