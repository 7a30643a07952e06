// The dpqctl command line: global flags, the subcommand tree (command_table.h, one part per
// command group), parse-error reporting, dispatch to commands.h. Kept out of main.cc so that tests
// can run the whole path in-process.
#ifndef DPQ_CLIENT_DPQCTL_CLI_H_
#define DPQ_CLIENT_DPQCTL_CLI_H_

#include <ostream>

namespace dpqctl {

// Parses argv and runs the selected command. Returns the process exit code: 0 success (or
// --help/--version), 1 RPC error, 2 usage error. A usage error goes to `err`, and with --json
// also {"error": {"code": "INVALID_ARGUMENT", ...}} to `out`.
int RunCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace dpqctl

#endif  // DPQ_CLIENT_DPQCTL_CLI_H_
