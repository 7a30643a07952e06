#include "server/base/logging.h"

#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace dpq {

void Log(LogLevel level, absl::string_view message) {
  const char* tag = level == LogLevel::kInfo ? "INFO" : level == LogLevel::kWarning ? "WARN" : "ERROR";
  std::string line = absl::StrCat(
      absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone()), " ", tag, " ",
      message, "\n");
  // One fwrite per line: stdio locks the stream, so concurrent lines do not interleave.
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace dpq
