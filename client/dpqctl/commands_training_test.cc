// dpqctl training: what is refused before anything is sent (exit 2, a JSON error with --json).
// The server side is covered by tests/e2e/training_test.py (real dpqd, real dpqctl).
#include <string>
#include <vector>

#include "client/dpqctl/testing/cli_runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace dpqctl {
namespace {

using ::dpqctl::testing::CliResult;
using ::dpqctl::testing::ClosedAddress;
using ::dpqctl::testing::RunDpqctl;
using ::testing::HasSubstr;

void ExpectUsageError(const std::vector<std::string>& args, const std::string& message) {
  std::vector<std::string> argv = {"--json", "--server", ClosedAddress(), "training"};
  argv.insert(argv.end(), args.begin(), args.end());
  CliResult result = RunDpqctl(argv);
  EXPECT_EQ(result.exit_code, 2) << result.err;
  const nlohmann::json json = result.JsonOut();
  EXPECT_EQ(json["error"]["code"], "INVALID_ARGUMENT");
  EXPECT_THAT(json["error"]["message"].get<std::string>(), HasSubstr(message));
}

TEST(TrainingCommandsTest, StartNeedsANoiseMultiplierOrATarget) {
  ExpectUsageError({"start", "slid", "--run", "r", "--sampling-rate", "0.01", "--delta", "1e-6"},
                   "--noise-multiplier");
  ExpectUsageError({"start", "slid", "--run", "r", "--sampling-rate", "0.01", "--delta", "1e-6",
                    "--target-epsilon", "1"},
                   "--steps");
  ExpectUsageError({"start", "slid", "--run", "r", "--sampling-rate", "0.01", "--delta", "1e-6",
                    "--noise-multiplier", "1", "--target-epsilon", "1", "--steps", "10"},
                   "excludes");
  ExpectUsageError({"start", "slid", "--run", "r", "--sampling-rate", "nan", "--delta", "1e-6",
                    "--noise-multiplier", "1"},
                   "sampling-rate");
}

TEST(TrainingCommandsTest, StepNeedsRunAndSteps) {
  ExpectUsageError({"step", "--steps", "10"}, "--run");
  ExpectUsageError({"step", "--run", "r"}, "--steps");
  ExpectUsageError({"step", "--run", "r", "--steps", "ten"}, "--steps");
}

TEST(TrainingCommandsTest, StepAgainstNoServerIsUnavailable) {
  CliResult result = RunDpqctl({"--json", "--server", ClosedAddress(), "--timeout", "5", "training",
                                "step", "--run", "r", "--steps", "1"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.JsonOut()["error"]["code"], "UNAVAILABLE");
}

TEST(TrainingCommandsTest, HelpListsTheSubcommands) {
  CliResult result = RunDpqctl({"training", "--help"});
  EXPECT_EQ(result.exit_code, 0);
  for (const char* command : {"start", "step", "show", "list"}) {
    EXPECT_THAT(result.out, HasSubstr(command));
  }
}

}  // namespace
}  // namespace dpqctl
