// Structured logging to stderr (Abseil 20220623 has no absl/log): one line per event, either JSON
// (one object per line: `time`, `level`, `msg` and the event's fields) or text
// ("<RFC 3339 UTC time> <LEVEL> <msg> key=value ..."). Never log a token or a row value: callers
// pass only operational facts (names, codes, durations).
#ifndef DPQ_SERVER_BASE_LOGGING_H_
#define DPQ_SERVER_BASE_LOGGING_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dpq {

enum class LogLevel { kDebug, kInfo, kWarning, kError };
enum class LogFormat { kText, kJson };

// "debug", "info", "warning" (or "warn"), "error"; INVALID_ARGUMENT otherwise.
absl::StatusOr<LogLevel> ParseLogLevel(absl::string_view name);
// "json", "text", or "auto" (json unless stderr is a terminal); INVALID_ARGUMENT otherwise.
absl::StatusOr<LogFormat> ParseLogFormat(absl::string_view name);

// Process-wide; set once at start-up before other threads log (defaults: text, info).
void ConfigureLogging(LogFormat format, LogLevel min_level);
bool LogEnabled(LogLevel level);

// One field of an event. A number is written unquoted in JSON.
struct LogField {
  LogField(std::string k, std::string v) : key(std::move(k)), value(std::move(v)) {}
  LogField(std::string k, double v);
  std::string key, value;
  bool number = false;
};

// Writes one line; thread-safe (one fwrite per line, so lines never interleave).
void Log(LogLevel level, absl::string_view message, const std::vector<LogField>& fields = {});
// The line Log would write (for tests), without the trailing newline.
std::string FormatLogLine(LogFormat format, LogLevel level, absl::string_view message,
                          const std::vector<LogField>& fields, absl::string_view time);

inline void LogInfo(absl::string_view m) { Log(LogLevel::kInfo, m); }
inline void LogWarning(absl::string_view m) { Log(LogLevel::kWarning, m); }
inline void LogError(absl::string_view m) { Log(LogLevel::kError, m); }

}  // namespace dpq

#endif  // DPQ_SERVER_BASE_LOGGING_H_
