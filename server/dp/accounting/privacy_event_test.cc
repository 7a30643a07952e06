#include "server/dp/accounting/privacy_event.h"

#include <cmath>
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace dpq::dp::accounting {
namespace {

using ::dpq::testing::StatusIs;
using ::testing::HasSubstr;

TEST(PrivacyEventTest, ValidationNamesTheParameter) {
  EXPECT_THAT(PrivacyEvent::Laplace(0).Validate(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("scale")));
  EXPECT_THAT(PrivacyEvent::Laplace(1, std::nan("")).Validate(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("sensitivity")));
  EXPECT_THAT(PrivacyEvent::Gaussian(-1).Validate(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("sigma")));
  EXPECT_THAT(PrivacyEvent::PoissonSubsampledGaussian(1.5, 1).Validate(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("sampling_rate")));
  EXPECT_THAT(PrivacyEvent::PoissonSubsampledGaussian(0.1, 0).Validate(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("noise_multiplier")));
  EXPECT_THAT(PrivacyEvent::PureDp(std::numeric_limits<double>::infinity()).Validate(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("epsilon")));
  EXPECT_THAT(PrivacyEvent::ApproxDp(1, 1).Validate(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("delta")));
  EXPECT_THAT(PrivacyEvent::PureDp(1, 0).Validate(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("count")));
}

TEST(PrivacyEventTest, SpecRoundTripsExactly) {
  for (const PrivacyEvent& e :
       {PrivacyEvent::Laplace(0.1 + 0.2, 3, 7), PrivacyEvent::Gaussian(1.0 / 3, 2),
        PrivacyEvent::PoissonSubsampledGaussian(256.0 / 60000, 1.1, 10000),
        PrivacyEvent::PureDp(0.7), PrivacyEvent::ApproxDp(1.3, 1e-7, 2)}) {
    auto parsed = ParsePrivacyEvent(e.ToSpec());
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_TRUE(parsed->SameMechanism(e)) << e.ToSpec();
    EXPECT_EQ(parsed->count, e.count);
    EXPECT_EQ(parsed->ToSpec(), e.ToSpec());
  }
}

TEST(PrivacyEventTest, ParsesCliSyntaxWithDefaults) {
  auto e = ParsePrivacyEvent("laplace:scale=10,count=100");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->kind, EventKind::kLaplace);
  EXPECT_EQ(e->scale, 10);
  EXPECT_EQ(e->sensitivity, 1);
  EXPECT_EQ(e->count, 100);
  auto s = ParsePrivacyEvent("subsampled-gaussian:q=0.01,sigma=1.1");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->noise_multiplier, 1.1);
  EXPECT_EQ(s->count, 1);
}

TEST(PrivacyEventTest, RejectsMalformedSpecs) {
  EXPECT_THAT(ParsePrivacyEvent("laplace"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ParsePrivacyEvent("poisson:q=1"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("poisson")));
  EXPECT_THAT(ParsePrivacyEvent("laplace:sigma=1"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("sigma")));
  EXPECT_THAT(ParsePrivacyEvent("approx:epsilon=1"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("delta")));
  EXPECT_THAT(ParsePrivacyEvent("pure:epsilon=abc"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("epsilon")));
  EXPECT_THAT(ParsePrivacyEvent("pure:epsilon=1,count=-3"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("count")));
  EXPECT_THAT(ParsePrivacyEvent("pure:epsilon=1,epsilon=2"),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace dpq::dp::accounting
