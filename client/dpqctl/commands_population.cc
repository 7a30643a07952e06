// dpqctl population create | list | show | drop: the sets of people whose datasets share one
// budget.
#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "client/dpqctl/command_table.h"
#include "client/dpqctl/commands.h"
#include "client/dpqctl/enum_names.h"
#include "client/dpqctl/population_output.h"
#include "client/dpqctl/rpc_runner.h"
#include "dpq/v1/dpq.grpc.pb.h"

namespace dpqctl {

int RunPopulationCreate(const GlobalOptions& options, const Output& output, const std::string& name,
                        const std::string& unit_type) {
  absl::StatusOr<dpq::v1::ColumnType> type = ParseColumnTypeWord(unit_type, "--unit-type");
  if (!type.ok()) return ReportUsageError(output, type.status());
  dpq::v1::CreatePopulationRequest request;
  request.set_name(name);
  request.set_unit_type(*type);
  return RunRpc<dpq::v1::Population>(
      options, output, kDefaultTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::Population* response) {
        return dpq::v1::AdminService::NewStub(channel)->CreatePopulation(context, request,
                                                                         response);
      },
      PopulationToJson, WritePopulationText);
}

int RunPopulationList(const GlobalOptions& options, const Output& output) {
  dpq::v1::ListPopulationsRequest request;
  return RunRpc<dpq::v1::ListPopulationsResponse>(
      options, output, kDefaultTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::ListPopulationsResponse* response) {
        return dpq::v1::AdminService::NewStub(channel)->ListPopulations(context, request, response);
      },
      ListPopulationsResponseToJson, WriteListPopulationsText);
}

int RunPopulationShow(const GlobalOptions& options, const Output& output, const std::string& name) {
  dpq::v1::GetPopulationRequest request;
  request.set_name(name);
  return RunRpc<dpq::v1::Population>(
      options, output, kDefaultTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::Population* response) {
        return dpq::v1::AdminService::NewStub(channel)->GetPopulation(context, request, response);
      },
      PopulationToJson, WritePopulationText);
}

int RunPopulationDrop(const GlobalOptions& options, const Output& output, const std::string& name) {
  dpq::v1::DropPopulationRequest request;
  request.set_name(name);
  return RunRpc<dpq::v1::DropPopulationResponse>(
      options, output, kDefaultTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::DropPopulationResponse* response) {
        return dpq::v1::AdminService::NewStub(channel)->DropPopulation(context, request, response);
      },
      [](const dpq::v1::DropPopulationResponse&) {
        return nlohmann::json{{"dropped", true}};
      },
      [&name](std::ostream& out, const dpq::v1::DropPopulationResponse&) {
        out << "dropped population '" << name << "' (its ledger and audit stay readable)\n";
      });
}

void RegisterPopulationCommands(CLI::App& app, CommandLine& command_line) {
  CLI::App* population =
      app.add_subcommand("population", "sets of people whose datasets share one privacy budget");
  population->require_subcommand(1);

  struct CreateFlags {
    std::string name, unit_type;
  };
  CreateFlags& create_flags = command_line.Keep<CreateFlags>();
  CLI::App* create = population->add_subcommand("create", "a population with an empty budget");
  create->add_option("name", create_flags.name, "population name")->required();
  create
      ->add_option("--unit-type", create_flags.unit_type,
                   "type of the privacy-unit column of its datasets: integer or text")
      ->required();
  command_line.RunWhenParsed(
      create, [&create_flags](const GlobalOptions& options, const Output& output) {
        return RunPopulationCreate(options, output, create_flags.name, create_flags.unit_type);
      });

  CLI::App* list = population->add_subcommand("list", "every population and its budget");
  command_line.RunWhenParsed(list, [](const GlobalOptions& options, const Output& output) {
    return RunPopulationList(options, output);
  });

  std::string& show_name = command_line.Keep<std::string>();
  CLI::App* show = population->add_subcommand("show", "a population's datasets and budget");
  show->add_option("name", show_name, "population name")->required();
  command_line.RunWhenParsed(show,
                             [&show_name](const GlobalOptions& options, const Output& output) {
                               return RunPopulationShow(options, output, show_name);
                             });

  std::string& drop_name = command_line.Keep<std::string>();
  CLI::App* drop = population->add_subcommand(
      "drop", "drop an empty population (its ledger and audit stay readable)");
  drop->add_option("name", drop_name, "population name")->required();
  command_line.RunWhenParsed(drop,
                             [&drop_name](const GlobalOptions& options, const Output& output) {
                               return RunPopulationDrop(options, output, drop_name);
                             });
}

}  // namespace dpqctl
