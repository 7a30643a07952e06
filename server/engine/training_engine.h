// DP-SGD training runs charged to the dataset's ledger (decisions.md "Training runs"). The trainer
// declares a run (q, z, delta; z optionally calibrated from a target epsilon and step count) and
// reports its steps; each report is one allocation debited through BudgetLedger::Debit (the same
// lock-and-debit transaction, group commit, caps and audit chain as queries), priced by
// server/training/step_pricing.h from the declared parameters only. A report that does not fit is
// refused with RESOURCE_EXHAUSTED and charges nothing: the trainer must stop. A report with a
// request id already committed for the same run and step count replays (charged once).
#ifndef DPQ_SERVER_ENGINE_TRAINING_ENGINE_H_
#define DPQ_SERVER_ENGINE_TRAINING_ENGINE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/optional.h"
#include "server/dp/accounting/accountant_kind.h"
#include "server/dp/random_source.h"
#include "server/engine/query_engine.h"
#include "server/store/budget_ledger.h"
#include "server/store/principal_store.h"
#include "server/store/training_store.h"
#include "server/training/run_spec.h"

namespace dpq::engine {

struct TrainingRunRequest {
  std::string dataset;
  std::string name;
  double sampling_rate = 0;
  double noise_multiplier = 0;  // 0: calibrate from target_epsilon and steps
  double delta = 0;
  double target_epsilon = 0;  // with steps > 0 and noise_multiplier == 0
  int64_t steps = 0;
};

struct TrainingRunStatus {
  store::TrainingRunRecord run;
  std::string dataset;
  // The ledger's.
  dp::accounting::AccountantKind accountant = dp::accounting::AccountantKind::kBasic;
  store::TrainingProgress progress;
  double epsilon = 0;      // the run so far at its delta (step_pricing.h RunEpsilon)
  int64_t steps_left = 0;  // the most steps one report could charge now (ledger and cap)
  store::BudgetState budget;
};

struct StepReportOutcome {
  TrainingRunStatus status;      // after the report
  store::Allocation allocation;  // the report's audit row
  bool replayed = false;
};

class TrainingEngine {
 public:
  // `queries` answers who may use a dataset (QueryEngine::AuthorizedDataset); `rng` assigns
  // request ids.
  TrainingEngine(QueryEngine* queries, store::BudgetLedger* ledger, store::TrainingStore* runs,
                 dp::RandomSource* rng)
      : queries_(queries), ledger_(ledger), runs_(runs), rng_(rng) {}

  // Registers a run for the caller (an analyst granted on the dataset, or an admin). Nothing is
  // charged. INVALID_ARGUMENT naming the field; ALREADY_EXISTS for a taken name; OUT_OF_RANGE when
  // no z meets the target.
  absl::StatusOr<TrainingRunStatus> StartRun(const store::Principal& principal,
                                             const TrainingRunRequest& request,
                                             absl::Time deadline = absl::InfiniteFuture());
  // Runs are named alone (names are unique service-wide); `dataset` may be empty, or must be the
  // run's. Charges `steps` steps of the caller's run. RESOURCE_EXHAUSTED (nothing charged) when they do
  // not fit the ledger or the caller's cap; PERMISSION_DENIED for another analyst's run.
  // DEADLINE_EXCEEDED, nothing charged, when `deadline` passes while the report is priced (PLD
  // pricing takes up to seconds); once the debit starts, its outcome stands (a retry with the same
  // request id replays it).
  absl::StatusOr<StepReportOutcome> ReportSteps(const store::Principal& principal,
                                                const std::string& dataset, const std::string& name,
                                                int64_t steps, std::string request_id,
                                                absl::Time deadline = absl::InfiniteFuture());
  // DEADLINE_EXCEEDED when `deadline` passes during the steps_left search.
  absl::StatusOr<TrainingRunStatus> GetRun(const store::Principal& principal,
                                           const std::string& dataset, const std::string& name,
                                           absl::Time deadline = absl::InfiniteFuture());
  // The caller's runs on `dataset` (an admin's: every run), without steps_left.
  absl::StatusOr<std::vector<TrainingRunStatus>> ListRuns(const store::Principal& principal,
                                                          const std::string& dataset);

 private:
  struct OwnedRun {
    query::DatasetSchema schema;
    store::TrainingRunRecord run;
  };
  // The run `name` if the caller may use it: its owner (granted on its dataset) or an admin.
  // `dataset`, when not empty, must be the run's. NOT_FOUND, PERMISSION_DENIED otherwise.
  absl::StatusOr<OwnedRun> OwnRun(const store::Principal& principal, const std::string& dataset,
                                  const std::string& name);
  absl::StatusOr<TrainingRunStatus> StatusOf(const store::Principal& principal,
                                             const query::DatasetSchema& schema,
                                             store::TrainingRunRecord run, bool with_steps_left,
                                             absl::Time deadline = absl::InfiniteFuture());

  QueryEngine* queries_;
  store::BudgetLedger* ledger_;
  store::TrainingStore* runs_;
  dp::RandomSource* rng_;
};

// The run's declared spec in the units the pricing takes.
training::RunSpec SpecOf(const store::TrainingRunRecord& run);

}  // namespace dpq::engine

#endif  // DPQ_SERVER_ENGINE_TRAINING_ENGINE_H_
