// `dpqctl health`: the standard grpc.health.v1.Health/Check, so that a container HEALTHCHECK (or
// an operator) can ask dpqd whether it serves without a token and without another tool: Debian
// ships no grpc_health_probe, and the runtime image carries no Python.
#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "client/dpqctl/command_table.h"
#include "client/dpqctl/commands.h"
#include "client/dpqctl/json_output.h"
#include "client/dpqctl/rpc_runner.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace dpqctl {

int RunHealth(const GlobalOptions& options, const Output& output, const std::string& service) {
  using grpc::health::v1::HealthCheckResponse;
  absl::StatusOr<Connection> connection = Connection::Open(options, kHealthTimeoutSeconds);
  if (!connection.ok()) return ReportUsageError(output, connection.status());
  grpc::ClientContext context;
  connection->Prepare(&context);
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  HealthCheckResponse response;
  const grpc::Status status =
      grpc::health::v1::Health::NewStub(connection->channel())->Check(&context, request, &response);
  // NOT_FOUND (unknown service) and UNAVAILABLE (nothing listening) are reported like any failed
  // call, exit 1.
  if (!status.ok()) return ReportRpcError(output, status);
  const std::string name = HealthCheckResponse::ServingStatus_Name(response.status());
  if (output.json) {
    WriteJson(output.out, nlohmann::json{{"service", service}, {"status", name}});
  } else {
    output.out << name << "\n";
  }
  // Anything but SERVING is unhealthy: exit 1, which is also what Docker's HEALTHCHECK reads as
  // unhealthy.
  return response.status() == HealthCheckResponse::SERVING ? kExitOk : kExitRpcError;
}

void RegisterHealthCommand(CLI::App& app, CommandLine& command_line) {
  std::string& service = command_line.Keep<std::string>();
  CLI::App* health = app.add_subcommand(
      "health", "gRPC health of the server (grpc.health.v1): exit 0 only when SERVING; no token");
  health->add_option("--service", service,
                     "a service's full name, e.g. dpq.v1.AnalystService (default: the server)");
  command_line.RunWhenParsed(health,
                             [&service](const GlobalOptions& options, const Output& output) {
                               return RunHealth(options, output, service);
                             });
}

}  // namespace dpqctl
