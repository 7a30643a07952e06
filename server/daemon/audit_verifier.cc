#include "server/daemon/audit_verifier.h"

#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/base/logging.h"

namespace dpq::daemon {

AuditVerifier::AuditVerifier(store::BudgetLedger* ledger, metrics::Metrics* metrics,
                             absl::Duration interval, double full_after_seconds)
    : ledger_(ledger),
      metrics_(metrics),
      interval_(interval),
      full_after_seconds_(full_after_seconds) {}

AuditVerifier::~AuditVerifier() { Stop(); }

void AuditVerifier::Start() {
  thread_ = std::thread([this] {
    do {
      VerifyAll();
    } while (!stop_.WaitForNotificationWithTimeout(interval_));
  });
}

void AuditVerifier::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

void AuditVerifier::VerifyAll() {
  absl::StatusOr<std::vector<store::BudgetState>> budgets = ledger_->ListBudgets();
  if (!budgets.ok()) {
    LogWarning(
        absl::StrCat("audit verification: cannot list the ledgers: ", budgets.status().ToString()));
    return;
  }
  std::map<std::string, bool> ok_by_name;
  for (const store::BudgetState& b : *budgets) {
    if (stop_.HasBeenNotified()) return;
    store::BudgetLedger::VerifyOptions options;
    options.full = false;
    options.full_after_seconds = full_after_seconds_;
    absl::StatusOr<store::BudgetLedger::Verification> v = ledger_->Verify(b.population_id, options);
    if (!v.ok()) {
      LogWarning(absl::StrCat("audit verification of ", b.population, ": ", v.status().ToString()));
      ok_by_name.erase(b.population);
      continue;
    }
    if (!v->ok) {
      LogError(absl::StrCat("audit verification of ", b.population, " FAILED at seq ",
                            v->first_broken_seq, ": ", v->reason));
    }
    metrics_->RecordAuditVerifyRows(b.population, v->rows_read);
    auto [it, inserted] = ok_by_name.emplace(b.population, v->ok);
    if (!inserted) it->second = it->second && v->ok;
  }
  const double now = absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch());
  for (const auto& [name, ok] : ok_by_name) metrics_->RecordAuditVerify(name, ok, now);
}

}  // namespace dpq::daemon
