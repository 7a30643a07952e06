#include "client/dpqctl/upload_progress.h"

#include <chrono>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dpqctl {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// A clock the test moves by hand.
class FakeClock {
 public:
  UploadProgress::Clock AsClock() {
    return [this] { return now_; };
  }
  void Advance(std::chrono::milliseconds by) { now_ += by; }

 private:
  std::chrono::steady_clock::time_point now_{};
};

int CountOf(const std::string& text, char c) {
  return static_cast<int>(std::count(text.begin(), text.end(), c));
}

TEST(UploadProgressTest, DisabledWritesNothingButStillCounts) {
  std::ostringstream out;
  FakeClock clock;
  {
    UploadProgress progress(out, /*enabled=*/false, clock.AsClock());
    progress.AddChunk("a,b\n1,2\n3,4\n");
    clock.Advance(std::chrono::seconds(1));
    progress.AddChunk("5,6\n");
    EXPECT_EQ(progress.rows(), 3);
    progress.Finish();
  }
  EXPECT_EQ(out.str(), "");
}

TEST(UploadProgressTest, CountsLineEndsMinusHeaderRow) {
  std::ostringstream out;
  UploadProgress progress(out, false);
  EXPECT_EQ(progress.rows(), 0);
  progress.AddChunk("id,age");  // the header row, not yet ended
  EXPECT_EQ(progress.rows(), 0);
  progress.AddChunk("\r\n1,2\r\n3,");
  EXPECT_EQ(progress.rows(), 1);
  progress.AddChunk("4\r\n");
  EXPECT_EQ(progress.rows(), 2);
}

TEST(UploadProgressTest, DrawsFirstChunkThenAtMostFourTimesASecond) {
  std::ostringstream out;
  FakeClock clock;
  UploadProgress progress(out, true, clock.AsClock());
  clock.Advance(std::chrono::milliseconds(100));
  progress.AddChunk("h\n1\n2\n");  // drawn at once
  EXPECT_EQ(CountOf(out.str(), '\r'), 1);
  EXPECT_EQ(out.str(), "\rsent 2 rows");  // no rate yet: 100 ms say nothing about throughput
  for (int i = 0; i < 10; ++i) {          // 10 chunks within 100 ms: no redraw
    clock.Advance(std::chrono::milliseconds(10));
    progress.AddChunk("x\n");
  }
  EXPECT_EQ(CountOf(out.str(), '\r'), 1);
  clock.Advance(std::chrono::milliseconds(150));  // 250 ms since the first draw
  progress.AddChunk("x\n");
  EXPECT_EQ(CountOf(out.str(), '\r'), 2);
  EXPECT_THAT(out.str(), EndsWith("sent 13 rows (37 rows/s)"));
  EXPECT_EQ(CountOf(out.str(), '\n'), 0);  // updated in place until the end
}

TEST(UploadProgressTest, FinishEndsTheLineOnceWithTotals) {
  std::ostringstream out;
  FakeClock clock;
  UploadProgress progress(out, true, clock.AsClock());
  progress.AddChunk("h\n1\n");
  clock.Advance(std::chrono::milliseconds(2500));
  progress.AddChunk("2\n3\n4\n");
  progress.Finish();
  progress.Finish();
  EXPECT_THAT(out.str(), StartsWith("\r"));
  EXPECT_THAT(out.str(), EndsWith("\rsent 4 rows in 2.5 s (2 rows/s)\n"));
  EXPECT_EQ(CountOf(out.str(), '\n'), 1);
}

TEST(UploadProgressTest, ShorterLineBlanksTheRestOfTheLongerOne) {
  std::ostringstream out;
  FakeClock clock;
  UploadProgress progress(out, true, clock.AsClock());
  clock.Advance(std::chrono::milliseconds(300));
  progress.AddChunk("h\n" + std::string(3000, '\n'));  // 3000 rows in 0.3 s: 10000 rows/s
  clock.Advance(std::chrono::milliseconds(2700));
  progress.AddChunk("");  // still 3000 rows, at 3 s: 1000 rows/s, one character shorter
  const std::string text = out.str();
  EXPECT_THAT(text, StartsWith("\rsent 3000 rows (10000 rows/s)\r"));
  EXPECT_EQ(text.substr(text.rfind('\r') + 1), "sent 3000 rows (1000 rows/s) ");
}

TEST(UploadProgressTest, NothingSentMeansNoLineAtAll) {
  std::ostringstream out;
  { UploadProgress progress(out, true); }
  EXPECT_EQ(out.str(), "");
}

TEST(UploadProgressTest, DestructorEndsALineLeftOpen) {
  std::ostringstream out;
  {
    UploadProgress progress(out, true);
    progress.AddChunk("h\n1\n");
  }
  EXPECT_THAT(out.str(), EndsWith("\n"));
  EXPECT_EQ(CountOf(out.str(), '\n'), 1);
}

}  // namespace
}  // namespace dpqctl
