#include "server/query/csv_to_copy.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "server/base/status_macros.h"
#include "server/query/calendar.h"

namespace dpq::query {
namespace {

// COPY text format escapes (PostgreSQL docs, "COPY: Text Format"): backslash, tab, CR and LF.
// Most fields have none: they are appended whole.
void AppendCopyText(absl::string_view field, std::string* out) {
  // A plain loop: absl's find_first_of builds a 256-entry table per call, slower on short fields.
  if (std::none_of(field.begin(), field.end(),
                   [](char c) { return c == '\\' || c == '\t' || c == '\r' || c == '\n'; })) {
    out->append(field.data(), field.size());
    return;
  }
  for (char c : field) {
    switch (c) {
      case '\\': out->append("\\\\"); break;
      case '\t': out->append("\\t"); break;
      case '\r': out->append("\\r"); break;
      case '\n': out->append("\\n"); break;
      default: out->push_back(c);
    }
  }
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// -?digits(.digits)? in at most 300 characters: strtod, absl::SimpleAtod and PostgreSQL's float8
// input all accept it, and without an exponent |x| < 10^300 and any nonzero |x| > 10^-300, so it
// can neither overflow nor underflow. The common case of a numeric column, decided without parsing.
bool IsPlainDecimal(absl::string_view f) {
  if (f.size() > 300) return false;
  size_t i = (!f.empty() && f[0] == '-') ? 1 : 0;
  const size_t int_start = i;
  while (i < f.size() && IsDigit(f[i])) ++i;
  if (i == int_start) return false;
  if (i == f.size()) return true;
  if (f[i] != '.') return false;
  const size_t frac_start = ++i;
  while (i < f.size() && IsDigit(f[i])) ++i;
  return i > frac_start && i == f.size();
}

bool ParsesAsInteger(absl::string_view field) {
  // -?digits with at most 18 digits always fits in int64 (< 10^18 < 2^63): no parse needed.
  const size_t sign = (!field.empty() && field[0] == '-') ? 1 : 0;
  if (field.size() > sign && field.size() - sign <= 18 &&
      std::all_of(field.begin() + sign, field.end(), IsDigit)) {
    return true;
  }
  int64_t v;
  return absl::SimpleAtoi(field, &v);
}

// PostgreSQL's float8 input refuses values that overflow or underflow (ERANGE from strtod, e.g.
// "1e-400"); refuse them here too so the database never sees, and never echoes, a bad value.
bool ParsesAsFiniteDouble(absl::string_view field) {
  if (IsPlainDecimal(field)) return true;
  double v;
  if (!absl::SimpleAtod(field, &v) || !std::isfinite(v)) return false;
  std::string copy(field);
  errno = 0;
  char* end = nullptr;
  double strict = std::strtod(copy.c_str(), &end);
  return !(errno == ERANGE && (strict == 0 || !std::isfinite(strict)));
}

// Text must be valid UTF-8 without NUL (the database encoding); checked here so the error names
// the line instead of coming back from COPY. Overlong forms and surrogates are refused (RFC 3629).
bool IsValidUtf8Text(absl::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == 0) return false;
    if (c < 0x80) {
      ++i;
      continue;
    }
    int n;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) {
      n = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + n >= s.size()) return false;  // truncated sequence
    for (int k = 1; k <= n; ++k) {
      const unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n + 1;
  }
  return true;
}

}  // namespace

CsvToCopy::CsvToCopy(std::vector<ColumnSchema> columns) : columns_(std::move(columns)) {}

absl::Status CsvToCopy::CheckHeader(absl::string_view line) const {
  std::vector<absl::string_view> names = absl::StrSplit(line, ',');
  bool same = names.size() == columns_.size();
  for (size_t i = 0; same && i < names.size(); ++i) same = names[i] == columns_[i].name;
  if (!same) {
    return absl::InvalidArgumentError(
        absl::StrCat("line 1: the CSV header does not match the declared columns (",
                     columns_.size(), " expected, in order)"));
  }
  return absl::OkStatus();
}

