// The two audit trails an admin reads and verifies: a population's budget audit (every allocation
// of its ledger, hash-chained in store/budget_ledger.h) and the admin log (store/admin_log.h). A
// population is named directly or through one of its datasets. No gRPC.
#ifndef DPQ_SERVER_ENGINE_ADMIN_AUDIT_TRAILS_H_
#define DPQ_SERVER_ENGINE_ADMIN_AUDIT_TRAILS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/store/admin_log.h"
#include "server/store/allocation.h"
#include "server/store/budget_ledger.h"
#include "server/store/population_store.h"

namespace dpq::engine {

// A population's budget audit checked (BudgetLedger::Verify).
struct AuditVerification {
  std::string population;
  std::string via_dataset;  // the dataset named, when the caller did not name the population
  store::BudgetLedger::Verification result;
};

// A population's audit rows, oldest first.
struct AuditListing {
  std::string population;
  std::string via_dataset;
  std::vector<store::Allocation> entries;
};

class AuditTrails {
 public:
  AuditTrails(store::PopulationStore* populations, store::BudgetLedger* ledger,
              store::AdminLog* admin_log)
      : populations_(populations), ledger_(ledger), admin_log_(admin_log) {}

  // `name`: a population, or a dataset of it; dropped ones included (the audit outlives them).
  absl::StatusOr<AuditListing> ListAudit(const std::string& name);
  // `full`: from the genesis row instead of the last checkpoint.
  absl::StatusOr<AuditVerification> VerifyAudit(const std::string& name, bool full);
  absl::StatusOr<std::vector<store::AdminLogEntry>> ListAdminLog();
  absl::StatusOr<store::AdminLog::Verification> VerifyAdminLog(bool full);

 private:
  store::PopulationStore* populations_;
  store::BudgetLedger* ledger_;
  store::AdminLog* admin_log_;
};

}  // namespace dpq::engine

#endif  // DPQ_SERVER_ENGINE_ADMIN_AUDIT_TRAILS_H_
