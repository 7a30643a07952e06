// The dpqctl command table, split by command group: what every group's part shares (where the
// global flags and the chosen command go, the FINITE check of floating-point flags) and one
// Register* function per group, each defined in the commands_<group>.cc file whose commands it
// runs. RunCli (cli.cc) calls them in the order --help lists the subcommands.
#ifndef DPQ_CLIENT_DPQCTL_COMMAND_TABLE_H_
#define DPQ_CLIENT_DPQCTL_COMMAND_TABLE_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "client/dpqctl/global_options.h"
#include "client/dpqctl/query_request.h"

namespace dpqctl {

// One parsed subcommand, ready to run: a call of a commands.h function with the parsed flags.
using CommandRun = std::function<int(const GlobalOptions&, const Output&)>;

// What the command table fills in while CLI11 parses the arguments.
class CommandLine {
 public:
  GlobalOptions options;  // the global flags
  CommandRun run;         // set by the parsed subcommand's callback; empty before

  // When `command` is the subcommand parsed, `command_run` becomes the one to run.
  void RunWhenParsed(CLI::App* command, CommandRun command_run);

  // A new value-initialized T owned by this CommandLine, for a subcommand's flags: CLI11 keeps a
  // pointer to each flag's variable, so the variable must outlive the Register* call binding it.
  template <typename T>
  T& Keep() {
    auto kept = std::make_shared<T>();
    T& value = *kept;
    kept_.push_back(std::move(kept));
    return value;
  }

 private:
  std::vector<std::shared_ptr<void>> kept_;
};

// Every floating-point flag goes through this: NaN and infinities are never sent.
extern const CLI::Validator kFinite;

// The flags shared by `query` and `plan`, and what CLI11 cannot fill into QueryArgs directly: the
// presence of --lower/--upper and the comma lists, parsed by Finish() once the command is chosen.
struct QueryFlags {
  QueryArgs args;
  double lower = 0;
  double upper = 0;
  CLI::Option* lower_option = nullptr;
  CLI::Option* upper_option = nullptr;
  std::vector<std::string> quantiles, bins, group_by, keys;

  // INVALID_ARGUMENT naming the flag of a malformed list.
  absl::Status Finish();
};

// Every query flag but --epsilon and --request-id, whose rules differ between query and plan.
void AddQueryFlags(CLI::App* command, QueryFlags* flags);

// --- one per command group, in --help order ----------------------------------------------------

// dataset create | list | load | drop | show (commands_dataset.cc)
void RegisterDatasetCommands(CLI::App& app, CommandLine& command_line);
// analyst create | list | revoke, token rotate (commands_access.cc)
void RegisterPrincipalCommands(CLI::App& app, CommandLine& command_line);
// whoami, status (commands_lifecycle.cc)
void RegisterServerInfoCommands(CLI::App& app, CommandLine& command_line);
// health (commands_health.cc)
void RegisterHealthCommand(CLI::App& app, CommandLine& command_line);
// grant [revoke | list] (commands_access.cc)
void RegisterGrantCommands(CLI::App& app, CommandLine& command_line);
// population create | list | show | drop (commands_population.cc)
void RegisterPopulationCommands(CLI::App& app, CommandLine& command_line);
// shard add | list | remove (commands_shard.cc)
void RegisterShardCommands(CLI::App& app, CommandLine& command_line);
// budget set | show (commands_budget.cc)
void RegisterBudgetCommands(CLI::App& app, CommandLine& command_line);
// query, query-batch (commands_query.cc)
void RegisterQueryCommands(CLI::App& app, CommandLine& command_line);
// sql (commands_sql.cc)
void RegisterSqlCommand(CLI::App& app, CommandLine& command_line);
// plan (commands_query.cc)
void RegisterPlanCommand(CLI::App& app, CommandLine& command_line);
// audit [verify] (commands_audit.cc)
void RegisterAuditCommands(CLI::App& app, CommandLine& command_line);
// price, calibrate (commands_accounting.cc)
void RegisterAccountingCommands(CLI::App& app, CommandLine& command_line);
// collection create | list | show | submit | estimate (commands_collection.cc)
void RegisterCollectionCommands(CLI::App& app, CommandLine& command_line);
// training start | step | show | list (commands_training.cc)
void RegisterTrainingCommands(CLI::App& app, CommandLine& command_line);

}  // namespace dpqctl

#endif  // DPQ_CLIENT_DPQCTL_COMMAND_TABLE_H_
