// Minimal structured logging to stderr (Abseil 20220623 has no absl/log).
#ifndef DPQ_SERVER_BASE_LOGGING_H_
#define DPQ_SERVER_BASE_LOGGING_H_

#include "absl/strings/string_view.h"

namespace dpq {

enum class LogLevel { kInfo, kWarning, kError };

// Writes one line "<RFC 3339 UTC time> <LEVEL> <message>" to stderr; thread-safe.
void Log(LogLevel level, absl::string_view message);

inline void LogInfo(absl::string_view m) { Log(LogLevel::kInfo, m); }
inline void LogWarning(absl::string_view m) { Log(LogLevel::kWarning, m); }
inline void LogError(absl::string_view m) { Log(LogLevel::kError, m); }

}  // namespace dpq

#endif  // DPQ_SERVER_BASE_LOGGING_H_
