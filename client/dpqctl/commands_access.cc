#include <memory>
#include <string>

#include "client/dpqctl/commands.h"
#include "client/dpqctl/enum_names.h"
#include "client/dpqctl/json_output.h"
#include "client/dpqctl/rpc_runner.h"
#include "client/dpqctl/text_output.h"
#include "dpq/v1/dpq.grpc.pb.h"

namespace dpqctl {

int RunAnalystCreate(const GlobalOptions& options, const Output& output, const std::string& name,
                     const std::string& role) {
  absl::StatusOr<dpq::v1::Role> parsed_role = ParseRoleWord(role, "--role");
  if (!parsed_role.ok()) return ReportUsageError(output, parsed_role.status());
  dpq::v1::CreateAnalystRequest request;
  request.set_name(name);
  request.set_role(*parsed_role);
  return RunRpc<dpq::v1::CreateAnalystResponse>(
      options, output, kDefaultTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::CreateAnalystResponse* response) {
        return dpq::v1::AdminService::NewStub(channel)->CreateAnalyst(context, request, response);
      },
      CreateAnalystResponseToJson, WriteCreateAnalystText);
}

int RunGrant(const GlobalOptions& options, const Output& output, const std::string& analyst,
             const std::string& dataset, std::optional<double> epsilon_cap,
             std::optional<double> delta_cap) {
  dpq::v1::GrantRequest request;
  request.set_analyst(analyst);
  request.set_dataset(dataset);
  if (epsilon_cap) request.set_epsilon_cap(*epsilon_cap);
  if (delta_cap) request.set_delta_cap(*delta_cap);
  return RunRpc<dpq::v1::GrantResponse>(
      options, output, kDefaultTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::GrantResponse* response) {
        return dpq::v1::AdminService::NewStub(channel)->Grant(context, request, response);
      },
      [&](const dpq::v1::GrantResponse&) { return GrantToJson(request); },
      [&](std::ostream& out, const dpq::v1::GrantResponse&) { WriteGrantText(out, request); });
}

}  // namespace dpqctl
