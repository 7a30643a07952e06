#include "client/dpqctl/cli.h"

#include <cstring>
#include <iostream>
#include <string>

#include "CLI/CLI.hpp"
#include "client/dpqctl/command_table.h"
#include "client/dpqctl/global_options.h"
#include "client/dpqctl/rpc_runner.h"
#include "client/dpqctl/upload_progress.h"

#ifndef DPQ_VERSION
#define DPQ_VERSION "unknown"
#endif

namespace dpqctl {
namespace {

constexpr const char* kFooter = R"(Environment:
  DPQ_SERVER   default for --server
  DPQ_TOKEN    default for --token
  DPQ_SHARD_URL  default for `shard add --url` (the shard's URL holds a password)

Exit status: 0 success, 1 the server refused the call (or could not be reached, or
`health` found it not SERVING), 2 usage error (nothing was sent), 4 `audit verify` found a broken
chain. With --json, stdout
holds exactly one JSON document;
on error it is {"error": {"code": "<gRPC code name>", "message": "..."}}.
)";

// The root of the table: name, help footer, --version and the flags every command takes.
void AddGlobalOptions(CLI::App& app, GlobalOptions& options) {
  app.footer(kFooter);
  app.set_version_flag("--version", std::string("dpqctl ") + DPQ_VERSION);
  app.require_subcommand(1);
  // Global flags may follow the subcommand too (`dpqctl budget show x --json`); subcommands
  // created after this inherit it.
  app.fallthrough();
  app.add_option("--server", options.server, "dpqd address HOST:PORT")
      ->envname("DPQ_SERVER")
      ->capture_default_str();
  app.add_option("--token", options.token, "bearer token")->envname("DPQ_TOKEN");
  app.add_flag("--json", options.json, "print exactly one JSON document on stdout");
  app.add_option("--timeout", options.timeout_seconds,
                 "deadline of the call in seconds (default 30; 600 for dataset create)")
      ->check(kFinite)
      ->check(CLI::PositiveNumber);
  app.add_option("--tls-ca", options.tls_ca_file,
                 "PEM root certificate: connect with TLS (default: plaintext)")
      ->check(CLI::ExistingFile);
  app.add_option(
         "--tls-cert", options.tls_cert_file,
         "PEM client certificate, for a dpqd that requires one (mutual TLS; with --tls-key)")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-key", options.tls_key_file, "PEM private key of --tls-cert")
      ->check(CLI::ExistingFile);
}

// A parse error can precede the parsing of --json itself, so look for the flag in argv.
bool ArgvAsksForJson(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) return false;
    if (std::strcmp(argv[i], "--json") == 0) return true;
  }
  return false;
}

}  // namespace

int RunCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  // Declared before `app`, which holds pointers into it, so that it outlives the app.
  CommandLine command_line;
  CLI::App app("dpqctl: client of dpq, the differential-privacy query service", "dpqctl");
  AddGlobalOptions(app, command_line.options);

  // --help lists the subcommands in this order.
  RegisterDatasetCommands(app, command_line);
  RegisterPrincipalCommands(app, command_line);
  RegisterServerInfoCommands(app, command_line);
  RegisterHealthCommand(app, command_line);
  RegisterGrantCommands(app, command_line);
  RegisterPopulationCommands(app, command_line);
  RegisterShardCommands(app, command_line);
  RegisterBudgetCommands(app, command_line);
  RegisterQueryCommands(app, command_line);
  RegisterSqlCommand(app, command_line);
  RegisterPlanCommand(app, command_line);
  RegisterAuditCommands(app, command_line);
  RegisterAccountingCommands(app, command_line);
  RegisterCollectionCommands(app, command_line);
  RegisterTrainingCommands(app, command_line);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version arrive here too, with exit code 0.
    if (e.get_exit_code() == 0) return app.exit(e, out, err);
    const Output output{out, err, command_line.options.json || ArgvAsksForJson(argc, argv)};
    ReportUsageError(output, e.what());
    err << "Run with --help for more information.\n";
    return kExitUsageError;
  }
  const Output output{out, err, command_line.options.json,
                      /*err_is_terminal=*/&err == &std::cerr && StderrIsTerminal()};
  // require_subcommand prevents it
  if (!command_line.run) return ReportUsageError(output, "no command given");
  return command_line.run(command_line.options, output);
}

}  // namespace dpqctl
