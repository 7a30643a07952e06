// Periodic audit verification in dpqd: every `interval` it verifies every population's audit chain
// (BudgetLedger::Verify, the same check as `dpqctl audit verify`) and records the result in
// dpq_audit_verify_ok / dpq_audit_verify_timestamp_seconds, which alerts.yml watches
// (DpqAuditVerifyFailing, and DpqAuditVerifyStale after 2 days without one), and the rows it read
// in dpq_audit_verify_rows_total. The VerifyAudit RPC records its result in the same series.
// Each pass is incremental: it reads the rows appended since the population's checkpoint, and the
// whole chain again when the last full verification of it is older than `full_after_seconds`.
#ifndef DPQ_SERVER_DAEMON_AUDIT_VERIFIER_H_
#define DPQ_SERVER_DAEMON_AUDIT_VERIFIER_H_

#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "server/metrics/metrics.h"
#include "server/store/budget_ledger.h"

namespace dpq::daemon {

class AuditVerifier {
 public:
  // full_after_seconds: BudgetLedger::VerifyOptions::full_after_seconds (0: never by age).
  AuditVerifier(store::BudgetLedger* ledger, metrics::Metrics* metrics, absl::Duration interval,
                double full_after_seconds = 0);
  ~AuditVerifier();  // Stop()

  AuditVerifier(const AuditVerifier&) = delete;
  AuditVerifier& operator=(const AuditVerifier&) = delete;

  // Verifies every population now, then every `interval`, in a background thread (start-up is not
  // delayed by a long chain).
  void Start();
  // Ends the background checks, waiting for a pass in progress; idempotent.
  void Stop();

  // One pass over every population's ledger (dropped ones too: their chains are kept). A ledger
  // that cannot be read (database down) keeps its previous result (timestamp 0 before the first:
  // Metrics exports every listed population); the failure is logged. Ledgers sharing a population
  // name (a dropped population and its successor) are reported together: ok only if every chain
  // is.
  void VerifyAll();

 private:
  store::BudgetLedger* ledger_;
  metrics::Metrics* metrics_;
  const absl::Duration interval_;
  const double full_after_seconds_;
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace dpq::daemon

#endif  // DPQ_SERVER_DAEMON_AUDIT_VERIFIER_H_
