// The admin lifecycle of principals and grants, `whoami` and `status`: one RPC each.
#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "client/dpqctl/command_table.h"
#include "client/dpqctl/commands.h"
#include "client/dpqctl/json_output.h"
#include "client/dpqctl/rpc_runner.h"
#include "client/dpqctl/text_output.h"
#include "dpq/v1/dpq.grpc.pb.h"

namespace dpqctl {
namespace {

using dpq::v1::AdminService;
using dpq::v1::AnalystService;

}  // namespace

int RunAnalystList(const GlobalOptions& options, const Output& output) {
  dpq::v1::ListAnalystsRequest request;
  return RunRpc<dpq::v1::ListAnalystsResponse>(
      options, output, kDefaultTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::ListAnalystsResponse* response) {
        return AdminService::NewStub(channel)->ListAnalysts(context, request, response);
      },
      ListAnalystsResponseToJson, WriteListAnalystsText);
}

int RunAnalystRevoke(const GlobalOptions& options, const Output& output, const std::string& name) {
  dpq::v1::RevokeAnalystRequest request;
  request.set_name(name);
  return RunRpc<dpq::v1::RevokeAnalystResponse>(
      options, output, kDefaultTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::RevokeAnalystResponse* response) {
        return AdminService::NewStub(channel)->RevokeAnalyst(context, request, response);
      },
      [&](const dpq::v1::RevokeAnalystResponse&) {
        return nlohmann::json{{"name", name}, {"revoked", true}};
      },
      [&](std::ostream& out, const dpq::v1::RevokeAnalystResponse&) {
        out << "revoked '" << name << "': its token no longer works; its audit history stays\n";
      });
}

int RunTokenRotate(const GlobalOptions& options, const Output& output, const std::string& name) {
  dpq::v1::RotateTokenRequest request;
  request.set_name(name);
  return RunRpc<dpq::v1::CreateAnalystResponse>(
      options, output, kDefaultTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::CreateAnalystResponse* response) {
        return AdminService::NewStub(channel)->RotateToken(context, request, response);
      },
      CreateAnalystResponseToJson,
      [&](std::ostream& out, const dpq::v1::CreateAnalystResponse& response) {
        out << "new token for '" << response.name() << "': " << response.token() << '\n'
            << "The old token stops working with its next request. This one is shown only once: "
               "store it now.\n";
      });
}

int RunGrantRevoke(const GlobalOptions& options, const Output& output, const std::string& analyst,
                   const std::string& dataset) {
  dpq::v1::RevokeGrantRequest request;
  request.set_analyst(analyst);
  request.set_dataset(dataset);
  return RunRpc<dpq::v1::RevokeGrantResponse>(
      options, output, kDefaultTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::RevokeGrantResponse* response) {
        return AdminService::NewStub(channel)->RevokeGrant(context, request, response);
      },
      [&](const dpq::v1::RevokeGrantResponse&) {
        return nlohmann::json{{"analyst", analyst}, {"dataset", dataset}, {"granted", false}};
      },
      [&](std::ostream& out, const dpq::v1::RevokeGrantResponse&) {
        out << "revoked the grant of '" << analyst << "' on dataset '" << dataset
            << "' (its spend is kept: granting again restores it)\n";
      });
}

int RunGrantList(const GlobalOptions& options, const Output& output, const std::string& dataset) {
  dpq::v1::ListGrantsRequest request;
  request.set_dataset(dataset);
  return RunRpc<dpq::v1::ListGrantsResponse>(
      options, output, kDefaultTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::ListGrantsResponse* response) {
        return AdminService::NewStub(channel)->ListGrants(context, request, response);
      },
      ListGrantsResponseToJson, WriteListGrantsText);
}

int RunWhoAmI(const GlobalOptions& options, const Output& output) {
  dpq::v1::WhoAmIRequest request;
  return RunRpc<dpq::v1::WhoAmIResponse>(
      options, output, kDefaultTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::WhoAmIResponse* response) {
        return AnalystService::NewStub(channel)->WhoAmI(context, request, response);
      },
      WhoAmIResponseToJson, WriteWhoAmIText);
}

int RunStatus(const GlobalOptions& options, const Output& output) {
  dpq::v1::ServerStatusRequest request;
  return RunRpc<dpq::v1::ServerStatusResponse>(
      options, output, kDefaultTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::ServerStatusResponse* response) {
        return AdminService::NewStub(channel)->ServerStatus(context, request, response);
      },
      ServerStatusResponseToJson, WriteServerStatusText);
}

void RegisterServerInfoCommands(CLI::App& app, CommandLine& command_line) {
  command_line.RunWhenParsed(
      app.add_subcommand("whoami", "who this token belongs to, and the datasets it may query"),
      RunWhoAmI);
  command_line.RunWhenParsed(
      app.add_subcommand("status",
                         "server and schema version, database, every dataset's budget (admin)"),
      RunStatus);
}

}  // namespace dpqctl
