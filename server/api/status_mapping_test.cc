// The wording of failures for analysts and admins (status_mapping.h): an analyst's message is a
// fixed text per failure class, never the database's own text.
#include "server/api/status_mapping.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/base/database_failure.h"
#include "server/base/limit_error.h"

namespace dpq::api {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// What store/postgres/pqxx_status.cc and Database::Acquire write for the failures seen under load.
std::vector<absl::Status> DatabaseFailures() {
  return {
      RetryableDatabaseError(
          DatabaseFailure::kUnavailable,
          "result cache: cannot connect to the database: connection to server at "
          "\"127.0.0.1\", port 55432 failed: Connection refused"),
      RetryableDatabaseError(DatabaseFailure::kUnavailable,
                             "find allocation: database unavailable (SQLSTATE 57P01): terminating "
                             "connection due to administrator command"),
      RetryableDatabaseError(DatabaseFailure::kCommitInDoubt,
                             "debit: commit in doubt: the connection broke during COMMIT (pqxx: "
                             "server closed the connection unexpectedly; libpq)"),
      RetryableDatabaseError(DatabaseFailure::kConflict,
                             "debit: serialization failure (SQLSTATE 40001); retry"),
      OtherDatabaseError(absl::StatusCode::kInternal, "debit: SQL error (SQLSTATE 25P02)"),
      OtherDatabaseError(absl::StatusCode::kAlreadyExists,
                         "creating run: unique constraint violated (SQLSTATE 23505)"),
      OtherDatabaseError(absl::StatusCode::kDeadlineExceeded,
                         "scan: statement cancelled at the deadline (SQLSTATE 57014)"),
      absl::InternalError("stored batch has another size"),
  };
}

// Nothing of the driver, the server's address or its error codes reaches an analyst.
void ExpectNoDatabaseInternals(const std::string& message) {
  for (const char* leak :
       {"127.0.0.1", "55432", "port", "SQLSTATE", "57P01", "40001", "25P02", "23505", "57014",
        "pqxx", "libpq", "connection to server", "Connection refused", "terminating connection",
        "administrator command", "stored batch"}) {
    EXPECT_THAT(message, Not(HasSubstr(leak))) << message;
  }
}

TEST(StatusMappingTest, AnalystsGetAFixedMessagePerFailureClass) {
  for (const absl::Status& failure : DatabaseFailures()) {
    const absl::Status shown = ForAudience(failure, Audience::kAnalyst);
    ExpectNoDatabaseInternals(std::string(shown.message()));
    EXPECT_FALSE(shown.message().empty());
    EXPECT_TRUE(IsServiceFailure(failure));
  }
}

TEST(StatusMappingTest, RetryableFailuresAreUnavailableAndSayToRetryWithTheSameRequestId) {
  for (const absl::Status& failure : DatabaseFailures()) {
    if (!IsRetryableDatabaseFailure(failure)) continue;
    const absl::Status shown = ForAudience(failure, Audience::kAnalyst);
    EXPECT_EQ(shown.code(), absl::StatusCode::kUnavailable);
    EXPECT_THAT(std::string(shown.message()), HasSubstr("retry with the same request id"));
  }
  const absl::Status in_doubt =
      ForAudience(RetryableDatabaseError(DatabaseFailure::kCommitInDoubt, "debit: commit in doubt"),
                  Audience::kAnalyst);
  EXPECT_THAT(std::string(in_doubt.message()),
              AllOf(HasSubstr("may or may not have been recorded"), HasSubstr("at most once")));
}

// Two failures of the same class read the same, whatever the database said: the message is a
// function of the class alone (and of the request id, the caller's own or a random one).
TEST(StatusMappingTest, TheMessageDependsOnTheClassOnly) {
  const absl::Status a =
      ForAudience(RetryableDatabaseError(DatabaseFailure::kUnavailable,
                                         "x: connection to server at \"10.0.0.1\""),
                  Audience::kAnalyst);
  const absl::Status b =
      ForAudience(RetryableDatabaseError(DatabaseFailure::kUnavailable,
                                         "y: database unavailable (SQLSTATE 57P03)"),
                  Audience::kAnalyst);
  EXPECT_EQ(a, b);
}

// A server-drawn request id is the only way to retry safely: the message names it.
TEST(StatusMappingTest, TheRequestIdOfARetryableFailureIsNamed) {
  const absl::Status failure = WithRequestId(
      RetryableDatabaseError(DatabaseFailure::kCommitInDoubt, "debit: commit in doubt"),
      "q-0123456789abcdef0123456789abcdef");
  const absl::Status shown = ForAudience(failure, Audience::kAnalyst);
  EXPECT_EQ(shown.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(shown.message()),
              HasSubstr("(request_id q-0123456789abcdef0123456789abcdef)"));
}

TEST(StatusMappingTest, AdminsAlsoSeeTheDetail) {
  const absl::Status failure = DatabaseFailures()[0];
  const absl::Status shown = ForAudience(failure, Audience::kAdmin);
  EXPECT_EQ(shown.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(shown.message()),
              AllOf(HasSubstr("retry with the same request id"), HasSubstr("[detail: "),
                    HasSubstr("port 55432 failed: Connection refused")));
}

TEST(StatusMappingTest, NonRetryableDatabaseFailuresKeepTheirCode) {
  EXPECT_EQ(ForAudience(DatabaseFailures()[4], Audience::kAnalyst).code(),
            absl::StatusCode::kInternal);
  EXPECT_EQ(ForAudience(DatabaseFailures()[5], Audience::kAnalyst).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(ForAudience(DatabaseFailures()[6], Audience::kAnalyst).code(),
            absl::StatusCode::kDeadlineExceeded);
}

// Refusals are functions of the request, the schema and the ledger: they pass unchanged, for
// either audience, and so do the engine's own fixed failures (a charged query left unanswered).
TEST(StatusMappingTest, RefusalsAndFixedFailuresPassUnchanged) {
  const std::vector<absl::Status> unchanged = {
      absl::InvalidArgumentError("epsilon must be > 0"),
      absl::ResourceExhaustedError("budget of slid exhausted"),
      LimitError("more than 6000 queries per minute"),
      absl::NotFoundError("no dataset nope"),
      WithRequestId(
          absl::UnavailableError("request r-1 was charged but not answered (the database "
                                 "failed while answering); retry with the same request_id"),
          "r-1"),
  };
  for (const absl::Status& s : unchanged) {
    EXPECT_FALSE(IsServiceFailure(s)) << s;
    for (Audience audience : {Audience::kAnalyst, Audience::kAdmin}) {
      const absl::Status shown = ForAudience(s, audience);
      EXPECT_EQ(shown.code(), s.code());
      EXPECT_EQ(shown.message(), s.message());
      EXPECT_FALSE(shown.GetPayload("type.dpq/request-id").has_value());  // payloads stay inside
    }
  }
  EXPECT_TRUE(ForAudience(absl::OkStatus(), Audience::kAnalyst).ok());
}

}  // namespace
}  // namespace dpq::api
