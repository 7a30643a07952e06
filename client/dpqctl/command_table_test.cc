// The pieces of the dpqctl command table, each on a bare CLI::App: the FINITE check, the query
// flags and their comma lists, and what each command group registers and selects. Nothing here
// opens a channel: a selected command is only checked to be set, never run.
#include "client/dpqctl/command_table.h"

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dpqctl {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Parses `args` (without the program name) into `app`; CLI11 wants them last first.
void Parse(CLI::App& app, std::vector<std::string> args) {
  std::reverse(args.begin(), args.end());
  app.parse(args);
}

std::vector<std::string> SubcommandNames(const CLI::App* app) {
  std::vector<std::string> names;
  for (const CLI::App* subcommand : app->get_subcommands({}))
    names.push_back(subcommand->get_name());
  return names;
}

TEST(FiniteTest, AcceptsNumbersAndRejectsNanInfinityAndText) {
  for (const std::string bad : {"nan", "inf", "-inf", "x"}) {
    CLI::App app;
    double value = 0;
    app.add_option("--x", value)->check(kFinite);
    try {
      Parse(app, {"--x", bad});
      ADD_FAILURE() << bad << " was accepted";
    } catch (const CLI::ValidationError& e) {
      EXPECT_THAT(e.what(), HasSubstr("'" + bad + "' is not a finite number"));
    }
  }
  CLI::App app;
  double value = 0;
  app.add_option("--x", value)->check(kFinite);
  Parse(app, {"--x", "-1.5e3"});
  EXPECT_EQ(value, -1500);
}

TEST(QueryFlagsTest, FinishSetsOnlyTheBoundsGivenAndSplitsTheLists) {
  CLI::App app;
  QueryFlags flags;
  AddQueryFlags(&app, &flags);
  Parse(app, {"people", "--aggregate", "quantile", "--column", "age", "--lower", "0", "--quantiles",
              "0.1,0.5", "--quantiles", "0.9", "--group-by", "sex,city"});
  ASSERT_TRUE(flags.Finish().ok());
  EXPECT_EQ(flags.args.dataset, "people");
  EXPECT_EQ(flags.args.lower, 0.0);
  EXPECT_FALSE(flags.args.upper.has_value());
  EXPECT_THAT(flags.args.quantiles, ElementsAre(0.1, 0.5, 0.9));
  EXPECT_THAT(flags.args.group_by, ElementsAre("sex", "city"));
  EXPECT_TRUE(flags.args.bins.empty());
  EXPECT_TRUE(flags.args.keys.empty());
}

TEST(QueryFlagsTest, FinishNamesTheFlagOfAMalformedList) {
  CLI::App app;
  QueryFlags flags;
  AddQueryFlags(&app, &flags);
  Parse(app, {"people", "--aggregate", "histogram", "--bins", "1,,2"});
  const absl::Status status = flags.Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("--bins"));
}

TEST(QueryFlagsTest, AggregateOutsideTheListIsAParseError) {
  CLI::App app;
  QueryFlags flags;
  AddQueryFlags(&app, &flags);
  EXPECT_THROW(Parse(app, {"people", "--aggregate", "median"}), CLI::ValidationError);
}

TEST(CommandLineTest, KeepHandsOutSeparateValueInitializedObjects) {
  CommandLine command_line;
  double& first = command_line.Keep<double>();
  double& second = command_line.Keep<double>();
  EXPECT_NE(&first, &second);
  EXPECT_EQ(first, 0);
  EXPECT_TRUE(command_line.Keep<std::string>().empty());
}

TEST(CommandLineTest, RunWhenParsedSelectsOnlyTheParsedSubcommand) {
  CommandLine command_line;
  CLI::App app;
  command_line.RunWhenParsed(app.add_subcommand("a"),
                             [](const GlobalOptions&, const Output&) { return 10; });
  command_line.RunWhenParsed(app.add_subcommand("b"),
                             [](const GlobalOptions&, const Output&) { return 20; });
  EXPECT_FALSE(command_line.run);
  Parse(app, {"b"});
  ASSERT_TRUE(command_line.run);
  std::ostringstream out, err;
  EXPECT_EQ(command_line.run(command_line.options, Output{out, err}), 20);
}

