#include <memory>
#include <optional>
#include <string>

#include "CLI/CLI.hpp"
#include "client/dpqctl/command_table.h"
#include "client/dpqctl/commands.h"
#include "client/dpqctl/json_output.h"
#include "client/dpqctl/rpc_runner.h"
#include "client/dpqctl/text_output.h"
#include "dpq/v1/dpq.grpc.pb.h"

namespace dpqctl {

int RunBudgetSet(const GlobalOptions& options, const Output& output,
                 const dpq::v1::SetBudgetRequest& request) {
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

int RunBudgetShow(const GlobalOptions& options, const Output& output, const std::string& dataset,
                  bool blocks, int last_blocks) {
  dpq::v1::GetBudgetRequest request;
  request.set_dataset(dataset);
  request.set_blocks(blocks || last_blocks > 0);
  request.set_last_blocks(last_blocks);
  return RunRpc<dpq::v1::Budget>(
      options, output, kDefaultTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::Budget* response) {
        return dpq::v1::AnalystService::NewStub(channel)->GetBudget(context, request, response);
      },
      BudgetToJson, WriteBudgetText);
}

// --- command table ------------------------------------------------------------------------------

namespace {

void AddBudgetSet(CLI::App* budget, CommandLine& command_line) {
  struct SetFlags {
    std::string dataset, accountant, preset, block;
    double epsilon = 0, delta = 0, max_query_epsilon = 0;
    bool per_block = false;
  };
  SetFlags& set_flags = command_line.Keep<SetFlags>();
  CLI::App* budget_set =
      budget->add_subcommand("set", "set the total (epsilon, delta) budget of a dataset");
  budget_set
      ->add_option("name", set_flags.dataset,
                   "population, or a dataset of it (the budget is the population's)")
      ->required();
  CLI::Option* epsilon_option =
      budget_set
          ->add_option("--epsilon", set_flags.epsilon,
                       "total epsilon (required unless --preset is given: then the preset's "
                       "upper end)")
          ->check(kFinite);
  budget_set->add_option("--delta", set_flags.delta, "total delta (default 0)")->check(kFinite);
  budget_set->add_option("--accountant", set_flags.accountant,
                         "composition rule: basic (default), advanced, rdp, zcdp or pld; fixed "
                         "once budget is spent");
  budget_set->add_option("--preset", set_flags.preset,
                         "domain preset: census, healthcare, location, analytics, ab-testing or "
                         "public-statistics (an epsilon outside its usual range is accepted "
                         "with a warning)");
  CLI::Option* max_query_option =
      budget_set
          ->add_option("--max-query-epsilon", set_flags.max_query_epsilon,
                       "largest epsilon a single query may ask (0 removes the limit; absent: "
                       "kept)")
          ->check(kFinite);
  budget_set->add_flag("--per-block", set_flags.per_block,
                       "time blocks: epsilon and delta are every block's budget, and a query pays "
                       "the blocks it reads (before the first charge; every dataset of the "
                       "population needs --block-by)");
  budget_set->add_option("--block", set_flags.block,
                         "time blocks: set the budget of the one block starting on this day "
                         "(YYYY-MM-DD)");
  budget_set->callback([epsilon_option, max_query_option, &set_flags, &command_line] {
    if (epsilon_option->count() == 0 && set_flags.preset.empty()) {
      throw CLI::RequiredError("--epsilon (or --preset)");
    }
    command_line.run = [max_query_option, &set_flags](const GlobalOptions& options,
                                                      const Output& output) {
      dpq::v1::SetBudgetRequest request;
      request.set_dataset(set_flags.dataset);
      request.set_epsilon(set_flags.epsilon);
      request.set_delta(set_flags.delta);
      request.set_accountant(set_flags.accountant);
      request.set_preset(set_flags.preset);
      if (max_query_option->count() > 0) request.set_max_query_epsilon(set_flags.max_query_epsilon);
      request.set_per_block(set_flags.per_block);
      request.set_block(set_flags.block);
      return RunBudgetSet(options, output, request);
    };
  });
}

}  // namespace

void RegisterBudgetCommands(CLI::App& app, CommandLine& command_line) {
  CLI::App* budget =
      app.add_subcommand("budget", "a population's privacy budget (one for all its datasets)");
  budget->require_subcommand(1);
  AddBudgetSet(budget, command_line);
  std::string& show_dataset = command_line.Keep<std::string>();
  bool& show_blocks = command_line.Keep<bool>();
  CLI::App* budget_show = budget->add_subcommand("show", "total, spent and remaining budget");
  budget_show
      ->add_option("name", show_dataset,
                   "population, or a dataset of it (an analyst names a granted dataset)")
      ->required();
  int& show_last = command_line.Keep<int>();
  budget_show->add_flag("--blocks", show_blocks,
                        "a per-block budget's blocks, from the first to the current one");
  budget_show
      ->add_option("--last", show_last,
                   "only the last N blocks, up to the current one (implies --blocks)")
      ->check(CLI::PositiveNumber);
  command_line.RunWhenParsed(budget_show, [&show_dataset, &show_blocks, &show_last](
                                              const GlobalOptions& options, const Output& output) {
    return RunBudgetShow(options, output, show_dataset, show_blocks, show_last);
  });
}

}  // namespace dpqctl
