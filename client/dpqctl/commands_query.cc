#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/dpqctl/commands.h"
#include "client/dpqctl/enum_names.h"
#include "client/dpqctl/json_output.h"
#include "client/dpqctl/query_request.h"
#include "client/dpqctl/rpc_runner.h"
#include "client/dpqctl/text_output.h"
#include "dpq/v1/dpq.grpc.pb.h"
#include "nlohmann/json.hpp"

namespace dpqctl {
namespace internal {
namespace {

// Up to 1000 queries are answered (and one joint price computed by PLD composition) in one call:
// more than a single query's deadline.
constexpr double kQueryBatchTimeoutSeconds = 120;

absl::StatusOr<nlohmann::json> ReadJsonFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::InvalidArgumentError(absl::StrCat("--file: cannot open '", path, "'"));
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) {
    return absl::InvalidArgumentError(absl::StrCat("--file: reading '", path, "' failed"));
  }
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    // e.what() gives the line and column of a syntax error, or names an overflowing number.
    return absl::InvalidArgumentError(
        absl::StrCat("--file '", path, "': not valid JSON: ", e.what()));
  }
}

}  // namespace
}  // namespace internal

int RunQuery(const GlobalOptions& options, const Output& output, const QueryArgs& args) {
  // Only the spelling of words is checked here; ranges (epsilon > 0, delta for the mechanism,
  // bounds against the declared ones) are the server's to judge, with one message per field.
  absl::StatusOr<dpq::v1::QueryRequest> request = BuildQueryRequest(args);
  if (!request.ok()) return ReportUsageError(output, request.status());
  const dpq::v1::Aggregate aggregate = request->aggregate();
  return RunRpc<dpq::v1::QueryResponse>(
      options, output, kDefaultTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::QueryResponse* response) {
        return dpq::v1::AnalystService::NewStub(channel)->Query(context, *request, response);
      },
      [&](const dpq::v1::QueryResponse& response) {
        return QueryResponseToJson(response, aggregate);
      },
      [&](std::ostream& out, const dpq::v1::QueryResponse& response) {
        WriteQueryText(out, response, aggregate, args.group_by);
        WriteWarningsText(output.err, response.warnings());
      });
}

int RunQueryBatch(const GlobalOptions& options, const Output& output, const QueryBatchArgs& args) {
  absl::StatusOr<nlohmann::json> document = internal::ReadJsonFile(args.file);
  if (!document.ok()) return ReportUsageError(output, document.status());
  absl::StatusOr<std::vector<QueryArgs>> queries = ParseQueryBatchJson(*document, "");
  if (!queries.ok()) {
    return ReportUsageError(
        output, absl::StrCat("--file '", args.file, "': ", queries.status().message()));
  }
  dpq::v1::QueryBatchRequest request;
  request.set_dataset(args.dataset);
  request.set_delta(args.delta);
  request.set_request_id(args.request_id);
  for (size_t i = 0; i < queries->size(); ++i) {
    // The queries' dataset fields stay empty (they default to the batch's, as the proto allows).
    absl::StatusOr<dpq::v1::QueryRequest> query =
        BuildQueryRequest((*queries)[i], absl::StrCat("queries[", i, "]."));
    if (!query.ok()) {
      return ReportUsageError(
          output, absl::StrCat("--file '", args.file, "': ", query.status().message()));
    }
    *request.add_queries() = *std::move(query);
  }
  return RunRpc<dpq::v1::QueryBatchResponse>(
      options, output, internal::kQueryBatchTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::QueryBatchResponse* response) {
        return dpq::v1::AnalystService::NewStub(channel)->QueryBatch(context, request, response);
      },
      [&](const dpq::v1::QueryBatchResponse& response) {
        return QueryBatchResponseToJson(response, request);
      },
      [&](std::ostream& out, const dpq::v1::QueryBatchResponse& response) {
        WriteQueryBatchText(out, response, request);
        for (int i = 0; i < response.answers_size(); ++i) {
          WriteWarningsText(output.err, response.answers(i).warnings(),
                            absl::StrCat("query ", i + 1, ": "));
        }
      });
}

int RunPlan(const GlobalOptions& options, const Output& output, const PlanArgs& args) {
  if (args.epsilon.has_value() == args.target_error.has_value()) {
    return ReportUsageError(output, "give exactly one of --epsilon and --target-error");
  }
  absl::StatusOr<dpq::v1::QueryRequest> query = BuildQueryRequest(args.query);
  if (!query.ok()) return ReportUsageError(output, query.status());
  dpq::v1::PlanRequest request;
  *request.mutable_query() = *std::move(query);
  request.mutable_query()->set_epsilon(args.epsilon.value_or(0));
  request.set_target_error(args.target_error.value_or(0));
  request.set_expected_count(args.expected_count);
  return RunRpc<dpq::v1::PlanResponse>(
      options, output, kDefaultTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::PlanResponse* response) {
        return dpq::v1::AnalystService::NewStub(channel)->Plan(context, request, response);
      },
      PlanResponseToJson,
      [&](std::ostream& out, const dpq::v1::PlanResponse& response) {
        WritePlanText(out, response);
        WriteWarningsText(output.err, response.warnings());
      });
}

}  // namespace dpqctl
