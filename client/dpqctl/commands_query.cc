#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/dpqctl/command_table.h"
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
    return ReportUsageError(output,
                            absl::StrCat("--file '", args.file, "': ", queries.status().message()));
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
      return ReportUsageError(output,
                              absl::StrCat("--file '", args.file, "': ", query.status().message()));
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

// --- command table ------------------------------------------------------------------------------

absl::Status QueryFlags::Finish() {
  if (lower_option->count() > 0) args.lower = lower;
  if (upper_option->count() > 0) args.upper = upper;
  if (!quantiles.empty()) {
    absl::StatusOr<std::vector<double>> parsed = ParseNumberList(quantiles, "--quantiles");
    if (!parsed.ok()) return parsed.status();
    args.quantiles = *std::move(parsed);
  }
  if (!bins.empty()) {
    absl::StatusOr<std::vector<double>> parsed = ParseNumberList(bins, "--bins");
    if (!parsed.ok()) return parsed.status();
    args.bins = *std::move(parsed);
  }
  if (!group_by.empty()) {
    absl::StatusOr<std::vector<std::string>> parsed = ParseNameList(group_by, "--group-by");
    if (!parsed.ok()) return parsed.status();
    args.group_by = *std::move(parsed);
  }
  if (!keys.empty()) {
    absl::StatusOr<std::vector<std::string>> parsed = ParseNameList(keys, "--keys");
    if (!parsed.ok()) return parsed.status();
    args.keys = *std::move(parsed);
  }
  return absl::OkStatus();
}

namespace {

constexpr const char* kAggregateHelp =
    "count, sum, mean, variance, stddev, quantile (--quantiles) or histogram (--bins, or one bin "
    "per category of a text column)";

}  // namespace

void AddQueryFlags(CLI::App* command, QueryFlags* flags) {
  QueryArgs& args = flags->args;
  command->add_option("dataset", args.dataset, "dataset name")->required();
  command->add_option("--aggregate", args.aggregate, kAggregateHelp)
      ->required()
      ->check(
          CLI::IsMember({"count", "sum", "mean", "variance", "stddev", "quantile", "histogram"}));
  command->add_option("--column", args.column,
                      "column to aggregate (numeric; a text column for a per-category histogram)");
  flags->lower_option =
      command->add_option("--lower", flags->lower, "clamp lower bound (default: declared bound)")
          ->check(kFinite);
  flags->upper_option =
      command->add_option("--upper", flags->upper, "clamp upper bound (default: declared bound)")
          ->check(kFinite);
  command->add_option("--mechanism", args.mechanism, "laplace (default) or gaussian")
      ->check(CLI::IsMember({"laplace", "gaussian"}));
  command->add_option("--delta", args.delta, "delta to spend (gaussian, or partition selection)")
      ->check(kFinite);
  command
      ->add_option("--max-contributions", args.max_contributions,
                   "rows one privacy unit may contribute (per group; default 1)")
      ->check(CLI::NonNegativeNumber);
  command->add_option("--where", args.where,
                      "row filter, e.g. \"age >= 30 AND sex = 'Female'\" (checked by the server)");
  command
      ->add_option("--confidence", args.confidence,
                   "confidence level of the interval (default 0.95)")
      ->check(kFinite);
  command
      ->add_option("--quantiles", flags->quantiles,
                   "quantile levels in [0, 1], comma-separated, e.g. 0.1,0.5,0.9 (quantile)")
      ->allow_extra_args(false);
  command
      ->add_option("--bins", flags->bins,
                   "histogram bin edges, increasing and comma-separated, e.g. 0,10,20,50")
      ->allow_extra_args(false);
  command
      ->add_option("--group-by", flags->group_by,
                   "group-by columns, comma-separated (at most 3); a date or timestamp "
                   "column by calendar bucket, COL:day, COL:week (ISO, from Monday) or COL:month, "
                   "e.g. day:week: every bucket its declared bounds span is a key, 'YYYY-MM-DD' "
                   "of the bucket's first day")
      ->allow_extra_args(false);
  command
      ->add_option("--keys", flags->keys,
                   "the public keys of a single group-by column, comma-separated (no partition "
                   "selection)")
      ->allow_extra_args(false);
  command
      ->add_option("--max-partitions", args.max_partitions,
                   "groups one privacy unit may contribute to (default 1)")
      ->check(CLI::NonNegativeNumber);
  command->add_flag("--per-unit", args.per_unit,
                    "count, sum, mean: clamp each unit's row count (total, mean) per group to "
                    "--lower/--upper instead of each row (SQL's contribution_bounds_per_group)");
}

