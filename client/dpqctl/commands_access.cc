#include <memory>
#include <optional>
#include <string>

#include "CLI/CLI.hpp"
#include "client/dpqctl/command_table.h"
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

// --- command table ------------------------------------------------------------------------------

namespace {

void AddAnalystCommands(CLI::App& app, CommandLine& command_line) {
  CLI::App* analyst = app.add_subcommand("analyst", "manage analysts");
  analyst->require_subcommand(1);
  struct CreateFlags {
    std::string name, role = "analyst";
  };
  CreateFlags& create_flags = command_line.Keep<CreateFlags>();
  CLI::App* analyst_create =
      analyst->add_subcommand("create", "create an analyst and print its token (shown once)");
  analyst_create->add_option("name", create_flags.name, "analyst name")->required();
  analyst_create->add_option("--role", create_flags.role, "admin or analyst")
      ->check(CLI::IsMember({"admin", "analyst"}))
      ->capture_default_str();
  command_line.RunWhenParsed(
      analyst_create, [&create_flags](const GlobalOptions& options, const Output& output) {
        return RunAnalystCreate(options, output, create_flags.name, create_flags.role);
      });
  command_line.RunWhenParsed(
      analyst->add_subcommand("list", "every analyst and admin: created, last used, state, grants"),
      RunAnalystList);
  std::string& revoke_name = command_line.Keep<std::string>();
  CLI::App* analyst_revoke = analyst->add_subcommand(
      "revoke", "revoke an analyst: its token stops working; its audit history stays");
  analyst_revoke->add_option("name", revoke_name, "analyst name")->required();
  command_line.RunWhenParsed(analyst_revoke,
                             [&revoke_name](const GlobalOptions& options, const Output& output) {
                               return RunAnalystRevoke(options, output, revoke_name);
                             });
}

void AddTokenCommands(CLI::App& app, CommandLine& command_line) {
  CLI::App* token = app.add_subcommand("token", "manage tokens");
  token->require_subcommand(1);
  std::string& rotate_name = command_line.Keep<std::string>();
  CLI::App* token_rotate = token->add_subcommand(
      "rotate", "give an analyst a new token (shown once); the old one stops working");
  token_rotate->add_option("name", rotate_name, "analyst name")->required();
  command_line.RunWhenParsed(token_rotate,
                             [&rotate_name](const GlobalOptions& options, const Output& output) {
                               return RunTokenRotate(options, output, rotate_name);
                             });
}

void AddGrantRevokeAndList(CLI::App* grant, CommandLine& command_line) {
  struct RevokeFlags {
    std::string analyst, dataset;
  };
  RevokeFlags& revoke_flags = command_line.Keep<RevokeFlags>();
  CLI::App* grant_revoke =
      grant->add_subcommand("revoke", "end an analyst's access to a dataset (its spend is kept)");
  grant_revoke->add_option("analyst", revoke_flags.analyst, "analyst name")->required();
  grant_revoke->add_option("dataset", revoke_flags.dataset, "dataset name")->required();
  command_line.RunWhenParsed(
      grant_revoke, [&revoke_flags](const GlobalOptions& options, const Output& output) {
        return RunGrantRevoke(options, output, revoke_flags.analyst, revoke_flags.dataset);
      });
  std::string& list_dataset = command_line.Keep<std::string>();
  CLI::App* grant_list = grant->add_subcommand("list", "grants with their caps and spend");
  grant_list->add_option("dataset", list_dataset, "only this dataset");
  command_line.RunWhenParsed(grant_list,
                             [&list_dataset](const GlobalOptions& options, const Output& output) {
                               return RunGrantList(options, output, list_dataset);
                             });
}

}  // namespace

void RegisterPrincipalCommands(CLI::App& app, CommandLine& command_line) {
  AddAnalystCommands(app, command_line);
  AddTokenCommands(app, command_line);
}

void RegisterGrantCommands(CLI::App& app, CommandLine& command_line) {
  struct GrantFlags {
    std::string analyst, dataset;
    std::optional<double> epsilon_cap, delta_cap;
  };
  GrantFlags& grant_flags = command_line.Keep<GrantFlags>();
  CLI::App* grant = app.add_subcommand(
      "grant", "let an analyst query a dataset (again: change its caps); or: grant revoke | list");
  // Not ->required(): `grant revoke A D` and `grant list` take no positionals of their own; the
  // callback checks them when no subcommand was given.
  grant->add_option("analyst", grant_flags.analyst, "analyst name");
  grant->add_option("dataset", grant_flags.dataset, "dataset name");
  grant
      ->add_option("--epsilon-cap", grant_flags.epsilon_cap,
                   "most epsilon this analyst may spend on the dataset's population (basic "
                   "composition; with time blocks: in each block)")
      ->check(kFinite);
  grant
      ->add_option("--delta-cap", grant_flags.delta_cap,
                   "most delta this analyst may spend on the dataset's population (with time "
                   "blocks: in each block)")
      ->check(kFinite);
  AddGrantRevokeAndList(grant, command_line);
  grant->callback([grant, &grant_flags, &command_line] {
    if (!grant->get_subcommands().empty()) return;  // revoke or list
    if (grant_flags.analyst.empty() || grant_flags.dataset.empty()) {
      throw CLI::RequiredError("grant needs ANALYST DATASET (or: grant revoke | grant list)");
    }
    command_line.run = [&grant_flags](const GlobalOptions& options, const Output& output) {
      return RunGrant(options, output, grant_flags.analyst, grant_flags.dataset,
                      grant_flags.epsilon_cap, grant_flags.delta_cap);
    };
  });
}

}  // namespace dpqctl
