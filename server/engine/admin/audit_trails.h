// The two audit trails an admin reads and verifies: a dataset's budget audit (every allocation,
// hash-chained in store/budget_ledger.h) and the admin log (store/admin_log.h). No gRPC.
#ifndef DPQ_SERVER_ENGINE_ADMIN_AUDIT_TRAILS_H_
#define DPQ_SERVER_ENGINE_ADMIN_AUDIT_TRAILS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/store/admin_log.h"
#include "server/store/allocation.h"
#include "server/store/budget_ledger.h"
#include "server/store/dataset_store.h"

namespace dpq::engine {

// A dataset's budget audit checked (BudgetLedger::Verify), with the dataset's name.
struct AuditVerification {
  std::string dataset;
  store::BudgetLedger::Verification result;
};

class AuditTrails {
 public:
  AuditTrails(store::DatasetStore* datasets, store::BudgetLedger* ledger,
              store::AdminLog* admin_log)
      : datasets_(datasets), ledger_(ledger), admin_log_(admin_log) {}

  // Dropped datasets included: their audit outlives their rows.
  absl::StatusOr<std::vector<store::Allocation>> ListAudit(const std::string& dataset);
  // `full`: from the genesis row instead of the last checkpoint.
  absl::StatusOr<AuditVerification> VerifyAudit(const std::string& dataset, bool full);
  absl::StatusOr<std::vector<store::AdminLogEntry>> ListAdminLog();
  absl::StatusOr<store::AdminLog::Verification> VerifyAdminLog(bool full);

 private:
  store::DatasetStore* datasets_;
  store::BudgetLedger* ledger_;
  store::AdminLog* admin_log_;
};

}  // namespace dpq::engine

#endif  // DPQ_SERVER_ENGINE_ADMIN_AUDIT_TRAILS_H_
