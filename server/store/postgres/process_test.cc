#include "server/store/postgres/process.h"

#include <stdlib.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dpq::store {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The child's environment: inherited, with the extra entries replacing variables of their name.
TEST(RunProcessTest, ExtraEnvironmentReplacesInheritedVariables) {
  ASSERT_EQ(setenv("DPQ_PROCESS_TEST_KEPT", "inherited", 1), 0);
  ASSERT_EQ(setenv("DPQ_PROCESS_TEST_REPLACED", "inherited", 1), 0);
  absl::StatusOr<ProcessResult> r =
      RunProcess({"/usr/bin/env"}, absl::nullopt, {"DPQ_PROCESS_TEST_REPLACED=extra"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_THAT(r->output, HasSubstr("DPQ_PROCESS_TEST_KEPT=inherited\n"));
  EXPECT_THAT(r->output, HasSubstr("DPQ_PROCESS_TEST_REPLACED=extra\n"));
  EXPECT_THAT(r->output, Not(HasSubstr("DPQ_PROCESS_TEST_REPLACED=inherited")));
}

// Both output streams are read to the end, in one string.
TEST(RunProcessTest, CapturesStdoutAndStderr) {
  absl::StatusOr<ProcessResult> r =
      RunProcess({"/bin/sh", "-c", "echo out; echo err >&2; head -c 10000 /dev/zero | tr '\\0' x"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_THAT(r->output, HasSubstr("out\n"));
  EXPECT_THAT(r->output, HasSubstr("err\n"));
  EXPECT_EQ(r->output.size(), 8u + 10000u);
}

// The exit code, or 128 + the signal that ended the child.
TEST(RunProcessTest, ReportsExitCodeAndSignal) {
  absl::StatusOr<ProcessResult> exited = RunProcess({"/bin/sh", "-c", "exit 3"});
  ASSERT_TRUE(exited.ok()) << exited.status();
  EXPECT_EQ(exited->exit_code, 3);
  absl::StatusOr<ProcessResult> killed = RunProcess({"/bin/sh", "-c", "kill -TERM $$"});
  ASSERT_TRUE(killed.ok()) << killed.status();
  EXPECT_EQ(killed->exit_code, 128 + 15);
}

// A program that cannot be executed is a child exit (127), not an error of RunProcess.
TEST(RunProcessTest, AFailedExecIsExitCode127) {
  absl::StatusOr<ProcessResult> r = RunProcess({"/nonexistent/program"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 127);
  EXPECT_THAT(r->output, HasSubstr("execve failed: /nonexistent/program"));
  EXPECT_FALSE(RunProcess({}).ok());
}

}  // namespace
}  // namespace dpq::store