// Each group on its own app: the subcommands it adds, in --help order.
TEST(CommandGroupsTest, EachGroupRegistersItsSubcommandsInHelpOrder) {
  struct Group {
    void (*register_group)(CLI::App&, CommandLine&);
    std::vector<std::string> names;
  };
  const std::vector<Group> groups = {
      {RegisterDatasetCommands, {"dataset"}},
      {RegisterPrincipalCommands, {"analyst", "token"}},
      {RegisterServerInfoCommands, {"whoami", "status"}},
      {RegisterHealthCommand, {"health"}},
      {RegisterGrantCommands, {"grant"}},
      {RegisterBudgetCommands, {"budget"}},
      {RegisterQueryCommands, {"query", "query-batch"}},
      {RegisterSqlCommand, {"sql"}},
      {RegisterPlanCommand, {"plan"}},
      {RegisterAuditCommands, {"audit"}},
      {RegisterAccountingCommands, {"price", "calibrate"}},
      {RegisterCollectionCommands, {"collection"}},
      {RegisterTrainingCommands, {"training"}},
  };
  for (const Group& group : groups) {
    CLI::App app;
    CommandLine command_line;
    group.register_group(app, command_line);
    EXPECT_EQ(SubcommandNames(&app), group.names);
  }
}

TEST(CommandGroupsTest, NestedSubcommandsInHelpOrder) {
  CLI::App app;
  CommandLine command_line;
  RegisterDatasetCommands(app, command_line);
  RegisterPrincipalCommands(app, command_line);
  RegisterGrantCommands(app, command_line);
  RegisterBudgetCommands(app, command_line);
  RegisterAuditCommands(app, command_line);
  RegisterCollectionCommands(app, command_line);
  RegisterTrainingCommands(app, command_line);
  EXPECT_THAT(SubcommandNames(app.get_subcommand("dataset")),
              ElementsAre("create", "list", "load", "drop", "show"));
  EXPECT_THAT(SubcommandNames(app.get_subcommand("analyst")),
              ElementsAre("create", "list", "revoke"));
  EXPECT_THAT(SubcommandNames(app.get_subcommand("token")), ElementsAre("rotate"));
  EXPECT_THAT(SubcommandNames(app.get_subcommand("grant")), ElementsAre("revoke", "list"));
  EXPECT_THAT(SubcommandNames(app.get_subcommand("budget")), ElementsAre("set", "show"));
  EXPECT_THAT(SubcommandNames(app.get_subcommand("audit")), ElementsAre("verify"));
  EXPECT_THAT(SubcommandNames(app.get_subcommand("collection")),
              ElementsAre("create", "list", "show", "submit", "estimate"));
  EXPECT_THAT(SubcommandNames(app.get_subcommand("training")),
              ElementsAre("start", "step", "show", "list"));
}

// The callbacks that check more than CLI11 can: a missing operand is a RequiredError (exit 2)
// and selects nothing.
TEST(CommandGroupsTest, CrossFlagChecksThrowRequiredErrorAndSelectNothing) {
  const std::vector<std::vector<std::string>> incomplete = {
      {"grant", "alice"},  {"budget", "set", "people"},
      {"audit"},           {"audit", "people", "--admin-log"},
      {"audit", "verify"},
  };
  for (const std::vector<std::string>& args : incomplete) {
    CLI::App app;
    CommandLine command_line;
    RegisterGrantCommands(app, command_line);
    RegisterBudgetCommands(app, command_line);
    RegisterAuditCommands(app, command_line);
    EXPECT_THROW(Parse(app, args), CLI::RequiredError) << args[0];
    EXPECT_FALSE(command_line.run) << args[0];
  }
}

TEST(CommandGroupsTest, EveryLeafCommandSelectsARun) {
  const std::vector<std::vector<std::string>> complete = {
      {"dataset", "drop", "people", "--yes"},
      {"grant", "alice", "people", "--epsilon-cap", "1"},
      {"grant", "list"},
      {"budget", "set", "people", "--preset", "census"},
      {"audit", "--admin-log"},
      {"audit", "verify", "people", "--full"},
      {"collection", "create", "c", "--domain", "a,b", "--epsilon", "1", "--mechanism", "rr"},
      {"training", "start", "people", "--run", "r", "--sampling-rate", "0.1", "--delta", "1e-5",
       "--target-epsilon", "1", "--steps", "10"},
      {"plan", "people", "--aggregate", "count", "--epsilon", "1"},
      {"price", "--accountant", "rdp", "--delta", "1e-5", "--event", "pure:epsilon=1"},
      {"whoami"},
  };
  for (const std::vector<std::string>& args : complete) {
    CLI::App app;
    CommandLine command_line;
    RegisterDatasetCommands(app, command_line);
    RegisterServerInfoCommands(app, command_line);
    RegisterGrantCommands(app, command_line);
    RegisterBudgetCommands(app, command_line);
    RegisterPlanCommand(app, command_line);
    RegisterAuditCommands(app, command_line);
    RegisterAccountingCommands(app, command_line);
    RegisterCollectionCommands(app, command_line);
    RegisterTrainingCommands(app, command_line);
    Parse(app, args);
    EXPECT_TRUE(command_line.run) << args[0];
  }
}

}  // namespace
}  // namespace dpqctl
