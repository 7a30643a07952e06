#include "server/base/database_failure.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dpq {
namespace {

using ::testing::Optional;

TEST(DatabaseFailureTest, RetryableFailuresAreUnavailableWithTheirClass) {
  for (DatabaseFailure f : {DatabaseFailure::kUnavailable, DatabaseFailure::kCommitInDoubt,
                            DatabaseFailure::kConflict}) {
    const absl::Status s = RetryableDatabaseError(f, "detail");
    EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
    EXPECT_THAT(DatabaseFailureOf(s), Optional(f));
    EXPECT_TRUE(IsRetryableDatabaseFailure(s));
  }
  const absl::Status other = OtherDatabaseError(absl::StatusCode::kAlreadyExists, "23505");
  EXPECT_EQ(other.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(DatabaseFailureOf(other), Optional(DatabaseFailure::kOther));
  EXPECT_FALSE(IsRetryableDatabaseFailure(other));
  EXPECT_EQ(DatabaseFailureOf(absl::UnavailableError("not from the database")), absl::nullopt);
  EXPECT_FALSE(IsRetryableDatabaseFailure(absl::UnavailableError("not from the database")));
}

TEST(DatabaseFailureTest, OnlyRetryableCodesCarryTheRequestId) {
  EXPECT_THAT(RequestIdOf(WithRequestId(absl::UnavailableError("x"), "q-1")),
              Optional(std::string("q-1")));
  EXPECT_THAT(RequestIdOf(WithRequestId(absl::DeadlineExceededError("x"), "q-2")),
              Optional(std::string("q-2")));
  EXPECT_EQ(RequestIdOf(WithRequestId(absl::InvalidArgumentError("x"), "q-3")), absl::nullopt);
  EXPECT_EQ(RequestIdOf(WithRequestId(absl::UnavailableError("x"), "")), absl::nullopt);
  // The class survives: the request id is a second payload.
  EXPECT_THAT(DatabaseFailureOf(WithRequestId(
                  RetryableDatabaseError(DatabaseFailure::kCommitInDoubt, "x"), "q-4")),
              Optional(DatabaseFailure::kCommitInDoubt));
}

}  // namespace
}  // namespace dpq
