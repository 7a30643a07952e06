#include "server/store/postgres/pqxx_status.h"

#include <pqxx/except>

#include <stdexcept>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace dpq::store {
namespace {

using ::dpq::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

TEST(StatusFromPqxxTest, SerializationFailureAndDeadlockAreAborted) {
  EXPECT_THAT(StatusFromPqxx(pqxx::serialization_failure("could not serialize"), "debit"),
              StatusIs(absl::StatusCode::kAborted, StartsWith("debit: ")));
  EXPECT_THAT(StatusFromPqxx(pqxx::deadlock_detected("deadlock"), "debit"),
              StatusIs(absl::StatusCode::kAborted, HasSubstr("40P01")));
}

TEST(StatusFromPqxxTest, BrokenConnectionIsUnavailable) {
  EXPECT_THAT(StatusFromPqxx(pqxx::broken_connection("could not connect to server\nmore"), "connect"),
              StatusIs(absl::StatusCode::kUnavailable,
                       AllOf(HasSubstr("could not connect to server"), Not(HasSubstr("more")))));
  EXPECT_THAT(StatusFromPqxx(pqxx::too_many_connections("sorry"), "connect"),
              StatusIs(absl::StatusCode::kUnavailable));
}

TEST(StatusFromPqxxTest, UniqueViolationIsAlreadyExistsWithoutRowData) {
  const pqxx::unique_violation e(
      "ERROR:  duplicate key value violates unique constraint \"analysts_name_key\"\n"
      "DETAIL:  Key (name)=(alice) already exists.\n",
      "INSERT INTO analysts ...", "23505");
  EXPECT_THAT(StatusFromPqxx(e, "creating analyst"),
              StatusIs(absl::StatusCode::kAlreadyExists,
                       AllOf(HasSubstr("creating analyst"), HasSubstr("23505"), Not(HasSubstr("alice")))));
}

TEST(StatusFromPqxxTest, InDoubtIsInternalCommitInDoubt) {
  EXPECT_THAT(StatusFromPqxx(pqxx::in_doubt_error("lost connection during commit"), "debit"),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("commit in doubt")));
  EXPECT_THAT(StatusFromPqxx(pqxx::statement_completion_unknown("?"), "debit"),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("commit in doubt")));
}

TEST(StatusFromPqxxTest, DataErrorsDoNotEchoTheServerMessage) {
  const pqxx::data_exception e("ERROR:  invalid input syntax for type integer: \"secret-value\"\n",
                               "SELECT ...", "22P02");
  EXPECT_THAT(StatusFromPqxx(e, "query"),
              StatusIs(absl::StatusCode::kInternal, AllOf(HasSubstr("22P02"), Not(HasSubstr("secret")))));
}

TEST(StatusFromPqxxTest, SyntaxErrorsQuoteThePrimaryMessage) {
  const pqxx::undefined_table e("ERROR:  relation \"no_such_table\" does not exist\nLINE 1: ...\n",
                                "SELECT * FROM no_such_table", "42P01");
  EXPECT_THAT(StatusFromPqxx(e, "migrating"),
              StatusIs(absl::StatusCode::kInternal,
                       AllOf(HasSubstr("42P01"), HasSubstr("relation \"no_such_table\" does not exist"),
                             Not(HasSubstr("LINE 1")), Not(HasSubstr("ERROR:")))));
}

TEST(StatusFromPqxxTest, SqlStateClassesWithoutDedicatedClassAreStillMapped) {
  EXPECT_THAT(StatusFromPqxx(pqxx::sql_error("ERROR:  terminating connection", "", "57P01"), "q"),
              StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(StatusFromPqxx(pqxx::sql_error("x", "", "40001"), "q"), StatusIs(absl::StatusCode::kAborted));
}

TEST(StatusFromPqxxTest, OtherExceptionsAreInternal) {
  EXPECT_THAT(StatusFromPqxx(pqxx::conversion_error("cannot convert 'secret'"), "reading"),
              StatusIs(absl::StatusCode::kInternal, Not(HasSubstr("secret"))));
  EXPECT_THAT(StatusFromPqxx(std::runtime_error("boom"), "reading"),
              StatusIs(absl::StatusCode::kInternal, StartsWith("reading: ")));
}

}  // namespace
}  // namespace dpq::store
