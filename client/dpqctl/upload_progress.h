// The progress line of `dpqctl dataset create` and `dataset load`: rows sent so far and rows per
// second, redrawn in place ('\r') at most four times a second, ended with '\n' when the upload
// ends. Meant for a person watching a terminal: callers enable it only when stderr is one
// (StderrIsTerminal), so scripts, pipes and tests never see it.
#ifndef DPQ_CLIENT_DPQCTL_UPLOAD_PROGRESS_H_
#define DPQ_CLIENT_DPQCTL_UPLOAD_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

#include "absl/strings/string_view.h"

namespace dpqctl {

// True when file descriptor 2 is a terminal.
bool StderrIsTerminal();

class UploadProgress {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  // Redraws are at least this far apart.
  static constexpr std::chrono::milliseconds kRedrawInterval{250};

  // Writes to `out` only when `enabled`. The rate is measured from construction; `clock` is
  // replaceable for tests.
  UploadProgress(
      std::ostream& out, bool enabled,
      Clock clock = [] { return std::chrono::steady_clock::now(); });
  // Ends the line if Finish() was not called (an upload that failed half-way).
  ~UploadProgress();

  UploadProgress(const UploadProgress&) = delete;
  UploadProgress& operator=(const UploadProgress&) = delete;

  // Counts the line ends of a CSV chunk just sent (the first line is the header row, not a row;
  // a last row without '\n' is not counted: approximate is enough here). Redraws the line for the
  // first chunk and then when kRedrawInterval has passed since the last redraw.
  void AddChunk(absl::string_view chunk);

  // Draws the final figures and ends the line with '\n' (when a line was drawn at all: not before
  // the first chunk). Later calls do nothing.
  void Finish();

  // Data rows seen so far (line ends minus the header row).
  int64_t rows() const { return line_ends_ > 0 ? line_ends_ - 1 : 0; }

 private:
  void Draw(bool final);

  std::ostream& out_;
  const bool enabled_;
  const Clock clock_;
  const std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  bool drawn_ = false;
  bool finished_ = false;
  int64_t line_ends_ = 0;
  size_t last_width_ = 0;
};

}  // namespace dpqctl

#endif  // DPQ_CLIENT_DPQCTL_UPLOAD_PROGRESS_H_