absl::Status CsvToCopy::ProcessLine(absl::string_view line, std::string* out) {
  ++line_no_;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (!header_seen_) {
    header_seen_ = true;
    return CheckHeader(line);
  }
  if (line.empty()) return absl::OkStatus();  // tolerate blank lines (e.g. a trailing one)
  // Count first (a wrong field count is reported before any value), then walk the fields in
  // place: no per-line vector.
  const size_t fields = static_cast<size_t>(std::count(line.begin(), line.end(), ',')) + 1;
  if (fields != columns_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("line ", line_no_, ": expected ", columns_.size(), " fields, got ", fields));
  }
  const size_t start = out->size();
  size_t pos = 0;
  for (size_t i = 0; i < fields; ++i) {
    const size_t comma = i + 1 < fields ? line.find(',', pos) : line.size();
    const absl::string_view f = line.substr(pos, comma - pos);
    pos = comma + 1;
    if (i > 0) out->push_back('\t');
    if (f.empty()) {
      out->append("\\N");
      continue;
    }
    const ColumnSchema& col = columns_[i];
    if (col.is_calendar()) {
      // Parsed by dpq and written in one canonical form, so PostgreSQL's reading of it never
      // depends on DateStyle or TimeZone (a timestamp's 'Z' is dpq's to check, not theirs).
      const absl::optional<int64_t> v = ParseCalendarValue(col.type, f);
      if (!v.has_value()) {
        out->resize(start);
        return absl::InvalidArgumentError(absl::StrCat(
            "line ", line_no_, ", column ", col.name, ": value is not a valid ",
            ColumnTypeName(col.type), " (", CalendarFormHint(col.type), ", years 0001..9999)"));
      }
      out->append(CalendarSqlText(col.type, *v));
      continue;
    }
    bool ok = (col.type == ColumnType::kText && IsValidUtf8Text(f)) ||
              (col.type == ColumnType::kInteger && ParsesAsInteger(f)) ||
              (col.type == ColumnType::kDouble && ParsesAsFiniteDouble(f));
    if (!ok) {
      out->resize(start);  // no partial row
      // Never echo the value: it is row data.
      return absl::InvalidArgumentError(absl::StrCat("line ", line_no_, ", column ", col.name,
                                                     ": value is not a valid ",
                                                     ColumnTypeName(col.type)));
    }
    AppendCopyText(f, out);
  }
  out->push_back('\n');
  ++rows_;
  return absl::OkStatus();
}

absl::Status CsvToCopy::Feed(absl::string_view chunk, std::string* out) {
  while (!chunk.empty()) {
    size_t nl = chunk.find('\n');
    if (nl == absl::string_view::npos) {
      pending_.append(chunk.data(), chunk.size());
      if (pending_.size() > kMaxLineBytes) {
        return absl::InvalidArgumentError(
            absl::StrCat("line ", line_no_ + 1, ": longer than ", kMaxLineBytes, " bytes"));
      }
      return absl::OkStatus();
    }
    if (pending_.size() + nl > kMaxLineBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", line_no_ + 1, ": longer than ", kMaxLineBytes, " bytes"));
    }
    if (pending_.empty()) {
      RETURN_IF_ERROR(ProcessLine(chunk.substr(0, nl), out));
    } else {
      pending_.append(chunk.data(), nl);
      RETURN_IF_ERROR(ProcessLine(pending_, out));
      pending_.clear();
    }
    chunk.remove_prefix(nl + 1);
  }
  return absl::OkStatus();
}

absl::Status CsvToCopy::Finish(std::string* out) {
  if (!pending_.empty()) {
    RETURN_IF_ERROR(ProcessLine(pending_, out));
    pending_.clear();
  }
  if (!header_seen_) return absl::InvalidArgumentError("the CSV is empty: no header row");
  return absl::OkStatus();
}

}  // namespace dpq::query
