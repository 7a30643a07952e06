// One function per dpqctl command. Each validates its arguments locally (usage errors: exit 2,
// nothing sent), makes one call through RunRpc (rpc_runner.h) and returns the exit code. The
// command line itself is wired in cli.cc; these take plain values so tests can call them.
#ifndef DPQ_CLIENT_DPQCTL_COMMANDS_H_
#define DPQ_CLIENT_DPQCTL_COMMANDS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "client/dpqctl/global_options.h"

namespace dpqctl {

// --- dataset (commands_dataset.cc) -------------------------------------------------------------

struct DatasetCreateArgs {
  std::string name;
  std::string csv_path;
  std::string privacy_unit;
  std::vector<std::string> bounds;  // "COL=LO:HI"
  std::vector<std::string> types;   // "COL=integer|double|text"
};
// AdminService.CreateDataset: infers the schema from the file, then streams it in 1 MiB chunks.
int RunDatasetCreate(const GlobalOptions& options, const Output& output,
                     const DatasetCreateArgs& args);
// AnalystService.ListDatasets.
int RunDatasetList(const GlobalOptions& options, const Output& output);
// AdminService.LoadDataset: append the rows of a CSV (same header) to an existing dataset.
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

// --- budget (commands_budget.cc) ---------------------------------------------------------------

// AdminService.SetBudget: totals, not increments.
int RunBudgetSet(const GlobalOptions& options, const Output& output, const std::string& dataset,
                 double epsilon, double delta,
                 const std::string& accountant = "");
// AnalystService.GetBudget.
int RunBudgetShow(const GlobalOptions& options, const Output& output, const std::string& dataset);

// --- query and audit (commands_query.cc, commands_audit.cc) ------------------------------------

struct QueryArgs {
  std::string dataset;
  std::string aggregate;  // count | sum | mean
  std::string column;
  std::optional<double> lower;
  std::optional<double> upper;
  double epsilon = 0;
  std::string mechanism;  // empty: the server's default (Laplace)
  double delta = 0;
  int32_t max_contributions = 0;  // 0: the server's default (1)
  std::string request_id;         // empty: the server assigns one
  double confidence = 0;          // 0: the server's default (0.95)
  std::string where;              // row filter; empty: none
};
// AnalystService.Query.
int RunQuery(const GlobalOptions& options, const Output& output, const QueryArgs& args);

// AdminService.ListAudit.
int RunAudit(const GlobalOptions& options, const Output& output, const std::string& dataset);
// Exit 0 when the chain and ledger verify, kExitVerificationFailed when they do not.
int RunAuditVerify(const GlobalOptions& options, const Output& output, const std::string& dataset);
inline constexpr int kExitVerificationFailed = 4;

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

}  // namespace dpqctl

#endif  // DPQ_CLIENT_DPQCTL_COMMANDS_H_
