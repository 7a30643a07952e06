#include "client/dpqctl/cli.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <string>

#include "CLI/CLI.hpp"
#include "client/dpqctl/commands.h"
#include "client/dpqctl/global_options.h"
#include "client/dpqctl/rpc_runner.h"

#ifndef DPQ_VERSION
#define DPQ_VERSION "unknown"
#endif

namespace dpqctl {
namespace internal {
namespace {

constexpr const char* kFooter = R"(Environment:
  DPQ_SERVER   default for --server
  DPQ_TOKEN    default for --token

Exit status: 0 success, 1 the server refused the call (or could not be reached),
2 usage error (nothing was sent). With --json, stdout holds exactly one JSON document;
on error it is {"error": {"code": "<gRPC code name>", "message": "..."}}.
)";

// Every floating-point flag goes through this: NaN and infinities are never sent.
const CLI::Validator kFinite(
    [](std::string& text) -> std::string {
      double value = 0;
      if (!CLI::detail::lexical_cast(text, value) || !std::isfinite(value)) {
        return "'" + text + "' is not a finite number";
      }
      return "";
    },
    "FINITE");

// A parse error can precede the parsing of --json itself, so look for the flag in argv.
bool ArgvAsksForJson(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) return false;
    if (std::strcmp(argv[i], "--json") == 0) return true;
  }
  return false;
}

}  // namespace
}  // namespace internal

int RunCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  GlobalOptions options;
  std::function<int(const Output&)> run;

  CLI::App app("dpqctl: client of dpq, the differential-privacy query service", "dpqctl");
  app.footer(internal::kFooter);
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
      ->check(internal::kFinite)
      ->check(CLI::PositiveNumber);
  app.add_option("--tls-ca", options.tls_ca_file,
                 "PEM root certificate: connect with TLS (default: plaintext)")
      ->check(CLI::ExistingFile);

  // dataset create | list | show
  CLI::App* dataset = app.add_subcommand("dataset", "create, list and inspect datasets");
  dataset->require_subcommand(1);

  DatasetCreateArgs create_args;
  CLI::App* create = dataset->add_subcommand("create", "load a CSV file into a new dataset");
  create->add_option("name", create_args.name, "dataset name")->required();
  create->add_option("--csv", create_args.csv_path, "CSV file with a header row")->required();
  create->add_option("--privacy-unit", create_args.privacy_unit,
                     "column identifying one protected person or entity")
      ->required();
  create
      ->add_option("--bounds", create_args.bounds,
                   "declared public bounds of a numeric column, COL=LO:HI (repeatable)")
      ->allow_extra_args(false);
  create
      ->add_option("--type", create_args.types,
                   "declare a column's type instead of inferring it, "
                   "COL=integer|double|text (repeatable)")
      ->allow_extra_args(false);
  create->callback([&] {
    run = [&](const Output& output) { return RunDatasetCreate(options, output, create_args); };
  });

  dataset->add_subcommand("list", "datasets you may query")->callback([&] {
    run = [&](const Output& output) { return RunDatasetList(options, output); };
  });

  std::string load_name, load_csv;
  CLI::App* load = dataset->add_subcommand(
      "load", "append the rows of a CSV (same header row) to a dataset, all or nothing");
  load->add_option("name", load_name, "dataset name")->required();
  load->add_option("--csv", load_csv, "CSV file with the dataset's header row")->required();
  load->callback([&] {
    run = [&](const Output& output) { return RunDatasetLoad(options, output, load_name, load_csv); };
  });

  std::string drop_name;
  bool drop_yes = false;
  CLI::App* drop = dataset->add_subcommand(
      "drop", "delete a dataset's raw rows for good (its ledger and audit rows are kept)");
  drop->add_option("name", drop_name, "dataset name")->required();
  drop->add_flag("--yes", drop_yes, "confirm: the rows cannot be recovered");
  drop->callback([&] {
    run = [&](const Output& output) { return RunDatasetDrop(options, output, drop_name, drop_yes); };
  });

  std::string show_name;
  CLI::App* show = dataset->add_subcommand("show", "a dataset's schema and declared bounds");
  show->add_option("name", show_name, "dataset name")->required();
  show->callback([&] {
    run = [&](const Output& output) { return RunDatasetShow(options, output, show_name); };
  });

  // analyst create
  CLI::App* analyst = app.add_subcommand("analyst", "manage analysts");
  analyst->require_subcommand(1);
  std::string analyst_name, analyst_role = "analyst";
  CLI::App* analyst_create =
      analyst->add_subcommand("create", "create an analyst and print its token (shown once)");
  analyst_create->add_option("name", analyst_name, "analyst name")->required();
  analyst_create->add_option("--role", analyst_role, "admin or analyst")
      ->check(CLI::IsMember({"admin", "analyst"}))
      ->capture_default_str();
  analyst_create->callback([&] {
    run = [&](const Output& output) {
      return RunAnalystCreate(options, output, analyst_name, analyst_role);
    };
  });

  // grant
  std::string grant_analyst, grant_dataset;
  std::optional<double> grant_epsilon_cap, grant_delta_cap;
  CLI::App* grant = app.add_subcommand("grant", "let an analyst query a dataset");
  grant->add_option("analyst", grant_analyst, "analyst name")->required();
  grant->add_option("dataset", grant_dataset, "dataset name")->required();
  grant->add_option("--epsilon-cap", grant_epsilon_cap,
                    "most epsilon this analyst may spend on the dataset (basic composition)")
      ->check(internal::kFinite);
  grant->add_option("--delta-cap", grant_delta_cap, "most delta this analyst may spend on the dataset")
      ->check(internal::kFinite);
  grant->callback([&] {
    run = [&](const Output& output) {
      return RunGrant(options, output, grant_analyst, grant_dataset, grant_epsilon_cap,
                      grant_delta_cap);
    };
  });

  // budget set | show
  CLI::App* budget = app.add_subcommand("budget", "a dataset's privacy budget");
  budget->require_subcommand(1);
  std::string budget_dataset, budget_accountant;
  double budget_epsilon = 0, budget_delta = 0;
  CLI::App* budget_set =
      budget->add_subcommand("set", "set the total (epsilon, delta) budget of a dataset");
  budget_set->add_option("dataset", budget_dataset, "dataset name")->required();
  budget_set->add_option("--epsilon", budget_epsilon, "total epsilon")
      ->required()
      ->check(internal::kFinite);
  budget_set->add_option("--delta", budget_delta, "total delta")
      ->required()
      ->check(internal::kFinite);
  budget_set->add_option("--accountant", budget_accountant,
                          "composition rule: basic (default), rdp, zcdp or advanced; fixed once "
                          "budget is spent");
  budget_set->callback([&] {
    run = [&](const Output& output) {
      return RunBudgetSet(options, output, budget_dataset, budget_epsilon, budget_delta,
                          budget_accountant);
    };
  });
  CLI::App* budget_show = budget->add_subcommand("show", "total, spent and remaining budget");
  budget_show->add_option("dataset", budget_dataset, "dataset name")->required();
  budget_show->callback([&] {
    run = [&](const Output& output) { return RunBudgetShow(options, output, budget_dataset); };
  });

  // query
  QueryArgs query_args;
  double query_lower = 0, query_upper = 0;
  CLI::App* query = app.add_subcommand("query", "ask a differentially private question");
  query->add_option("dataset", query_args.dataset, "dataset name")->required();
  query->add_option("--aggregate", query_args.aggregate, "count, sum or mean")
      ->required()
      ->check(CLI::IsMember({"count", "sum", "mean"}));
  query->add_option("--column", query_args.column, "numeric column (sum and mean)");
  CLI::Option* lower_option =
      query->add_option("--lower", query_lower, "clamp lower bound (default: declared bound)")
          ->check(internal::kFinite);
  CLI::Option* upper_option =
      query->add_option("--upper", query_upper, "clamp upper bound (default: declared bound)")
          ->check(internal::kFinite);
  query->add_option("--epsilon", query_args.epsilon, "epsilon to spend")
      ->required()
      ->check(internal::kFinite);
  query->add_option("--mechanism", query_args.mechanism, "laplace (default) or gaussian")
      ->check(CLI::IsMember({"laplace", "gaussian"}));
  query->add_option("--delta", query_args.delta, "delta to spend (gaussian only)")
      ->check(internal::kFinite);
  query->add_option("--max-contributions", query_args.max_contributions,
                    "rows one privacy unit may contribute (default 1)")
      ->check(CLI::NonNegativeNumber);
  query->add_option("--request-id", query_args.request_id,
                    "idempotency key: a repeat returns the stored answer, charging nothing");
  query->add_option("--where", query_args.where,
                    "row filter, e.g. \"age >= 30 AND sex = 'Female'\" (checked by the server)");
  query->add_option("--confidence", query_args.confidence,
                    "confidence level of the interval (default 0.95)")
      ->check(internal::kFinite);
  query->callback([&] {
    if (lower_option->count() > 0) query_args.lower = query_lower;
    if (upper_option->count() > 0) query_args.upper = query_upper;
    run = [&](const Output& output) { return RunQuery(options, output, query_args); };
  });

  // audit
  std::string audit_dataset, verify_dataset;
  CLI::App* audit = app.add_subcommand(
      "audit", "a dataset's budget allocations, oldest first (`audit verify DATASET` checks them)");
  audit->require_subcommand(0, 1);
  audit->add_option("dataset", audit_dataset, "dataset name");
  CLI::App* audit_verify = audit->add_subcommand(
      "verify", "recompute the audit hash chain and the ledger from the audit rows (exit 4 if broken)");
  audit_verify->add_option("dataset", verify_dataset, "dataset name")->required();
  audit_verify->callback([&] {
    run = [&](const Output& output) { return RunAuditVerify(options, output, verify_dataset); };
  });
  audit->callback([&] {
    if (audit_verify->parsed()) return;
    if (audit_dataset.empty()) throw CLI::RequiredError("dataset");
    run = [&](const Output& output) { return RunAudit(options, output, audit_dataset); };
  });

  // price | calibrate (privacy arithmetic; no dataset, no ledger, nothing charged)
  PriceArgs price_args;
  CLI::App* price = app.add_subcommand(
      "price", "the (epsilon, delta) a list of events would cost, without spending anything");
  price->add_option("--accountant", price_args.accountant, "basic, advanced, rdp, zcdp or pld")
      ->required();
  price->add_option("--delta", price_args.delta, "target delta in (0, 1)")
      ->required()
      ->check(internal::kFinite);
  price
      ->add_option("--event", price_args.events,
                   "an event (repeatable): laplace:scale=B[,sensitivity=S][,count=N], "
                   "gaussian:sigma=S[,sensitivity=S][,count=N], "
                   "subsampled-gaussian:q=Q,sigma=Z[,count=N], pure:epsilon=E[,count=N], "
                   "approx:epsilon=E,delta=D[,count=N]")
      ->required()
      ->allow_extra_args(false);
  price->callback([&] {
    run = [&](const Output& output) { return RunPrice(options, output, price_args); };
  });

  CalibrateArgs calibrate_args;
  CLI::App* calibrate = app.add_subcommand(
      "calibrate", "the smallest DP-SGD noise multiplier that meets a target epsilon");
  calibrate->add_option("--accountant", calibrate_args.accountant, "rdp, zcdp or pld")
      ->required();
  calibrate->add_option("--target-epsilon", calibrate_args.target_epsilon, "epsilon to meet")
      ->required()
      ->check(internal::kFinite);
  calibrate->add_option("--delta", calibrate_args.delta, "target delta in (0, 1)")
      ->required()
      ->check(internal::kFinite);
  calibrate->add_option("--q", calibrate_args.q, "Poisson sampling rate in (0, 1] (batch / n)")
      ->required()
      ->check(internal::kFinite);
  calibrate->add_option("--steps", calibrate_args.steps, "number of training steps")
      ->required();
  calibrate->callback([&] {
    run = [&](const Output& output) { return RunCalibrate(options, output, calibrate_args); };
  });

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version arrive here too, with exit code 0.
    if (e.get_exit_code() == 0) return app.exit(e, out, err);
    const Output output{out, err, options.json || internal::ArgvAsksForJson(argc, argv)};
    ReportUsageError(output, e.what());
    err << "Run with --help for more information.\n";
    return kExitUsageError;
  }
  const Output output{out, err, options.json};
  if (!run) return ReportUsageError(output, "no command given");  // require_subcommand prevents it
  return run(output);
}

}  // namespace dpqctl