namespace {

void AddQuery(CLI::App& app, CommandLine& command_line) {
  QueryFlags& query_flags = command_line.Keep<QueryFlags>();
  CLI::App* query = app.add_subcommand("query", "ask a differentially private question");
  AddQueryFlags(query, &query_flags);
  query->add_option("--epsilon", query_flags.args.epsilon, "epsilon to spend")
      ->required()
      ->check(kFinite);
  query->add_option("--request-id", query_flags.args.request_id,
                    "idempotency key: a repeat returns the stored answer, charging nothing");
  query->callback([&query_flags, &command_line] {
    const absl::Status lists = query_flags.Finish();
    command_line.run = [&query_flags, lists](const GlobalOptions& options, const Output& output) {
      if (!lists.ok()) return ReportUsageError(output, lists);
      return RunQuery(options, output, query_flags.args);
    };
  });
}

void AddQueryBatch(CLI::App& app, CommandLine& command_line) {
  QueryBatchArgs& batch_args = command_line.Keep<QueryBatchArgs>();
  CLI::App* query_batch = app.add_subcommand(
      "query-batch",
      "ask up to 1000 questions fixed in advance, charged once at their joint (PLD/RDP) price");
  query_batch->add_option("dataset", batch_args.dataset, "dataset name")->required();
  query_batch
      ->add_option("--file", batch_args.file,
                   "JSON array of queries whose keys mirror the query flags, e.g. "
                   "[{\"aggregate\": \"sum\", \"column\": \"x\", \"lower\": 0, \"upper\": 10, "
                   "\"epsilon\": 0.1}]")
      ->required();
  query_batch
      ->add_option("--delta", batch_args.delta,
                   "delta of the joint price in (0, 1); 0 (default): the queries' charges add")
      ->check(kFinite);
  query_batch->add_option("--request-id", batch_args.request_id,
                          "idempotency key of the whole batch");
  command_line.RunWhenParsed(query_batch,
                             [&batch_args](const GlobalOptions& options, const Output& output) {
                               return RunQueryBatch(options, output, batch_args);
                             });
}

}  // namespace

void RegisterQueryCommands(CLI::App& app, CommandLine& command_line) {
  AddQuery(app, command_line);
  AddQueryBatch(app, command_line);
}

void RegisterPlanCommand(CLI::App& app, CommandLine& command_line) {
  struct PlanFlags {
    PlanArgs args;
    QueryFlags query;
  };
  PlanFlags& plan_flags = command_line.Keep<PlanFlags>();
  CLI::App* plan = app.add_subcommand(
      "plan", "the error a query would have, or the epsilon it would need (nothing is charged)");
  AddQueryFlags(plan, &plan_flags.query);
  plan->add_option("--epsilon", plan_flags.args.epsilon, "epsilon to plan for: prints the error")
      ->check(kFinite);
  plan->add_option("--target-error", plan_flags.args.target_error,
                   "wanted half-width of the confidence interval: prints the epsilon needed")
      ->check(kFinite);
  plan->add_option("--expected-count", plan_flags.args.expected_count,
                   "mean, variance, stddev: the row count to plan for (a public guess)")
      ->check(kFinite);
  plan->callback([&plan_flags, &command_line] {
    const absl::Status lists = plan_flags.query.Finish();
    command_line.run = [&plan_flags, lists](const GlobalOptions& options, const Output& output) {
      if (!lists.ok()) return ReportUsageError(output, lists);
      plan_flags.args.query = plan_flags.query.args;
      return RunPlan(options, output, plan_flags.args);
    };
  });
}

}  // namespace dpqctl
