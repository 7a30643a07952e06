#include "server/base/logging.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace dpq {
namespace {

std::atomic<LogFormat> g_format{LogFormat::kText};
std::atomic<LogLevel> g_min_level{LogLevel::kInfo};

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarning: return "warning";
    case LogLevel::kError: return "error";
  }
  return "info";
}

const char* TextTag(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "DEBUG";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kWarning: return "WARN";
    case LogLevel::kError: return "ERROR";
  }
  return "INFO";
}

// A JSON string literal: nlohmann-json escapes quotes, backslashes and control characters, and
// with `replace` turns bytes that are not valid UTF-8 into U+FFFD, so every line stays valid JSON
// whatever a client sent (a request's dataset name is echoed).
void AppendJsonString(std::string* out, absl::string_view s) {
  out->append(nlohmann::json(std::string(s))
                  .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

// Text values with spaces, quotes or control characters are quoted and escaped like JSON.
void AppendTextValue(std::string* out, absl::string_view v) {
  bool plain = !v.empty();
  for (char ch : v) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c == '"' || c == '\\' || c == 0x7f || c >= 0x80) plain = false;
  }
  if (plain) {
    out->append(v.data(), v.size());
  } else {
    AppendJsonString(out, v);
  }
}

}  // namespace

LogField::LogField(std::string k, double v)
    : key(std::move(k)), value(absl::StrFormat("%.6g", v)), number(true) {}

absl::StatusOr<LogLevel> ParseLogLevel(absl::string_view name) {
  const std::string n = absl::AsciiStrToLower(name);
  if (n == "debug") return LogLevel::kDebug;
  if (n == "info") return LogLevel::kInfo;
  if (n == "warning" || n == "warn") return LogLevel::kWarning;
  if (n == "error") return LogLevel::kError;
  return absl::InvalidArgumentError(
      absl::StrCat("--log-level must be debug, info, warning or error, not '", name, "'"));
}

absl::StatusOr<LogFormat> ParseLogFormat(absl::string_view name) {
  const std::string n = absl::AsciiStrToLower(name);
  if (n == "json") return LogFormat::kJson;
  if (n == "text") return LogFormat::kText;
  if (n == "auto") return isatty(STDERR_FILENO) ? LogFormat::kText : LogFormat::kJson;
  return absl::InvalidArgumentError(
      absl::StrCat("--log-format must be json, text or auto, not '", name, "'"));
}

void ConfigureLogging(LogFormat format, LogLevel min_level) {
  g_format.store(format);
  g_min_level.store(min_level);
}

bool LogEnabled(LogLevel level) { return level >= g_min_level.load(std::memory_order_relaxed); }

std::string FormatLogLine(LogFormat format, LogLevel level, absl::string_view message,
                          const std::vector<LogField>& fields, absl::string_view time) {
  std::string line;
  if (format == LogFormat::kJson) {
    line = "{\"time\":";
    AppendJsonString(&line, time);
    absl::StrAppend(&line, ",\"level\":\"", LevelName(level), "\",\"msg\":");
    AppendJsonString(&line, message);
    for (const LogField& f : fields) {
      line.push_back(',');
      AppendJsonString(&line, f.key);
      line.push_back(':');
      if (f.number) {
        line.append(f.value);
      } else {
        AppendJsonString(&line, f.value);
      }
    }
    line.push_back('}');
    return line;
  }
  line = absl::StrCat(time, " ", TextTag(level), " ", message);
  for (const LogField& f : fields) {
    absl::StrAppend(&line, " ", f.key, "=");
    AppendTextValue(&line, f.value);
  }
  return line;
}

void Log(LogLevel level, absl::string_view message, const std::vector<LogField>& fields) {
  if (!LogEnabled(level)) return;
  std::string line =
      FormatLogLine(g_format.load(std::memory_order_relaxed), level, message, fields,
                    absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone()));
  line.push_back('\n');
  // One fwrite per line: stdio locks the stream, so concurrent lines do not interleave.
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace dpq
