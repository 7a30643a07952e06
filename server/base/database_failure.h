// What kind of database failure a status reports, decided once where libpqxx exceptions become
// statuses (store/postgres/pqxx_status.h) and read where a status is shown to a caller
// (api/status_mapping.h). The class decides the code and the fixed text an analyst sees; the
// status's own message (driver text, SQLSTATE, host, port) is for dpqd's log and for admins only,
// because an analyst's messages may depend only on the request, the schema and the ledger
// (docs/threat-model.md).
#ifndef DPQ_SERVER_BASE_DATABASE_FAILURE_H_
#define DPQ_SERVER_BASE_DATABASE_FAILURE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"

namespace dpq {

enum class DatabaseFailure {
  // Unreachable, the connection was lost, too many connections, or the server is starting,
  // restarting or shutting down: the work did not commit. Retryable.
  kUnavailable,
  // The connection broke during a COMMIT: it may or may not have taken effect. Retryable with the
  // same request id, which finds the committed row (and replays it) or commits it once.
  kCommitInDoubt,
  // A serialization failure or deadlock that outlived the store's own retries: rolled back.
  // Retryable.
  kConflict,
  // Anything else the database reported (a constraint, a bug): not retryable; the code is kept.
  kOther,
};

// UNAVAILABLE, marked with `failure` (kUnavailable, kCommitInDoubt or kConflict).
absl::Status RetryableDatabaseError(DatabaseFailure failure, absl::string_view message);
// `code` (not OK), marked kOther.
absl::Status OtherDatabaseError(absl::StatusCode code, absl::string_view message);

// The class a status was marked with; none for statuses that did not come from the database.
absl::optional<DatabaseFailure> DatabaseFailureOf(const absl::Status& status);
// kUnavailable, kCommitInDoubt or kConflict.
bool IsRetryableDatabaseFailure(const absl::Status& status);

// The request id a failed query used, the caller's own or one the server drew: after a failure
// whose retry is safe the caller must retry with exactly that id, so the caller is told it
// (api/status_mapping.h puts it in the message and the trailing metadata). Attached to
// UNAVAILABLE and DEADLINE_EXCEEDED only; any other status is returned unchanged.
absl::Status WithRequestId(absl::Status status, absl::string_view request_id);
absl::optional<std::string> RequestIdOf(const absl::Status& status);

}  // namespace dpq

#endif  // DPQ_SERVER_BASE_DATABASE_FAILURE_H_
