#include <memory>
#include <optional>
#include <string>

#include "client/dpqctl/commands.h"
#include "client/dpqctl/json_output.h"
#include "client/dpqctl/rpc_runner.h"
#include "client/dpqctl/text_output.h"
#include "dpq/v1/dpq.grpc.pb.h"

namespace dpqctl {

int RunBudgetSet(const GlobalOptions& options, const Output& output, const std::string& dataset,
                 double epsilon, double delta, const std::string& accountant,
                 const std::string& preset, std::optional<double> max_query_epsilon) {
  dpq::v1::SetBudgetRequest request;
  request.set_dataset(dataset);
  request.set_epsilon(epsilon);
  request.set_delta(delta);
  request.set_accountant(accountant);
  request.set_preset(preset);
  if (max_query_epsilon.has_value()) request.set_max_query_epsilon(*max_query_epsilon);
  return RunRpc<dpq::v1::Budget>(
      options, output, kDefaultTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::Budget* response) {
        return dpq::v1::AdminService::NewStub(channel)->SetBudget(context, request, response);
      },
      BudgetToJson,
      [&](std::ostream& out, const dpq::v1::Budget& budget) {
        WriteBudgetText(out, budget);
        WriteWarningsText(output.err, budget.warnings());
      });
}

int RunBudgetShow(const GlobalOptions& options, const Output& output, const std::string& dataset) {
  dpq::v1::GetBudgetRequest request;
  request.set_dataset(dataset);
  return RunRpc<dpq::v1::Budget>(
      options, output, kDefaultTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::Budget* response) {
        return dpq::v1::AnalystService::NewStub(channel)->GetBudget(context, request, response);
      },
      BudgetToJson, WriteBudgetText);
}

}  // namespace dpqctl
