// Periodic audit verification in dpqd (issue 13): every `interval` it walks every dataset's audit
// chain (BudgetLedger::Verify, the same check as `dpqctl audit verify`) and records the result in
// dpq_audit_verify_ok / dpq_audit_verify_timestamp_seconds, which alerts.yml watches
// (DpqAuditVerifyFailing, and DpqAuditVerifyStale after 2 days without one). The VerifyAudit RPC
// records its result in the same series.
#ifndef DPQ_SERVER_API_AUDIT_VERIFIER_H_
#define DPQ_SERVER_API_AUDIT_VERIFIER_H_

#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "server/metrics/metrics.h"
#include "server/store/budget_ledger.h"

namespace dpq::api {

class AuditVerifier {
 public:
  AuditVerifier(store::BudgetLedger* ledger, metrics::Metrics* metrics, absl::Duration interval);
  ~AuditVerifier();  // Stop()

  AuditVerifier(const AuditVerifier&) = delete;
  AuditVerifier& operator=(const AuditVerifier&) = delete;

  // Verifies every dataset now, then every `interval`, in a background thread (start-up is not
  // delayed by a long chain).
  void Start();
  // Ends the background checks, waiting for a pass in progress; idempotent.
  void Stop();

  // One pass over every dataset (dropped ones too: their chains are kept). A dataset that cannot
  // be read (database down) keeps its previous result; the failure is logged. Datasets sharing a
  // name (a dropped one and its successor) are reported together: ok only if every chain is.
  void VerifyAll();

 private:
  store::BudgetLedger* ledger_;
  metrics::Metrics* metrics_;
  const absl::Duration interval_;
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace dpq::api

#endif  // DPQ_SERVER_API_AUDIT_VERIFIER_H_
