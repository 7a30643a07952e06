#include <fstream>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "client/dpqctl/command_table.h"
#include "client/dpqctl/commands.h"
#include "client/dpqctl/csv_schema.h"
#include "client/dpqctl/dataset_header.h"
#include "client/dpqctl/json_output.h"
#include "client/dpqctl/rpc_runner.h"
#include "client/dpqctl/text_output.h"
#include "client/dpqctl/upload_progress.h"
#include "dpq/v1/dpq.grpc.pb.h"
#include "nlohmann/json.hpp"

namespace dpqctl {
namespace internal {
namespace {

constexpr size_t kChunkBytes = 1 << 20;  // 1 MiB, well under gRPC's 4 MiB message limit

absl::StatusOr<dpq::v1::DatasetHeader> PrepareHeader(const DatasetCreateArgs& args) {
  if (args.is_public && (!args.privacy_unit.empty() || !args.population.empty())) {
    return absl::InvalidArgumentError(
        "--public: a public table has no --privacy-unit and no --population");
  }
  if (!args.is_public && args.privacy_unit.empty()) {
    return absl::InvalidArgumentError(
        "--privacy-unit is required (the column that identifies a person), or --public for a "
        "lookup table whose contents are not personal");
  }
  std::vector<TypeSpec> types;
  for (const std::string& spec : args.types) {
    absl::StatusOr<TypeSpec> parsed = ParseTypeSpec(spec);
    if (!parsed.ok()) return parsed.status();
    types.push_back(*std::move(parsed));
  }
  std::vector<BoundsSpec> bounds;
  for (const std::string& spec : args.bounds) {
    absl::StatusOr<BoundsSpec> parsed = ParseBoundsSpec(spec);
    if (!parsed.ok()) return parsed.status();
    bounds.push_back(*std::move(parsed));
  }
  std::vector<CategoriesSpec> categories;
  for (const std::string& spec : args.categories) {
    absl::StatusOr<CategoriesSpec> parsed = ParseCategoriesSpec(spec);
    if (!parsed.ok()) return parsed.status();
    categories.push_back(*std::move(parsed));
  }
  // The whole file is scanned even when every type is declared: a row with the wrong field
  // count is then reported here, by line, before a byte is uploaded.
  std::ifstream csv(args.csv_path, std::ios::binary);
  if (!csv) {
    return absl::InvalidArgumentError(absl::StrCat("--csv: cannot open '", args.csv_path, "'"));
  }
  absl::StatusOr<CsvSchema> schema = InferCsvSchema(csv);
  if (!schema.ok()) {
    return absl::Status(schema.status().code(),
                        absl::StrCat("--csv '", args.csv_path, "': ", schema.status().message()));
  }
  absl::StatusOr<dpq::v1::DatasetHeader> header =
      BuildDatasetHeader(args.name, args.privacy_unit, *schema, types, bounds, categories);
  if (header.ok() && !args.infer_types) {
    absl::Status declared = RequireDeclaredTypes(*schema, types);
    if (!declared.ok()) return declared;
  }
  if (header.ok()) {
    header->set_population(args.population);
    header->set_is_public(args.is_public);
    header->set_block_by(args.block_by);
    header->set_block_width(args.block_width);
    for (const std::string& shard : args.shards) header->add_shards(shard);
  }
  return header;
}

// Streams the header then the file as it is on disk (header row included, as the proto asks).
// `append`: AdminService.LoadDataset (rows added to an existing dataset) instead of CreateDataset.
// `progress` counts the rows of every chunk written; it is finished (its line ended) once the
// last chunk is written, before the wait for the server's commit.
grpc::Status StreamDataset(const std::shared_ptr<grpc::Channel>& channel,
                           grpc::ClientContext* context, const dpq::v1::DatasetHeader& header,
                           const std::string& csv_path, dpq::v1::CreateDatasetResponse* response,
                           UploadProgress* progress, bool append = false) {
  std::ifstream csv(csv_path, std::ios::binary);
  if (!csv) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "--csv: the file disappeared before the upload");
  }
  auto stub = dpq::v1::AdminService::NewStub(channel);
  std::unique_ptr<grpc::ClientWriter<dpq::v1::CreateDatasetRequest>> writer =
      append ? stub->LoadDataset(context, response) : stub->CreateDataset(context, response);

