#include "server/api/status_mapping.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/types/optional.h"
#include "server/api/request_log.h"
#include "server/base/database_failure.h"
#include "server/base/limit_error.h"

namespace dpq::api {
namespace {

// One sentence per failure class. Each depends on nothing but the class (and the request id the
// status carries, which is the caller's own or one the server drew at random): what an analyst
// learns from it is that the service failed, which they observe anyway.
constexpr char kRetryWithSameId[] = "retry with the same request id";

std::string RetryableText(DatabaseFailure failure) {
  switch (failure) {
    case DatabaseFailure::kCommitInDoubt:
      return absl::StrCat(
          "the database connection broke while the request was being committed, so it may or may "
          "not have been recorded; ",
          kRetryWithSameId, ", which is charged at most once");
    case DatabaseFailure::kConflict:
      return absl::StrCat(
          "the database aborted the request on a conflict with concurrent requests; ",
          kRetryWithSameId);
    case DatabaseFailure::kUnavailable:
    case DatabaseFailure::kOther: break;
  }
  return absl::StrCat("the database is unavailable; ", kRetryWithSameId);
}

std::string OtherDatabaseText(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kAlreadyExists:
      return "already exists: the database refused a duplicate (a concurrent request may have "
             "created it first)";
    case absl::StatusCode::kDeadlineExceeded:
      return absl::StrCat("the call's deadline passed while the database was working; ",
                          kRetryWithSameId, " and a longer deadline");
    default:
      return "internal error: the database refused an operation dpqd asked of it; the operator "
             "finds the cause in dpqd's log";
  }
}

constexpr char kInternalText[] =
    "internal error in dpqd; the operator finds the cause in dpqd's log";

}  // namespace

bool IsServiceFailure(const absl::Status& status) {
  return !status.ok() &&
         (DatabaseFailureOf(status).has_value() || status.code() == absl::StatusCode::kInternal);
}

absl::Status ForAudience(const absl::Status& status, Audience audience) {
  if (!IsServiceFailure(status)) return absl::Status(status.code(), status.message());
  absl::StatusCode code = status.code();
  std::string text;
  if (IsRetryableDatabaseFailure(status)) {
    code = absl::StatusCode::kUnavailable;
    text = RetryableText(*DatabaseFailureOf(status));
  } else if (DatabaseFailureOf(status).has_value()) {
    text = OtherDatabaseText(code);
  } else {
    text = kInternalText;
  }
  const absl::optional<std::string> request_id = RequestIdOf(status);
  if (request_id.has_value()) absl::StrAppend(&text, " (request_id ", *request_id, ")");
  if (audience == Audience::kAdmin) absl::StrAppend(&text, " [detail: ", status.message(), "]");
  return absl::Status(code, text);
}

grpc::Status ToGrpcStatus(grpc::ServerContextBase& call, const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  const absl::optional<std::string> request_id = RequestIdOf(status);
  if (request_id.has_value()) call.AddTrailingMetadata(kRequestIdTrailer, *request_id);
  if (IsServiceFailure(status)) {
    NoteCallFailure(&call, std::string(status.message()), request_id.value_or(""));
  }
  const absl::Status shown =
      ForAudience(status, CallIsAdmin(&call) ? Audience::kAdmin : Audience::kAnalyst);
  return grpc::Status(static_cast<grpc::StatusCode>(shown.code()), std::string(shown.message()));
}

std::string OutcomeLabel(const absl::Status& status) {
  if (IsLimitError(status)) return "limited";  // not a budget rejection (limit_error.h)
  return absl::AsciiStrToLower(absl::StatusCodeToString(status.code()));
}

}  // namespace dpq::api
