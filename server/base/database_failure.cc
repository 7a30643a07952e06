#include "server/base/database_failure.h"

namespace dpq {
namespace {

constexpr absl::string_view kFailurePayload = "type.dpq/database-failure";
constexpr absl::string_view kRequestIdPayload = "type.dpq/request-id";

absl::string_view FailureName(DatabaseFailure f) {
  switch (f) {
    case DatabaseFailure::kUnavailable: return "unavailable";
    case DatabaseFailure::kCommitInDoubt: return "commit-in-doubt";
    case DatabaseFailure::kConflict: return "conflict";
    case DatabaseFailure::kOther: return "other";
  }
  return "other";
}

absl::Status Marked(absl::StatusCode code, DatabaseFailure failure, absl::string_view message) {
  absl::Status status(code, message);
  status.SetPayload(kFailurePayload, absl::Cord(FailureName(failure)));
  return status;
}

}  // namespace

absl::Status RetryableDatabaseError(DatabaseFailure failure, absl::string_view message) {
  if (failure == DatabaseFailure::kOther) failure = DatabaseFailure::kUnavailable;
  return Marked(absl::StatusCode::kUnavailable, failure, message);
}

absl::Status OtherDatabaseError(absl::StatusCode code, absl::string_view message) {
  if (code == absl::StatusCode::kOk) code = absl::StatusCode::kInternal;
  return Marked(code, DatabaseFailure::kOther, message);
}

absl::optional<DatabaseFailure> DatabaseFailureOf(const absl::Status& status) {
  if (status.ok()) return absl::nullopt;
  const absl::optional<absl::Cord> payload = status.GetPayload(kFailurePayload);
  if (!payload.has_value()) return absl::nullopt;
  for (DatabaseFailure f : {DatabaseFailure::kUnavailable, DatabaseFailure::kCommitInDoubt,
                            DatabaseFailure::kConflict, DatabaseFailure::kOther}) {
    if (*payload == FailureName(f)) return f;
  }
  return DatabaseFailure::kOther;
}

bool IsRetryableDatabaseFailure(const absl::Status& status) {
  const absl::optional<DatabaseFailure> f = DatabaseFailureOf(status);
  return f.has_value() && *f != DatabaseFailure::kOther &&
         status.code() == absl::StatusCode::kUnavailable;
}

absl::Status WithRequestId(absl::Status status, absl::string_view request_id) {
  if (request_id.empty() || (status.code() != absl::StatusCode::kUnavailable &&
                             status.code() != absl::StatusCode::kDeadlineExceeded)) {
    return status;
  }
  status.SetPayload(kRequestIdPayload, absl::Cord(request_id));
  return status;
}

absl::optional<std::string> RequestIdOf(const absl::Status& status) {
  const absl::optional<absl::Cord> payload = status.GetPayload(kRequestIdPayload);
  if (!payload.has_value()) return absl::nullopt;
  return std::string(*payload);
}

}  // namespace dpq