  dpq::v1::CreateDatasetRequest request;
  *request.mutable_header() = header;
  // A failed Write means the stream is already finished (the server refused early, or the
  // transport broke); Finish() then returns the reason.
  bool open = writer->Write(request);
  std::string buffer(kChunkBytes, '\0');
  int64_t sent = 0;
  while (open && csv) {
    csv.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const std::streamsize got = csv.gcount();
    if (got <= 0) break;
    request.set_csv_chunk(buffer.data(), static_cast<size_t>(got));
    open = writer->Write(request);
    sent += got;
    if (open) progress->AddChunk(absl::string_view(buffer.data(), static_cast<size_t>(got)));
  }
  // The line ends before any error message is printed, or before the wait for the commit.
  progress->Finish();
  if (open && csv.bad()) {
    // Cancelling makes sure the server does not commit a truncated dataset.
    context->TryCancel();
    writer->Finish();
    return grpc::Status(grpc::StatusCode::DATA_LOSS, "--csv: reading the file failed mid-upload");
  }
  if (open) {
    // The end message: the server commits only an upload that ends with it (the proto says why).
    request.mutable_end()->set_csv_bytes(sent);
    if (writer->Write(request)) writer->WritesDone();
  }
  return writer->Finish();
}

}  // namespace
}  // namespace internal

int RunDatasetCreate(const GlobalOptions& options, const Output& output,
                     const DatasetCreateArgs& args) {
  absl::StatusOr<dpq::v1::DatasetHeader> header = internal::PrepareHeader(args);
  if (!header.ok()) return ReportUsageError(output, header.status());
  return RunRpc<dpq::v1::CreateDatasetResponse>(
      options, output, kDatasetCreateTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::CreateDatasetResponse* response) {
        UploadProgress progress(output.err, output.err_is_terminal);
        return internal::StreamDataset(channel, context, *header, args.csv_path, response,
                                       &progress);
      },
      CreateDatasetResponseToJson, WriteCreateDatasetText);
}

int RunDatasetLoad(const GlobalOptions& options, const Output& output, const std::string& name,
                   const std::string& csv_path) {
  dpq::v1::DatasetHeader header;
  header.set_name(name);  // the server uses the stored columns and validates every row
  return RunRpc<dpq::v1::CreateDatasetResponse>(
      options, output, kDatasetCreateTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::CreateDatasetResponse* response) {
        UploadProgress progress(output.err, output.err_is_terminal);
        return internal::StreamDataset(channel, context, header, csv_path, response, &progress,
                                       /*append=*/true);
      },
      CreateDatasetResponseToJson, WriteCreateDatasetText);
}

int RunDatasetDrop(const GlobalOptions& options, const Output& output, const std::string& name,
                   bool confirm) {
  dpq::v1::DropDatasetRequest request;
  request.set_name(name);
  request.set_confirm(confirm);
  return RunRpc<dpq::v1::DropDatasetResponse>(
      options, output, kDefaultTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::DropDatasetResponse* response) {
        return dpq::v1::AdminService::NewStub(channel)->DropDataset(context, request, response);
      },
      [&](const dpq::v1::DropDatasetResponse&) {
        return nlohmann::json{{"dataset", name}, {"dropped", true}};
      },
      [&](std::ostream& out, const dpq::v1::DropDatasetResponse&) {
        out << "dropped dataset " << name << " (its ledger and audit rows are kept)\n";
      });
}

int RunDatasetList(const GlobalOptions& options, const Output& output) {
  dpq::v1::ListDatasetsRequest request;
  return RunRpc<dpq::v1::ListDatasetsResponse>(
      options, output, kDefaultTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::ListDatasetsResponse* response) {
        return dpq::v1::AnalystService::NewStub(channel)->ListDatasets(context, request, response);
      },
      ListDatasetsResponseToJson, WriteListDatasetsText);
}

int RunDatasetShow(const GlobalOptions& options, const Output& output, const std::string& name) {
  dpq::v1::GetDatasetRequest request;
  request.set_name(name);
  return RunRpc<dpq::v1::Dataset>(
      options, output, kDefaultTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::Dataset* response) {
        return dpq::v1::AnalystService::NewStub(channel)->GetDataset(context, request, response);
      },
      DatasetToJson, WriteDatasetText);
}

// --- command table ------------------------------------------------------------------------------

