// One function per dpqctl command. Each validates its arguments locally (usage errors: exit 2,
// nothing sent), makes one call through RunRpc (rpc_runner.h) and returns the exit code. The
// command line is wired in cli.cc from one table per command group (command_table.h), each defined
// in the commands_*.cc file of its commands; these take plain values so tests can call them.
#ifndef DPQ_CLIENT_DPQCTL_COMMANDS_H_
#define DPQ_CLIENT_DPQCTL_COMMANDS_H_

#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <vector>

#include "client/dpqctl/global_options.h"
#include "client/dpqctl/query_request.h"

namespace dpqctl {

// --- dataset (commands_dataset.cc) -------------------------------------------------------------

struct DatasetCreateArgs {
  std::string name;
  std::string csv_path;
  std::string privacy_unit;             // empty only with is_public
  std::string population;               // empty: a population of its own
  bool is_public = false;               // --public: a lookup table, not personal
  std::string block_by;                 // --block-by: a date or timestamp column (time blocks)
  std::string block_width;              // --block-width: day, week or month
  std::vector<std::string> shards;      // --shards s1,s2: shard servers to place the rows on
  std::vector<std::string> bounds;      // "COL=LO:HI"
  std::vector<std::string> types;       // "COL=integer|double|text"
  std::vector<std::string> categories;  // "COL=a|b|c" (text columns)
  // Accept the types inferred from the file for columns without --type (RequireDeclaredTypes).
  bool infer_types = false;
};
// AdminService.CreateDataset: infers the schema from the file, then streams it in 1 MiB chunks.
// With output.err_is_terminal, a progress line (upload_progress.h) is drawn on output.err.
int RunDatasetCreate(const GlobalOptions& options, const Output& output,
                     const DatasetCreateArgs& args);
// AnalystService.ListDatasets.
int RunDatasetList(const GlobalOptions& options, const Output& output);
// AdminService.LoadDataset: append the rows of a CSV (same header) to an existing dataset. Same
// progress line as RunDatasetCreate.
int RunDatasetLoad(const GlobalOptions& options, const Output& output, const std::string& name,
                   const std::string& csv_path);
// AdminService.DropDataset; refused by the server unless confirm.
int RunDatasetDrop(const GlobalOptions& options, const Output& output, const std::string& name,
                   bool confirm);
// AnalystService.GetDataset.
int RunDatasetShow(const GlobalOptions& options, const Output& output, const std::string& name);

// --- analysts and grants (commands_access.cc) --------------------------------------------------

// AdminService.CreateAnalyst; `role` is "admin" or "analyst".
int RunAnalystCreate(const GlobalOptions& options, const Output& output, const std::string& name,
                     const std::string& role);
// AdminService.Grant.
// Caps are sent only when set (an unset cap keeps the stored one).
int RunGrant(const GlobalOptions& options, const Output& output, const std::string& analyst,
             const std::string& dataset, std::optional<double> epsilon_cap = std::nullopt,
             std::optional<double> delta_cap = std::nullopt);

// --- admin lifecycle, whoami, status (commands_lifecycle.cc) -----------------------------------

// AdminService.ListAnalysts: every principal with its state and grants.
int RunAnalystList(const GlobalOptions& options, const Output& output);
// AdminService.RevokeAnalyst.
int RunAnalystRevoke(const GlobalOptions& options, const Output& output, const std::string& name);
// AdminService.RotateToken: prints the new token once.
int RunTokenRotate(const GlobalOptions& options, const Output& output, const std::string& name);
// AdminService.RevokeGrant.
int RunGrantRevoke(const GlobalOptions& options, const Output& output, const std::string& analyst,
                   const std::string& dataset);
// AdminService.ListGrants; `dataset` empty: every dataset.
int RunGrantList(const GlobalOptions& options, const Output& output, const std::string& dataset);
// AnalystService.WhoAmI (any token).
int RunWhoAmI(const GlobalOptions& options, const Output& output);
// AdminService.ServerStatus.
int RunStatus(const GlobalOptions& options, const Output& output);

// --- health (commands_health.cc) ---------------------------------------------------------------

// Deadline of `health` when --timeout is not given: a probe must answer quickly or fail.
inline constexpr double kHealthTimeoutSeconds = 5;
// grpc.health.v1.Health/Check for `service` ("" is the server as a whole). Prints the serving
// status (SERVING, NOT_SERVING, ...); exit 0 only for SERVING, 1 otherwise (a failed call too).
int RunHealth(const GlobalOptions& options, const Output& output, const std::string& service);

// --- budget (commands_budget.cc) ---------------------------------------------------------------

// AdminService.SetBudget: totals, not increments. `epsilon` 0 with a `preset` takes the preset's
// upper end (the server decides). The returned warnings are printed as "warning: ..." lines on
// output.err (text mode) or in the document's "warnings" (--json).
int RunBudgetSet(const GlobalOptions& options, const Output& output,
                 const dpq::v1::SetBudgetRequest& request);
// AnalystService.GetBudget; with `blocks` (or `last_blocks` > 0: only the last ones), a per-block
// budget's blocks as a table.
int RunBudgetShow(const GlobalOptions& options, const Output& output, const std::string& dataset,
                  bool blocks, int last_blocks = 0);

// --- query and audit (commands_query.cc, commands_audit.cc) ------------------------------------

// AnalystService.Query (QueryArgs: query_request.h). Warnings of the response go to output.err
// as "warning: ..." lines in text mode, into the document with --json.
int RunQuery(const GlobalOptions& options, const Output& output, const QueryArgs& args);

struct QueryBatchArgs {
  std::string dataset;
  std::string file;        // JSON array of queries (ParseQueryBatchJson)
  double delta = 0;        // delta of the joint price; 0: the queries' charges add
  std::string request_id;  // idempotency key of the batch; empty: the server assigns one
};
// AnalystService.QueryBatch: reads and checks the whole file first (usage errors name the file,
// the index and the key), then sends every query in one request.
int RunQueryBatch(const GlobalOptions& options, const Output& output, const QueryBatchArgs& args);

struct PlanArgs {
  QueryArgs query;                     // query.epsilon is ignored: see epsilon / target_error
  std::optional<double> epsilon;       // exactly one of epsilon and target_error
  std::optional<double> target_error;  // wanted CI half-width; sends query.epsilon = 0
  double expected_count = 0;           // MEAN/VARIANCE/STDDEV: row count to plan for
};
// AnalystService.Plan: the error a query would have, or the epsilon it would need; runs and
// charges nothing.
int RunPlan(const GlobalOptions& options, const Output& output, const PlanArgs& args);

// AdminService.ListAudit.
int RunAudit(const GlobalOptions& options, const Output& output, const std::string& dataset);
// Exit 0 when the chain and ledger verify, kExitVerificationFailed when they do not.
int RunAuditVerify(const GlobalOptions& options, const Output& output, const std::string& dataset,
                   bool full);
inline constexpr int kExitVerificationFailed = 4;
// AdminService.ListAdminLog: every admin action, oldest first.
int RunAdminLog(const GlobalOptions& options, const Output& output);
// AdminService.VerifyAdminLog; exit kExitVerificationFailed when the chain is broken.
int RunAdminLogVerify(const GlobalOptions& options, const Output& output, bool full);

// --- accounting (commands_accounting.cc) ------------------------------------------------------

struct PriceArgs {
  std::string accountant;           // basic | advanced | rdp | zcdp | pld (judged by the server)
  double delta = 0;                 // target delta in (0, 1)
  std::vector<std::string> events;  // specs such as "laplace:scale=10,count=100"
};
// AccountingService.Price: the (epsilon, delta) the events would cost; charges nothing.
int RunPrice(const GlobalOptions& options, const Output& output, const PriceArgs& args);

struct CalibrateArgs {
  std::string accountant;  // rdp | zcdp | pld
  double target_epsilon = 0;
  double delta = 0;
  double q = 0;       // Poisson sampling rate in (0, 1]
  int64_t steps = 0;  // number of DP-SGD steps, >= 1
};
// AccountingService.Calibrate: the smallest DP-SGD noise multiplier meeting the target.
int RunCalibrate(const GlobalOptions& options, const Output& output, const CalibrateArgs& args);

// --- local-DP collections (commands_collection.cc) ---------------------------------------------

struct CollectionCreateArgs {
  std::string name;
  std::vector<std::string> domain;  // the values, in order (--domain a,b,c)
  double epsilon = 0;               // per report
  std::string mechanism;            // rr | krr | oue | olh
  int32_t reports_per_client = 1;
};
// CollectionService.CreateCollection (admin).
int RunCollectionCreate(const GlobalOptions& options, const Output& output,
                        const CollectionCreateArgs& args);
// CollectionService.ListCollections.
int RunCollectionList(const GlobalOptions& options, const Output& output);
// CollectionService.GetCollection.
int RunCollectionShow(const GlobalOptions& options, const Output& output, const std::string& name);
// GetCollection, then randomizes `value` locally (client/ldp) and sends only the report
// (SubmitReport). A value outside the domain is a usage error: nothing is sent.
int RunCollectionSubmit(const GlobalOptions& options, const Output& output, const std::string& name,
                        const std::string& client_id, const std::string& value);
// CollectionService.Estimate: a table of estimates and intervals at `confidence`.
int RunCollectionEstimate(const GlobalOptions& options, const Output& output,
                          const std::string& name, double confidence);

// --- training (commands_training.cc) ----------------------------------------------------------

struct TrainingStartArgs {
  std::string dataset;
  std::string run;
  double sampling_rate = 0;
  double noise_multiplier = 0;  // 0: calibrate from target_epsilon and steps
  double delta = 0;
  double target_epsilon = 0;
  int64_t steps = 0;
};
// TrainingService.StartRun: registers a DP-SGD run; charges nothing.
int RunTrainingStart(const GlobalOptions& options, const Output& output,
                     const TrainingStartArgs& args);

struct TrainingStepArgs {
  std::string dataset;  // optional: the run's dataset
  std::string run;
  int64_t steps = 0;
  std::string request_id;  // reuse when retrying, so the report is charged once
};
// TrainingService.ReportSteps: charges the steps; RESOURCE_EXHAUSTED (exit 1) means stop training.
int RunTrainingStep(const GlobalOptions& options, const Output& output,
                    const TrainingStepArgs& args);
// TrainingService.GetRun.
int RunTrainingShow(const GlobalOptions& options, const Output& output, const std::string& dataset,
                    const std::string& run);
// TrainingService.ListRuns.
int RunTrainingList(const GlobalOptions& options, const Output& output, const std::string& dataset);

// --- shard servers (commands_shard.cc) ---------------------------------------------------------

// AdminService.AddShard; `url` is sent and never printed.
int RunShardAdd(const GlobalOptions& options, const Output& output, const std::string& name,
                const std::string& url);
// AdminService.ListShards: each shard's address, version and state (probed now).
int RunShardList(const GlobalOptions& options, const Output& output);
// AdminService.RemoveShard.
int RunShardRemove(const GlobalOptions& options, const Output& output, const std::string& name);

// --- sql (commands_sql.cc) --------------------------------------------------------------------

struct SqlArgs {
  std::string statement;  // empty or "-": read --file, else standard input
  std::string file;
  bool explain = false;  // ExplainSql: the plan and its price; nothing is charged
  std::string request_id;
  double confidence = 0;   // 0: the server's default, 0.95
  double joint_delta = 0;  // SqlRequest.joint_delta: 0, the parts' charges add up
};
// AnalystService.ExecuteSql (or ExplainSql with explain): a SELECT WITH DIFFERENTIAL_PRIVACY
// statement (or several, separated by ';'), read from args or `in`.
int RunSql(const GlobalOptions& options, const Output& output, const SqlArgs& args,
           std::istream& in);

}  // namespace dpqctl

#endif  // DPQ_CLIENT_DPQCTL_COMMANDS_H_
