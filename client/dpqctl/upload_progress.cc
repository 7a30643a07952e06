#include "client/dpqctl/upload_progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace dpqctl {

bool StderrIsTerminal() { return isatty(STDERR_FILENO) == 1; }

UploadProgress::UploadProgress(std::ostream& out, bool enabled, Clock clock)
    : out_(out),
      enabled_(enabled),
      clock_(std::move(clock)),
      start_(clock_()),
      last_draw_(start_) {}

UploadProgress::~UploadProgress() { Finish(); }

void UploadProgress::AddChunk(absl::string_view chunk) {
  line_ends_ += std::count(chunk.begin(), chunk.end(), '\n');
  if (!enabled_ || finished_) return;
  if (!drawn_ || clock_() - last_draw_ >= kRedrawInterval) Draw(/*final=*/false);
}

void UploadProgress::Finish() {
  if (finished_) return;
  // Nothing was drawn when nothing was sent: no line to end.
  if (enabled_ && drawn_) Draw(/*final=*/true);
  finished_ = true;
}

void UploadProgress::Draw(bool final) {
  const auto now = clock_();
  const double seconds = std::chrono::duration<double>(now - start_).count();
  std::string line = absl::StrCat("sent ", rows(), " rows");
  if (final) absl::StrAppend(&line, absl::StrFormat(" in %.1f s", seconds));
  // Over the first moments the rate says more about buffering than about throughput (the first
  // chunk leaves "at" millions of rows per second); it is shown from one redraw interval on, and
  // in the final line unless the whole upload took under a millisecond.
  const double min_seconds = final ? 1e-3 : std::chrono::duration<double>(kRedrawInterval).count();
  if (seconds >= min_seconds) {
    absl::StrAppend(&line, " (", std::llround(static_cast<double>(rows()) / seconds), " rows/s)");
  }
  // Blank out what is left of a longer previous line (the rate may shrink by a digit).
  const size_t width = line.size();
  if (width < last_width_) line.append(last_width_ - width, ' ');
  last_width_ = width;
  out_ << '\r' << line;
  if (final) out_ << '\n';
  out_.flush();
  drawn_ = true;
  last_draw_ = now;
}

}  // namespace dpqctl
