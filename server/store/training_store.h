// DP-SGD training runs (migration 0012): their declarations, and their progress read back from the
// audit rows of their step reports (each report is charged through BudgetLedger::Debit, so the
// charge and the report are one row of the audit chain, committed together).
#ifndef DPQ_SERVER_STORE_TRAINING_STORE_H_
#define DPQ_SERVER_STORE_TRAINING_STORE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/optional.h"
#include "server/store/allocation.h"
#include "server/store/database.h"

namespace dpq::store {

struct TrainingRunRecord {
  int64_t id = 0;
  int64_t dataset_id = 0;
  std::string dataset;  // its name
  std::string name;
  int64_t principal_id = 0;
  std::string analyst;
  double sampling_rate = 0;
  double noise_multiplier = 0;
  int64_t delta_units = 0;
  absl::optional<double> target_epsilon;  // set when z was calibrated
  absl::optional<int64_t> planned_steps;
  std::string created_at;  // RFC 3339 UTC
};

// A run's committed step reports, summed from its audit rows.
struct TrainingProgress {
  int64_t steps = 0;
  int64_t reports = 0;
  int64_t epsilon_units = 0;  // the reports' nominal charges added up
  int64_t delta_units = 0;
};

// What a debit would be checked against now: the ledger, its accountant state and the caller's cap.
struct ChargeContext {
  BudgetState budget;
  std::string accountant_state;  // empty for basic ledgers and fresh ones
  absl::optional<int64_t> epsilon_cap_remaining_units, delta_cap_remaining_units;  // nullopt: none
};

// The audit fingerprint of a report of `steps` steps of run `run_id` (a retried report with the
// same request id and fingerprint is a replay; another fingerprint under that id is refused).
std::string TrainingReportFingerprint(int64_t run_id, int64_t steps);

class TrainingStore {
 public:
  explicit TrainingStore(Database* db) : db_(db) {}

  // Inserts `run` (id, dataset and created_at filled in). ALREADY_EXISTS when a run of that name
  // exists (names are unique service-wide).
  absl::StatusOr<TrainingRunRecord> Create(TrainingRunRecord run);
  // NOT_FOUND naming the run.
  absl::StatusOr<TrainingRunRecord> Find(const std::string& name);
  // The dataset's runs by name; only `principal_id`'s unless it is absent.
  absl::StatusOr<std::vector<TrainingRunRecord>> List(int64_t dataset_id,
                                                      absl::optional<int64_t> principal_id);
  absl::StatusOr<TrainingProgress> Progress(const TrainingRunRecord& run);
  // The ledger of `population_id` and `principal_id`'s cap on it (read only, no lock).
  absl::StatusOr<ChargeContext> ReadChargeContext(int64_t population_id, int64_t principal_id);

 private:
  Database* db_;
};

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_TRAINING_STORE_H_
