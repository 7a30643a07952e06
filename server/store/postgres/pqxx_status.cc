#include "server/store/postgres/pqxx_status.h"

#include <pqxx/except>

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "server/base/database_failure.h"

namespace dpq::store {
namespace {

// The first line of a libpq error message, without the "ERROR:  " severity prefix. DETAIL lines
// (which is where Postgres puts key values) are on later lines and are dropped.
std::string PrimaryMessage(const char* what) {
  absl::string_view text(what == nullptr ? "" : what);
  text = text.substr(0, text.find('\n'));
  for (absl::string_view prefix : {"ERROR:  ", "FATAL:  ", "PANIC:  "}) {
    if (absl::ConsumePrefix(&text, prefix)) break;
  }
  return std::string(absl::StripAsciiWhitespace(text));
}

absl::Status Retryable(DatabaseFailure failure, absl::string_view context,
                       absl::string_view detail) {
  return RetryableDatabaseError(failure, absl::StrCat(context, ": ", detail));
}

absl::Status Other(absl::StatusCode code, absl::string_view context, absl::string_view detail) {
  return OtherDatabaseError(code, absl::StrCat(context, ": ", detail));
}

// SQLSTATEs after which the server has ended (or refuses) the session, or could not do the work
// for want of a resource: the statement did not take effect.
bool ServerUnavailable(const std::string& state) {
  return absl::StartsWith(state, "08") || absl::StartsWith(state, "53") || state == "57P01" ||
         state == "57P02" || state == "57P03";
}

absl::Status FromSqlError(const pqxx::sql_error& e, absl::string_view context) {
  const std::string& state = e.sqlstate();
  const std::string state_text =
      state.empty() ? "SQLSTATE unknown" : absl::StrCat("SQLSTATE ", state);
  if (dynamic_cast<const pqxx::unique_violation*>(&e) != nullptr || state == "23505") {
    return Other(absl::StatusCode::kAlreadyExists, context,
                 absl::StrCat("unique constraint violated (", state_text, ")"));
  }
  if (state == "40001" || state == "40P01" || state == "40000") {
    return Retryable(DatabaseFailure::kConflict, context,
                     absl::StrCat("transaction conflict (", state_text, "); retry"));
  }
  if (state == "40003") {
    return Retryable(DatabaseFailure::kCommitInDoubt, context,
                     "commit in doubt: statement completion unknown (SQLSTATE 40003)");
  }
  if (state == "57014") {  // query_canceled: our statement_timeout, derived from the RPC deadline
    return Other(absl::StatusCode::kDeadlineExceeded, context,
                 absl::StrCat("statement cancelled at the deadline (", state_text, ")"));
  }
  if (ServerUnavailable(state)) {
    return Retryable(
        DatabaseFailure::kUnavailable, context,
        absl::StrCat("database unavailable (", state_text, "): ", PrimaryMessage(e.what())));
  }
  if (absl::StartsWith(state, "42") || absl::StartsWith(state, "0A")) {
    return Other(absl::StatusCode::kInternal, context,
                 absl::StrCat("SQL error (", state_text, "): ", PrimaryMessage(e.what())));
  }
  return Other(absl::StatusCode::kInternal, context, absl::StrCat("SQL error (", state_text, ")"));
}

}  // namespace

absl::Status StatusFromPqxx(const std::exception& e, absl::string_view context) {
  // Order matters: most-derived classes first. In libpqxx 6.4 transaction_rollback and
  // in_doubt_error derive from pqxx::failure, not from sql_error, and carry no SQLSTATE.
  if (dynamic_cast<const pqxx::in_doubt_error*>(&e) != nullptr) {
    return Retryable(DatabaseFailure::kCommitInDoubt, context,
                     absl::StrCat("commit in doubt: the connection broke during COMMIT (",
                                  PrimaryMessage(e.what()), ")"));
  }
  if (dynamic_cast<const pqxx::statement_completion_unknown*>(&e) != nullptr) {
    return Retryable(DatabaseFailure::kCommitInDoubt, context,
                     "commit in doubt: statement completion unknown (SQLSTATE 40003)");
  }
  if (dynamic_cast<const pqxx::serialization_failure*>(&e) != nullptr) {
    return Retryable(DatabaseFailure::kConflict, context,
                     "serialization failure (SQLSTATE 40001); retry");
  }
  if (dynamic_cast<const pqxx::deadlock_detected*>(&e) != nullptr) {
    return Retryable(DatabaseFailure::kConflict, context,
                     "deadlock detected (SQLSTATE 40P01); retry");
  }
  if (dynamic_cast<const pqxx::transaction_rollback*>(&e) != nullptr) {
    return Retryable(DatabaseFailure::kConflict, context,
                     "transaction rolled back (SQLSTATE class 40); retry");
  }
  if (dynamic_cast<const pqxx::broken_connection*>(&e) != nullptr) {
    return Retryable(DatabaseFailure::kUnavailable, context,
                     absl::StrCat("database connection failed: ", PrimaryMessage(e.what())));
  }
  if (const auto* sql = dynamic_cast<const pqxx::sql_error*>(&e); sql != nullptr) {
    return FromSqlError(*sql, context);
  }
  if (dynamic_cast<const pqxx::pqxx_exception*>(&e) != nullptr) {
    // usage_error, conversion_error, range_error, internal_error, ...: programming errors on our
    // side. conversion_error messages can quote the unconvertible field, so they are not echoed.
    return Other(absl::StatusCode::kInternal, context, "database client error");
  }
  return Other(absl::StatusCode::kInternal, context, "unexpected exception");
}

}  // namespace dpq::store
