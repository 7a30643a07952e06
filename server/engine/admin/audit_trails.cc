#include "server/engine/admin/audit_trails.h"

#include "server/base/status_macros.h"

namespace dpq::engine {

absl::StatusOr<AuditListing> AuditTrails::ListAudit(const std::string& name) {
  ASSIGN_OR_RETURN(store::ResolvedPopulation target, populations_->Resolve(name));
  AuditListing listing{target.population.name, target.via_dataset, {}};
  ASSIGN_OR_RETURN(listing.entries, ledger_->ListAllocations(target.population.id));
  return listing;
}

absl::StatusOr<AuditVerification> AuditTrails::VerifyAudit(const std::string& name, bool full) {
  ASSIGN_OR_RETURN(store::ResolvedPopulation target, populations_->Resolve(name));
  store::BudgetLedger::VerifyOptions options;
  options.full = full;
  AuditVerification verified;
  verified.population = target.population.name;
  verified.via_dataset = target.via_dataset;
  ASSIGN_OR_RETURN(verified.result, ledger_->Verify(target.population.id, options));
  return verified;
}

absl::StatusOr<std::vector<store::AdminLogEntry>> AuditTrails::ListAdminLog() {
  return admin_log_->List();
}

absl::StatusOr<store::AdminLog::Verification> AuditTrails::VerifyAdminLog(bool full) {
  return admin_log_->Verify(full);
}

}  // namespace dpq::engine
