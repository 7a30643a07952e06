// ScanTimeoutChange: a scan is never cut before its deadline, never left running much past it, and
// calls with the same deadline find the session's timeout serving.
#include "server/store/scan_session.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dpq::store {
namespace {

using ::testing::Optional;

TEST(ScanTimeoutChangeTest, NoDeadlineWantsNoTimeoutAndKeepsNone) {
  EXPECT_EQ(ScanTimeoutChange(0, absl::InfiniteDuration()), std::nullopt);
  EXPECT_THAT(ScanTimeoutChange(61000, absl::InfiniteDuration()), Optional(0));
  EXPECT_THAT(ScanTimeoutChange(-1, absl::InfiniteDuration()), Optional(0));
}

TEST(ScanTimeoutChangeTest, AFirstDeadlineSetsItsTimePlusHalfTheAllowance) {
  // 60 s: the allowance is a tenth, 6 s, and the timeout 63 s.
  EXPECT_THAT(ScanTimeoutChange(0, absl::Seconds(60)), Optional(63000));
  // 2 s: the allowance is the floor of 1 s.
  EXPECT_THAT(ScanTimeoutChange(0, absl::Seconds(2)), Optional(2500));
  // Unknown (negative) is replaced; a fraction of a millisecond rounds up, never to 0 (none).
  EXPECT_THAT(ScanTimeoutChange(-1, absl::Microseconds(10)), Optional(1 + 500));
}

TEST(ScanTimeoutChangeTest, LaterCallsWithTheSameDeadlineFindItServing) {
  const int64_t held = *ScanTimeoutChange(0, absl::Seconds(60));
  for (absl::Duration remaining : {absl::Milliseconds(59990), absl::Milliseconds(60000),
                                   absl::Milliseconds(60500), absl::Milliseconds(58000)}) {
    EXPECT_EQ(ScanTimeoutChange(held, remaining), std::nullopt) << remaining;
  }
}

TEST(ScanTimeoutChangeTest, NeverCutsAScanBeforeItsDeadline) {
  // Held 63 s: a call with 64 s left would be cut a second early, so the timeout rises.
  EXPECT_THAT(ScanTimeoutChange(63000, absl::Seconds(64)), Optional(64000 + 3200));
  for (int64_t held : {1, 999, 5000, 63000, 200000}) {
    for (int64_t left_ms : {1, 500, 4000, 60000, 199999, 300000}) {
      const std::optional<int64_t> change = ScanTimeoutChange(held, absl::Milliseconds(left_ms));
      const int64_t effective = change.value_or(held);
      EXPECT_GE(effective, left_ms) << held << " held, " << left_ms << " ms left";
      EXPECT_LE(effective - left_ms, std::max<int64_t>(1000, left_ms / 10))
          << held << " held, " << left_ms << " ms left";
    }
  }
}

TEST(ScanTimeoutChangeTest, AShortDeadlineLowersALongTimeout) {
  // Held 63 s, 1 s left: the scan must not run on 62 s after its client gave up.
  EXPECT_THAT(ScanTimeoutChange(63000, absl::Seconds(1)), Optional(1500));
}

}  // namespace
}  // namespace dpq::store
