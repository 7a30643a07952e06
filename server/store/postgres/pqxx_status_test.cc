#include "server/store/postgres/pqxx_status.h"

#include <pqxx/except>

#include <stdexcept>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/base/database_failure.h"
#include "tests/support/status_matchers.h"

namespace dpq::store {
namespace {

using ::dpq::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Optional;
using ::testing::StartsWith;

// Every failure after which a retry with the same request id is safe is UNAVAILABLE, with its class.
void ExpectRetryable(const absl::Status& s, DatabaseFailure failure) {
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_THAT(DatabaseFailureOf(s), Optional(failure)) << s;
  EXPECT_TRUE(IsRetryableDatabaseFailure(s)) << s;
}

TEST(StatusFromPqxxTest, SerializationFailureAndDeadlockAreRetryableConflicts) {
  const absl::Status serialization =
      StatusFromPqxx(pqxx::serialization_failure("could not serialize"), "debit");
  ExpectRetryable(serialization, DatabaseFailure::kConflict);
  EXPECT_THAT(std::string(serialization.message()), StartsWith("debit: "));
  const absl::Status deadlock = StatusFromPqxx(pqxx::deadlock_detected("deadlock"), "debit");
  ExpectRetryable(deadlock, DatabaseFailure::kConflict);
  EXPECT_THAT(std::string(deadlock.message()), HasSubstr("40P01"));
  ExpectRetryable(StatusFromPqxx(pqxx::sql_error("x", "", "40001"), "q"),
                  DatabaseFailure::kConflict);
}

TEST(StatusFromPqxxTest, BrokenConnectionIsUnavailable) {
  const absl::Status s =
      StatusFromPqxx(pqxx::broken_connection("could not connect to server\nmore"), "connect");
  ExpectRetryable(s, DatabaseFailure::kUnavailable);
  // The detail stays in the status (dpqd's log, admins); api/status_mapping.h hides it from analysts.
  EXPECT_THAT(std::string(s.message()),
              AllOf(HasSubstr("could not connect to server"), Not(HasSubstr("more"))));
  ExpectRetryable(StatusFromPqxx(pqxx::too_many_connections("sorry"), "connect"),
                  DatabaseFailure::kUnavailable);
}

// A terminated backend (pg_terminate_backend, a fast or immediate shutdown), a server starting up or
// shutting down, a lost connection and a lack of resources all left nothing done.
TEST(StatusFromPqxxTest, ServerShutdownsAndResourceShortagesAreUnavailable) {
  for (const char* state :
       {"57P01", "57P02", "57P03", "08006", "08003", "53100", "53200", "53300"}) {
    const absl::Status s = StatusFromPqxx(
        pqxx::sql_error("FATAL:  terminating connection", "SELECT 1", state), "find allocation");
    ExpectRetryable(s, DatabaseFailure::kUnavailable);
    EXPECT_THAT(std::string(s.message()), AllOf(StartsWith("find allocation: "), HasSubstr(state)));
  }
}

TEST(StatusFromPqxxTest, UniqueViolationIsAlreadyExistsWithoutRowData) {
  const pqxx::unique_violation e(
      "ERROR:  duplicate key value violates unique constraint \"analysts_name_key\"\n"
      "DETAIL:  Key (name)=(alice) already exists.\n",
      "INSERT INTO analysts ...", "23505");
  EXPECT_THAT(
      StatusFromPqxx(e, "creating analyst"),
      StatusIs(absl::StatusCode::kAlreadyExists,
               AllOf(HasSubstr("creating analyst"), HasSubstr("23505"), Not(HasSubstr("alice")))));
}

// The COMMIT may or may not have taken effect: only a retry with the same request id tells, and it
// is safe (it replays the committed row or commits it once), so the code is UNAVAILABLE, not
// INTERNAL (which a client must not retry).
TEST(StatusFromPqxxTest, CommitInDoubtIsUnavailableAndMarkedInDoubt) {
  const absl::Status s =
      StatusFromPqxx(pqxx::in_doubt_error("lost connection during commit"), "debit");
  ExpectRetryable(s, DatabaseFailure::kCommitInDoubt);
  EXPECT_THAT(std::string(s.message()), HasSubstr("commit in doubt"));
  ExpectRetryable(StatusFromPqxx(pqxx::statement_completion_unknown("?"), "debit"),
                  DatabaseFailure::kCommitInDoubt);
}

TEST(StatusFromPqxxTest, StatementTimeoutIsDeadlineExceeded) {
  const absl::Status s =
      StatusFromPqxx(pqxx::sql_error("ERROR:  canceling statement", "", "57014"), "scan");
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_THAT(DatabaseFailureOf(s), Optional(DatabaseFailure::kOther));
  EXPECT_FALSE(IsRetryableDatabaseFailure(s));
}

TEST(StatusFromPqxxTest, DataErrorsDoNotEchoTheServerMessage) {
  const pqxx::data_exception e("ERROR:  invalid input syntax for type integer: \"secret-value\"\n",
                               "SELECT ...", "22P02");
  EXPECT_THAT(
      StatusFromPqxx(e, "query"),
      StatusIs(absl::StatusCode::kInternal, AllOf(HasSubstr("22P02"), Not(HasSubstr("secret")))));
}

TEST(StatusFromPqxxTest, SyntaxErrorsQuoteThePrimaryMessage) {
  const pqxx::undefined_table e("ERROR:  relation \"no_such_table\" does not exist\nLINE 1: ...\n",
                                "SELECT * FROM no_such_table", "42P01");
  EXPECT_THAT(
      StatusFromPqxx(e, "migrating"),
      StatusIs(absl::StatusCode::kInternal,
               AllOf(HasSubstr("42P01"), HasSubstr("relation \"no_such_table\" does not exist"),
                     Not(HasSubstr("LINE 1")), Not(HasSubstr("ERROR:")))));
}

TEST(StatusFromPqxxTest, OtherExceptionsAreInternal) {
  EXPECT_THAT(StatusFromPqxx(pqxx::conversion_error("cannot convert 'secret'"), "reading"),
              StatusIs(absl::StatusCode::kInternal, Not(HasSubstr("secret"))));
  const absl::Status boom = StatusFromPqxx(std::runtime_error("boom"), "reading");
  EXPECT_THAT(boom, StatusIs(absl::StatusCode::kInternal, StartsWith("reading: ")));
  // Marked as the database's, so that analysts get a fixed message for it too.
  EXPECT_THAT(DatabaseFailureOf(boom), Optional(DatabaseFailure::kOther));
  EXPECT_FALSE(IsRetryableDatabaseFailure(boom));
}

}  // namespace
}  // namespace dpq::store
