#include <memory>
#include <string>

#include "client/dpqctl/commands.h"
#include "client/dpqctl/enum_names.h"
#include "client/dpqctl/json_output.h"
#include "client/dpqctl/rpc_runner.h"
#include "client/dpqctl/text_output.h"
#include "dpq/v1/dpq.grpc.pb.h"

namespace dpqctl {

int RunQuery(const GlobalOptions& options, const Output& output, const QueryArgs& args) {
  // Only the spelling of words is checked here; ranges (epsilon > 0, delta for the mechanism,
  // bounds against the declared ones) are the server's to judge, with one message per field.
  absl::StatusOr<dpq::v1::Aggregate> aggregate = ParseAggregateWord(args.aggregate, "--aggregate");
  if (!aggregate.ok()) return ReportUsageError(output, aggregate.status());
  dpq::v1::QueryRequest request;
  if (!args.mechanism.empty()) {
    absl::StatusOr<dpq::v1::Mechanism> mechanism =
        ParseMechanismWord(args.mechanism, "--mechanism");
    if (!mechanism.ok()) return ReportUsageError(output, mechanism.status());
    request.set_mechanism(*mechanism);
  }
  request.set_dataset(args.dataset);
  request.set_aggregate(*aggregate);
  request.set_column(args.column);
  if (args.lower.has_value()) request.set_lower(*args.lower);
  if (args.upper.has_value()) request.set_upper(*args.upper);
  request.set_epsilon(args.epsilon);
  request.set_delta(args.delta);
  request.set_max_contributions(args.max_contributions);
  request.set_request_id(args.request_id);
  request.set_confidence(args.confidence);
  request.set_where(args.where);

  return RunRpc<dpq::v1::QueryResponse>(
      options, output, kDefaultTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::QueryResponse* response) {
        return dpq::v1::AnalystService::NewStub(channel)->Query(context, request, response);
      },
      [&](const dpq::v1::QueryResponse& response) {
        return QueryResponseToJson(response, *aggregate);
      },
      [&](std::ostream& out, const dpq::v1::QueryResponse& response) {
        WriteQueryText(out, response, *aggregate);
      });
}

}  // namespace dpqctl
