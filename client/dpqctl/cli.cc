#include "client/dpqctl/cli.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/strings/str_split.h"
#include "client/dpqctl/commands.h"
#include "client/dpqctl/global_options.h"
#include "client/dpqctl/query_request.h"
#include "client/dpqctl/rpc_runner.h"
#include "client/dpqctl/upload_progress.h"

#ifndef DPQ_VERSION
#define DPQ_VERSION "unknown"
#endif

namespace dpqctl {
namespace internal {
namespace {

constexpr const char* kFooter = R"(Environment:
  DPQ_SERVER   default for --server
  DPQ_TOKEN    default for --token

Exit status: 0 success, 1 the server refused the call (or could not be reached, or
`health` found it not SERVING), 2 usage error (nothing was sent), 4 `audit verify` found a broken
chain. With --json, stdout
holds exactly one JSON document;
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

constexpr const char* kAggregateHelp =
    "count, sum, mean, variance, stddev, quantile (--quantiles) or histogram (--bins, or one bin "
    "per category of a text column)";

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
  absl::Status Finish() {
    if (lower_option->count() > 0) args.lower = lower;
    if (upper_option->count() > 0) args.upper = upper;
    if (!quantiles.empty()) {
      absl::StatusOr<std::vector<double>> parsed = ParseNumberList(quantiles, "--quantiles");
      if (!parsed.ok()) return parsed.status();
      args.quantiles = *std::move(parsed);
    }
    if (!bins.empty()) {
      absl::StatusOr<std::vector<double>> parsed = ParseNumberList(bins, "--bins");
      if (!parsed.ok()) return parsed.status();
      args.bins = *std::move(parsed);
    }
    if (!group_by.empty()) {
      absl::StatusOr<std::vector<std::string>> parsed = ParseNameList(group_by, "--group-by");
      if (!parsed.ok()) return parsed.status();
      args.group_by = *std::move(parsed);
    }
    if (!keys.empty()) {
      absl::StatusOr<std::vector<std::string>> parsed = ParseNameList(keys, "--keys");
      if (!parsed.ok()) return parsed.status();
      args.keys = *std::move(parsed);
    }
    return absl::OkStatus();
  }
};

// Every query flag but --epsilon and --request-id, whose rules differ between query and plan.
void AddQueryFlags(CLI::App* command, QueryFlags* flags) {
  QueryArgs& args = flags->args;
  command->add_option("dataset", args.dataset, "dataset name")->required();
  command->add_option("--aggregate", args.aggregate, kAggregateHelp)
      ->required()
      ->check(CLI::IsMember(
          {"count", "sum", "mean", "variance", "stddev", "quantile", "histogram"}));
  command->add_option("--column", args.column,
                      "column to aggregate (numeric; a text column for a per-category histogram)");
  flags->lower_option =
      command->add_option("--lower", flags->lower, "clamp lower bound (default: declared bound)")
          ->check(kFinite);
  flags->upper_option =
      command->add_option("--upper", flags->upper, "clamp upper bound (default: declared bound)")
          ->check(kFinite);
  command->add_option("--mechanism", args.mechanism, "laplace (default) or gaussian")
      ->check(CLI::IsMember({"laplace", "gaussian"}));
  command->add_option("--delta", args.delta, "delta to spend (gaussian, or partition selection)")
      ->check(kFinite);
  command->add_option("--max-contributions", args.max_contributions,
                      "rows one privacy unit may contribute (per group; default 1)")
      ->check(CLI::NonNegativeNumber);
  command->add_option("--where", args.where,
                      "row filter, e.g. \"age >= 30 AND sex = 'Female'\" (checked by the server)");
  command->add_option("--confidence", args.confidence,
                      "confidence level of the interval (default 0.95)")
      ->check(kFinite);
  command
      ->add_option("--quantiles", flags->quantiles,
                   "quantile levels in [0, 1], comma-separated, e.g. 0.1,0.5,0.9 (quantile)")
      ->allow_extra_args(false);
  command
      ->add_option("--bins", flags->bins,
                   "histogram bin edges, increasing and comma-separated, e.g. 0,10,20,50")
      ->allow_extra_args(false);
  command
      ->add_option("--group-by", flags->group_by,
                   "group-by columns, comma-separated (at most 3)")
      ->allow_extra_args(false);
  command
      ->add_option("--keys", flags->keys,
                   "the public keys of a single group-by column, comma-separated (no partition "
                   "selection)")
      ->allow_extra_args(false);
  command->add_option("--max-partitions", args.max_partitions,
                      "groups one privacy unit may contribute to (default 1)")
      ->check(CLI::NonNegativeNumber);
  command->add_flag("--per-unit", args.per_unit,
                    "count, sum, mean: clamp each unit's row count (total, mean) per group to "
                    "--lower/--upper instead of each row (SQL's contribution_bounds_per_group)");
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
  app.add_option("--tls-cert", options.tls_cert_file,
                 "PEM client certificate, for a dpqd that requires one (mutual TLS; with --tls-key)")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-key", options.tls_key_file, "PEM private key of --tls-cert")
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
      ->add_option("--categories", create_args.categories,
                   "public category values of a text column, COL=a|b|c (repeatable); a group-by "
                   "or histogram over it releases exactly these")
      ->allow_extra_args(false);
  create
      ->add_option("--type", create_args.types,
                   "declare a column's type, COL=integer|double|text (repeatable; every column "
                   "needs one unless --infer-types)")
      ->allow_extra_args(false);
  create->add_flag("--infer-types", create_args.infer_types,
                   "accept the types inferred from the file for columns without --type (analysts "
                   "see them: an inferred type reveals something of the rows)");
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
  analyst->add_subcommand("list", "every analyst and admin: created, last used, state, grants")
      ->callback([&] { run = [&](const Output& output) { return RunAnalystList(options, output); }; });
  std::string revoke_name;
  CLI::App* analyst_revoke = analyst->add_subcommand(
      "revoke", "revoke an analyst: its token stops working; its audit history stays");
  analyst_revoke->add_option("name", revoke_name, "analyst name")->required();
  analyst_revoke->callback([&] {
    run = [&](const Output& output) { return RunAnalystRevoke(options, output, revoke_name); };
  });

  // token rotate
  CLI::App* token = app.add_subcommand("token", "manage tokens");
  token->require_subcommand(1);
  std::string rotate_name;
  CLI::App* token_rotate = token->add_subcommand(
      "rotate", "give an analyst a new token (shown once); the old one stops working");
  token_rotate->add_option("name", rotate_name, "analyst name")->required();
  token_rotate->callback([&] {
    run = [&](const Output& output) { return RunTokenRotate(options, output, rotate_name); };
  });

  // whoami, status
  app.add_subcommand("whoami", "who this token belongs to, and the datasets it may query")
      ->callback([&] { run = [&](const Output& output) { return RunWhoAmI(options, output); }; });
  app.add_subcommand("status", "server and schema version, database, every dataset's budget (admin)")
      ->callback([&] { run = [&](const Output& output) { return RunStatus(options, output); }; });

  // health (no token needed)
  std::string health_service;
  CLI::App* health = app.add_subcommand(
      "health", "gRPC health of the server (grpc.health.v1): exit 0 only when SERVING; no token");
  health->add_option("--service", health_service,
                     "a service's full name, e.g. dpq.v1.AnalystService (default: the server)");
  health->callback(
      [&] { run = [&](const Output& output) { return RunHealth(options, output, health_service); }; });

  // grant
  std::string grant_analyst, grant_dataset;
  std::optional<double> grant_epsilon_cap, grant_delta_cap;
  CLI::App* grant = app.add_subcommand(
      "grant", "let an analyst query a dataset (again: change its caps); or: grant revoke | list");
  // Not ->required(): `grant revoke A D` and `grant list` take no positionals of their own; the
  // callback checks them when no subcommand was given.
  grant->add_option("analyst", grant_analyst, "analyst name");
  grant->add_option("dataset", grant_dataset, "dataset name");
  grant->add_option("--epsilon-cap", grant_epsilon_cap,
                    "most epsilon this analyst may spend on the dataset (basic composition)")
      ->check(internal::kFinite);
  grant->add_option("--delta-cap", grant_delta_cap, "most delta this analyst may spend on the dataset")
      ->check(internal::kFinite);
  std::string grant_revoke_analyst, grant_revoke_dataset, grant_list_dataset;
  CLI::App* grant_revoke =
      grant->add_subcommand("revoke", "end an analyst's access to a dataset (its spend is kept)");
  grant_revoke->add_option("analyst", grant_revoke_analyst, "analyst name")->required();
  grant_revoke->add_option("dataset", grant_revoke_dataset, "dataset name")->required();
  grant_revoke->callback([&] {
    run = [&](const Output& output) {
      return RunGrantRevoke(options, output, grant_revoke_analyst, grant_revoke_dataset);
    };
  });
  CLI::App* grant_list = grant->add_subcommand("list", "grants with their caps and spend");
  grant_list->add_option("dataset", grant_list_dataset, "only this dataset");
  grant_list->callback([&] {
    run = [&](const Output& output) { return RunGrantList(options, output, grant_list_dataset); };
  });
  grant->callback([&] {
    if (!grant->get_subcommands().empty()) return;  // revoke or list
    if (grant_analyst.empty() || grant_dataset.empty()) {
      throw CLI::RequiredError("grant needs ANALYST DATASET (or: grant revoke | grant list)");
    }
    run = [&](const Output& output) {
      return RunGrant(options, output, grant_analyst, grant_dataset, grant_epsilon_cap,
                      grant_delta_cap);
    };
  });

  // budget set | show
  CLI::App* budget = app.add_subcommand("budget", "a dataset's privacy budget");
  budget->require_subcommand(1);
  std::string budget_dataset, budget_accountant, budget_preset;
  double budget_epsilon = 0, budget_delta = 0, budget_max_query_epsilon = 0;
  CLI::App* budget_set =
      budget->add_subcommand("set", "set the total (epsilon, delta) budget of a dataset");
  budget_set->add_option("dataset", budget_dataset, "dataset name")->required();
  CLI::Option* budget_epsilon_option =
      budget_set
          ->add_option("--epsilon", budget_epsilon,
                       "total epsilon (required unless --preset is given: then the preset's "
                       "upper end)")
          ->check(internal::kFinite);
  budget_set->add_option("--delta", budget_delta, "total delta (default 0)")
      ->check(internal::kFinite);
  budget_set->add_option("--accountant", budget_accountant,
                          "composition rule: basic (default), advanced, rdp, zcdp or pld; fixed "
                          "once budget is spent");
  budget_set->add_option("--preset", budget_preset,
                          "domain preset: census, healthcare, location, analytics, ab-testing or "
                          "public-statistics (an epsilon outside its usual range is accepted "
                          "with a warning)");
  CLI::Option* budget_max_query_option =
      budget_set
          ->add_option("--max-query-epsilon", budget_max_query_epsilon,
                       "largest epsilon a single query may ask (0 removes the limit; absent: "
                       "kept)")
          ->check(internal::kFinite);
  budget_set->callback([&] {
    if (budget_epsilon_option->count() == 0 && budget_preset.empty()) {
      throw CLI::RequiredError("--epsilon (or --preset)");
    }
    run = [&](const Output& output) {
      return RunBudgetSet(options, output, budget_dataset, budget_epsilon, budget_delta,
                          budget_accountant, budget_preset,
                          budget_max_query_option->count() > 0
                              ? std::optional<double>(budget_max_query_epsilon)
                              : std::nullopt);
    };
  });
  CLI::App* budget_show = budget->add_subcommand("show", "total, spent and remaining budget");
  budget_show->add_option("dataset", budget_dataset, "dataset name")->required();
  budget_show->callback([&] {
    run = [&](const Output& output) { return RunBudgetShow(options, output, budget_dataset); };
  });

  // query
  internal::QueryFlags query_flags;
  CLI::App* query = app.add_subcommand("query", "ask a differentially private question");
  internal::AddQueryFlags(query, &query_flags);
  query->add_option("--epsilon", query_flags.args.epsilon, "epsilon to spend")
      ->required()
      ->check(internal::kFinite);
  query->add_option("--request-id", query_flags.args.request_id,
                    "idempotency key: a repeat returns the stored answer, charging nothing");
  query->callback([&] {
    const absl::Status lists = query_flags.Finish();
    run = [&, lists](const Output& output) {
      if (!lists.ok()) return ReportUsageError(output, lists);
      return RunQuery(options, output, query_flags.args);
    };
  });

  // query-batch
  QueryBatchArgs batch_args;
  CLI::App* query_batch = app.add_subcommand(
      "query-batch",
      "ask up to 1000 questions fixed in advance, charged once at their joint (PLD/RDP) price");
  query_batch->add_option("dataset", batch_args.dataset, "dataset name")->required();
  query_batch
      ->add_option("--file", batch_args.file,
                   "JSON array of queries whose keys mirror the query flags, e.g. "
                   "[{\"aggregate\": \"sum\", \"column\": \"x\", \"lower\": 0, \"upper\": 10, "
                   "\"epsilon\": 0.1}]")
      ->required();
  query_batch
      ->add_option("--delta", batch_args.delta,
                   "delta of the joint price in (0, 1); 0 (default): the queries' charges add")
      ->check(internal::kFinite);
  query_batch->add_option("--request-id", batch_args.request_id,
                          "idempotency key of the whole batch");
  query_batch->callback([&] {
    run = [&](const Output& output) { return RunQueryBatch(options, output, batch_args); };
  });

  // sql
  SqlArgs sql_args;
  CLI::App* sql = app.add_subcommand(
      "sql", "ask in SQL: SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = ...) ... (BigQuery's "
             "DP clause), compiled onto the same planner, ledger and audit as query");
  sql->add_option("statement", sql_args.statement,
                  "the statement (several separated by ';' are charged jointly); omit it or give - "
                  "to read standard input");
  sql->add_option("--file", sql_args.file, "read the statement from this file");
  sql->add_flag("--explain", sql_args.explain,
                "print the plan (aggregates, bounds, K, mechanism, epsilon/delta per part, the total "
                "charge, the expected error) and charge nothing");
  sql->add_option("--request-id", sql_args.request_id, "idempotency key");
  sql->add_option("--confidence", sql_args.confidence, "confidence level of the intervals (default 0.95)")
      ->check(internal::kFinite);
  sql->add_option("--joint-delta", sql_args.joint_delta,
                  "delta of the joint (RDP/PLD) price of a script of several aggregates, in [0, 1), "
                  "as query-batch --delta; 0 (default): the parts' charges add up")
      ->check(internal::kFinite);
  sql->callback([&] {
    run = [&](const Output& output) { return RunSql(options, output, sql_args, std::cin); };
  });

  // plan
  PlanArgs plan_args;
  internal::QueryFlags plan_flags;
  CLI::App* plan = app.add_subcommand(
      "plan", "the error a query would have, or the epsilon it would need (nothing is charged)");
  internal::AddQueryFlags(plan, &plan_flags);
  plan->add_option("--epsilon", plan_args.epsilon, "epsilon to plan for: prints the error")
      ->check(internal::kFinite);
  plan->add_option("--target-error", plan_args.target_error,
                   "wanted half-width of the confidence interval: prints the epsilon needed")
      ->check(internal::kFinite);
  plan->add_option("--expected-count", plan_args.expected_count,
                   "mean, variance, stddev: the row count to plan for (a public guess)")
      ->check(internal::kFinite);
  plan->callback([&] {
    const absl::Status lists = plan_flags.Finish();
    run = [&, lists](const Output& output) {
      if (!lists.ok()) return ReportUsageError(output, lists);
      plan_args.query = plan_flags.args;
      return RunPlan(options, output, plan_args);
    };
  });

  // audit
  std::string audit_dataset, verify_dataset;
  bool audit_admin_log = false, verify_admin_log = false, verify_full = false;
  CLI::App* audit = app.add_subcommand(
      "audit", "a dataset's budget allocations, oldest first (`audit verify DATASET` checks them); "
               "--admin-log: every admin action");
  audit->require_subcommand(0, 1);
  audit->add_option("dataset", audit_dataset, "dataset name");
  audit->add_flag("--admin-log", audit_admin_log,
                  "list the admin log (dataset, analyst, grant, token and budget changes) instead");
  CLI::App* audit_verify = audit->add_subcommand(
      "verify", "recompute the audit hash chain and the ledger from the audit rows (exit 4 if broken)");
  audit_verify->add_option("dataset", verify_dataset, "dataset name");
  audit_verify->add_flag("--admin-log", verify_admin_log, "check the admin log's hash chain instead");
  audit_verify->add_flag("--full", verify_full,
                         "read the whole chain from its first row (default: only the rows appended "
                         "since the last verified row, which must still hold its hash)");
  audit_verify->callback([&] {
    if (verify_admin_log == !verify_dataset.empty()) {
      throw CLI::RequiredError("audit verify needs a DATASET or --admin-log (one of them)");
    }
    run = [&](const Output& output) {
      return verify_admin_log ? RunAdminLogVerify(options, output, verify_full)
                              : RunAuditVerify(options, output, verify_dataset, verify_full);
    };
  });
  audit->callback([&] {
    if (audit_verify->parsed()) return;
    if (audit_admin_log == !audit_dataset.empty()) {
      throw CLI::RequiredError("audit needs a DATASET or --admin-log (one of them)");
    }
    run = [&](const Output& output) {
      return audit_admin_log ? RunAdminLog(options, output) : RunAudit(options, output, audit_dataset);
    };
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
                   "approx:epsilon=E,delta=D[,count=N], "
                   "discrete-laplace:scale=T,sensitivity=D[,count=N] (T, D in grid steps, D integer)")
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

  // collection create | list | show | submit | estimate (local DP)
  CLI::App* collection = app.add_subcommand(
      "collection", "local-DP collections: clients randomize, the server estimates frequencies");
  collection->require_subcommand(1);
  CollectionCreateArgs collection_args;
  std::string collection_domain;
  CLI::App* collection_create = collection->add_subcommand("create", "create a collection (admin)");
  collection_create->add_option("name", collection_args.name, "collection name")->required();
  collection_create->add_option("--domain", collection_domain, "the values, comma-separated: a,b,c")
      ->required();
  collection_create->add_option("--epsilon", collection_args.epsilon, "epsilon of each report")
      ->required()
      ->check(internal::kFinite);
  collection_create->add_option("--mechanism", collection_args.mechanism, "rr, krr, oue or olh")
      ->required();
  collection_create->add_option("--reports-per-client", collection_args.reports_per_client,
                                "the most reports one client id may submit (default 1)");
  collection_create->callback([&] {
    collection_args.domain = absl::StrSplit(collection_domain, ',');
    run = [&](const Output& output) {
      return RunCollectionCreate(options, output, collection_args);
    };
  });
  collection->add_subcommand("list", "every collection")->callback([&] {
    run = [&](const Output& output) { return RunCollectionList(options, output); };
  });
  std::string collection_name, collection_client, collection_value;
  CLI::App* collection_show = collection->add_subcommand("show", "a collection's definition");
  collection_show->add_option("name", collection_name, "collection name")->required();
  collection_show->callback([&] {
    run = [&](const Output& output) { return RunCollectionShow(options, output, collection_name); };
  });
  CLI::App* collection_submit = collection->add_subcommand(
      "submit", "randomize a value here and send only the report");
  collection_submit->add_option("name", collection_name, "collection name")->required();
  collection_submit->add_option("--client-id", collection_client, "who reports (limits apply)")
      ->required();
  collection_submit->add_option("--value", collection_value, "the true value (never sent)")
      ->required();
  collection_submit->callback([&] {
    run = [&](const Output& output) {
      return RunCollectionSubmit(options, output, collection_name, collection_client,
                                 collection_value);
    };
  });
  double collection_confidence = 0.95;
  CLI::App* collection_estimate = collection->add_subcommand(
      "estimate", "frequency estimates with intervals (free: post-processing of the reports)");
  collection_estimate->add_option("name", collection_name, "collection name")->required();
  collection_estimate->add_option("--confidence", collection_confidence,
                                  "confidence of each interval, in (0, 1)")
      ->capture_default_str()
      ->check(internal::kFinite);
  collection_estimate->callback([&] {
    run = [&](const Output& output) {
      return RunCollectionEstimate(options, output, collection_name, collection_confidence);
    };
  });

  // training start | step | show | list (DP-SGD runs charged to a dataset's ledger)
  CLI::App* training = app.add_subcommand("training", "DP-SGD training runs charged to a dataset's budget");
  training->require_subcommand(1);
  TrainingStartArgs training_start_args;
  CLI::App* training_start = training->add_subcommand(
      "start", "declare a run (sampling rate, noise multiplier, delta); charges nothing");
  training_start->add_option("dataset", training_start_args.dataset, "dataset the model trains on")
      ->required();
  training_start->add_option("--run", training_start_args.run, "run name (unique)")->required();
  training_start
      ->add_option("--sampling-rate", training_start_args.sampling_rate,
                   "Poisson sampling rate q in (0, 1] (expected batch size / units)")
      ->required()
      ->check(internal::kFinite);
  CLI::Option* training_z =
      training_start
          ->add_option("--noise-multiplier", training_start_args.noise_multiplier,
                       "noise multiplier z (noise std / clipping norm)")
          ->check(internal::kFinite);
  training_start->add_option("--delta", training_start_args.delta, "delta the run's epsilon is reported at")
      ->required()
      ->check(internal::kFinite);
  CLI::Option* training_target =
      training_start
          ->add_option("--target-epsilon", training_start_args.target_epsilon,
                       "calibrate z so that --steps steps cost at most this epsilon")
          ->check(internal::kFinite)
          ->excludes(training_z);
  training_start->add_option("--steps", training_start_args.steps, "planned steps (with --target-epsilon)")
      ->needs(training_target);
  training_start->callback([&] {
    run = [&](const Output& output) { return RunTrainingStart(options, output, training_start_args); };
  });
  TrainingStepArgs training_step_args;
  CLI::App* training_step = training->add_subcommand(
      "step", "report (and pay for) steps; refused with nothing charged when over budget: stop");
  training_step->add_option("dataset", training_step_args.dataset, "the run's dataset (optional)");
  training_step->add_option("--run", training_step_args.run, "run name")->required();
  training_step->add_option("--steps", training_step_args.steps, "steps to charge (1..1000000)")->required();
  training_step->add_option("--request-id", training_step_args.request_id,
                            "idempotency key: a retried report with the same id is charged once");
  training_step->callback([&] {
    run = [&](const Output& output) { return RunTrainingStep(options, output, training_step_args); };
  });
  std::string training_show_dataset, training_show_run;
  CLI::App* training_show =
      training->add_subcommand("show", "a run's steps, epsilon so far and the steps left in the budget");
  training_show->add_option("dataset", training_show_dataset, "the run's dataset (optional)");
  training_show->add_option("--run", training_show_run, "run name")->required();
  training_show->callback([&] {
    run = [&](const Output& output) {
      return RunTrainingShow(options, output, training_show_dataset, training_show_run);
    };
  });
  std::string training_list_dataset;
  CLI::App* training_list = training->add_subcommand("list", "your runs on a dataset (admin: every run)");
  training_list->add_option("dataset", training_list_dataset, "dataset name")->required();
  training_list->callback([&] {
    run = [&](const Output& output) { return RunTrainingList(options, output, training_list_dataset); };
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
  const Output output{out, err, options.json,
                      /*err_is_terminal=*/&err == &std::cerr && StderrIsTerminal()};
  if (!run) return ReportUsageError(output, "no command given");  // require_subcommand prevents it
  return run(output);
}

}  // namespace dpqctl
