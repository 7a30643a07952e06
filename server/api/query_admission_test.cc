#include "server/api/query_admission.h"

#include <optional>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dpq::api {
namespace {

using ::testing::HasSubstr;

const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);

TEST(QueryAdmissionTest, RefusesTheQueryBeyondTheConcurrencyLimitUntilOneFinishes) {
  QueryAdmission admission({/*max_concurrent=*/2, /*max_per_minute=*/0});
  std::vector<QueryAdmission::Ticket> held;
  held.push_back(*admission.Admit(7, kT0));
  held.push_back(*admission.Admit(7, kT0));
  absl::StatusOr<QueryAdmission::Ticket> third = admission.Admit(7, kT0);
  ASSERT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(third.status().message(), HasSubstr("--max-concurrent-queries"));
  EXPECT_TRUE(admission.Admit(8, kT0).ok()) << "another analyst has its own slots";
  held.pop_back();  // one finishes
  EXPECT_EQ(admission.InFlight(7), 1);
  EXPECT_TRUE(admission.Admit(7, kT0).ok());
  EXPECT_EQ(admission.InFlight(7), 1) << "the ticket of the admitted query was released";
}

TEST(QueryAdmissionTest, AdmitsAtMostTheLimitInAnySixtySecondWindow) {
  QueryAdmission admission({/*max_concurrent=*/0, /*max_per_minute=*/3});
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(admission.Admit(1, kT0 + absl::Seconds(10 * i)).ok());
  absl::StatusOr<QueryAdmission::Ticket> fourth = admission.Admit(1, kT0 + absl::Seconds(59));
  ASSERT_EQ(fourth.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(fourth.status().message(), HasSubstr("--max-queries-per-minute"));
  EXPECT_THAT(fourth.status().message(), HasSubstr("retry in 1 s"));
  // The first admission leaves the window exactly 60 s after it.
  EXPECT_FALSE(admission.Admit(1, kT0 + absl::Seconds(59.9)).ok());
  EXPECT_TRUE(admission.Admit(1, kT0 + absl::Seconds(60)).ok());
  EXPECT_FALSE(admission.Admit(1, kT0 + absl::Seconds(61)).ok()) << "10 s and 20 s still count";
}

TEST(QueryAdmissionTest, RefusedRequestsDoNotCountAgainstTheRate) {
  QueryAdmission admission({/*max_concurrent=*/1, /*max_per_minute=*/2});
  std::optional<QueryAdmission::Ticket> held(*admission.Admit(1, kT0));
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(admission.Admit(1, kT0).ok());  // concurrency refusals
  held.reset();
  EXPECT_TRUE(admission.Admit(1, kT0).ok()) << "only admitted queries fill the window";
  EXPECT_FALSE(admission.Admit(1, kT0).ok());
}

TEST(QueryAdmissionTest, ZeroMeansUnlimited) {
  QueryAdmission admission({0, 0});
  std::vector<QueryAdmission::Ticket> held;
  for (int i = 0; i < 10000; ++i) held.push_back(*admission.Admit(1, kT0));
  EXPECT_EQ(admission.InFlight(1), 10000);
}

}  // namespace
}  // namespace dpq::api
