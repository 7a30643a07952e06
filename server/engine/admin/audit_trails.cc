#include "server/engine/admin/audit_trails.h"

#include "server/base/status_macros.h"

namespace dpq::engine {

absl::StatusOr<std::vector<store::Allocation>> AuditTrails::ListAudit(const std::string& dataset) {
  ASSIGN_OR_RETURN(query::DatasetSchema schema, datasets_->Get(dataset, /*include_dropped=*/true));
  return ledger_->ListAllocations(schema.id);
}

absl::StatusOr<AuditVerification> AuditTrails::VerifyAudit(const std::string& dataset, bool full) {
  ASSIGN_OR_RETURN(query::DatasetSchema schema, datasets_->Get(dataset, /*include_dropped=*/true));
  store::BudgetLedger::VerifyOptions options;
  options.full = full;
  AuditVerification verified;
  verified.dataset = schema.name;
  ASSIGN_OR_RETURN(verified.result, ledger_->Verify(schema.id, options));
  return verified;
}

absl::StatusOr<std::vector<store::AdminLogEntry>> AuditTrails::ListAdminLog() {
  return admin_log_->List();
}

absl::StatusOr<store::AdminLog::Verification> AuditTrails::VerifyAdminLog(bool full) {
  return admin_log_->Verify(full);
}

}  // namespace dpq::engine