namespace {

void AddDatasetCreate(CLI::App* dataset, CommandLine& command_line) {
  DatasetCreateArgs& create_args = command_line.Keep<DatasetCreateArgs>();
  CLI::App* create = dataset->add_subcommand("create", "load a CSV file into a new dataset");
  create->add_option("name", create_args.name, "dataset name")->required();
  create->add_option("--csv", create_args.csv_path, "CSV file with a header row")->required();
  create->add_option(
      "--privacy-unit", create_args.privacy_unit,
      "column identifying one protected person or entity (required unless --public)");
  create->add_option("--population", create_args.population,
                     "the population the dataset is about (one budget for all its datasets; "
                     "`dpqctl population create`); default: a population of its own, named after "
                     "the dataset");
  create->add_option("--block-by", create_args.block_by,
                     "time blocks: a date or timestamp column whose calendar buckets split the "
                     "rows into blocks (with --block-width; for a per-block budget)");
  create
      ->add_option("--block-width", create_args.block_width,
                   "time blocks: day, week (ISO, from Monday) or month")
      ->check(CLI::IsMember({"day", "week", "month"}));
  create
      ->add_option("--shards", create_args.shards,
                   "shard servers (`dpqctl shard list`) to place the rows on, s1,s2,...: hashed by "
                   "the privacy unit, so all of one person's rows sit on one shard")
      ->delimiter(',');
  create->add_flag("--public", create_args.is_public,
                   "a lookup table whose contents are not personal (no privacy unit, no budget): "
                   "only ever joined by private datasets; the statement is kept in the admin log");
  create
      ->add_option(
          "--bounds", create_args.bounds,
          "declared public bounds of a numeric column, COL=LO:HI, or of a date or timestamp "
          "column (required there), day=2026-01-01:2026-12-31 or "
          "at=2026-01-01T00:00:00Z:2026-12-31T23:59:59Z (repeatable)")
      ->allow_extra_args(false);
  create
      ->add_option("--categories", create_args.categories,
                   "public category values of a text column, COL=a|b|c (repeatable); a group-by "
                   "or histogram over it releases exactly these")
      ->allow_extra_args(false);
  create
      ->add_option("--type", create_args.types,
                   "declare a column's type, COL=integer|double|text|date|timestamp (repeatable; "
                   "every column "
                   "needs one unless --infer-types)")
      ->allow_extra_args(false);
  create->add_flag("--infer-types", create_args.infer_types,
                   "accept the types inferred from the file for columns without --type (analysts "
                   "see them: an inferred type reveals something of the rows)");
  command_line.RunWhenParsed(create,
                             [&create_args](const GlobalOptions& options, const Output& output) {
                               return RunDatasetCreate(options, output, create_args);
                             });
}

void AddDatasetLoad(CLI::App* dataset, CommandLine& command_line) {
  struct LoadFlags {
    std::string name, csv;
  };
  LoadFlags& load_flags = command_line.Keep<LoadFlags>();
  CLI::App* load = dataset->add_subcommand(
      "load", "append the rows of a CSV (same header row) to a dataset, all or nothing");
  load->add_option("name", load_flags.name, "dataset name")->required();
  load->add_option("--csv", load_flags.csv, "CSV file with the dataset's header row")->required();
  command_line.RunWhenParsed(
      load, [&load_flags](const GlobalOptions& options, const Output& output) {
        return RunDatasetLoad(options, output, load_flags.name, load_flags.csv);
      });
}

void AddDatasetDrop(CLI::App* dataset, CommandLine& command_line) {
  struct DropFlags {
    std::string name;
    bool yes = false;
  };
  DropFlags& drop_flags = command_line.Keep<DropFlags>();
  CLI::App* drop = dataset->add_subcommand(
      "drop", "delete a dataset's raw rows for good (its ledger and audit rows are kept)");
  drop->add_option("name", drop_flags.name, "dataset name")->required();
  drop->add_flag("--yes", drop_flags.yes, "confirm: the rows cannot be recovered");
  command_line.RunWhenParsed(
      drop, [&drop_flags](const GlobalOptions& options, const Output& output) {
        return RunDatasetDrop(options, output, drop_flags.name, drop_flags.yes);
      });
}

}  // namespace

void RegisterDatasetCommands(CLI::App& app, CommandLine& command_line) {
  CLI::App* dataset = app.add_subcommand("dataset", "create, list and inspect datasets");
  dataset->require_subcommand(1);
  AddDatasetCreate(dataset, command_line);
  command_line.RunWhenParsed(dataset->add_subcommand("list", "datasets you may query"),
                             RunDatasetList);
  AddDatasetLoad(dataset, command_line);
  AddDatasetDrop(dataset, command_line);
  std::string& show_name = command_line.Keep<std::string>();
  CLI::App* show = dataset->add_subcommand("show", "a dataset's schema and declared bounds");
  show->add_option("name", show_name, "dataset name")->required();
  command_line.RunWhenParsed(show,
                             [&show_name](const GlobalOptions& options, const Output& output) {
                               return RunDatasetShow(options, output, show_name);
                             });
}

}  // namespace dpqctl
