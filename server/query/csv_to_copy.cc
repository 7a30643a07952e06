#include "server/query/csv_to_copy.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstdint>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "server/base/status_macros.h"

namespace dpq::query {
namespace {

// COPY text format escapes (PostgreSQL docs, "COPY: Text Format"): backslash, tab, CR and LF.
void AppendCopyText(absl::string_view field, std::string* out) {
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

bool ParsesAsInteger(absl::string_view field) {
  int64_t v;
  return absl::SimpleAtoi(field, &v);
}

// PostgreSQL's float8 input refuses values that overflow or underflow (ERANGE from strtod, e.g.
// "1e-400"); refuse them here too so the database never sees, and never echoes, a bad value.
bool ParsesAsFiniteDouble(absl::string_view field) {
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
    return absl::InvalidArgumentError(absl::StrCat(
        "line 1: the CSV header does not match the declared columns (", columns_.size(),
        " expected, in order)"));
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
  std::vector<absl::string_view> fields = absl::StrSplit(line, ',');
  if (fields.size() != columns_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("line ", line_no_, ": expected ",
                                                   columns_.size(), " fields, got ", fields.size()));
  }
  for (size_t i = 0; i < fields.size(); ++i) {
    absl::string_view f = fields[i];
    if (i > 0) out->push_back('\t');
    if (f.empty()) {
      out->append("\\N");
      continue;
    }
    const ColumnSchema& col = columns_[i];
    bool ok = (col.type == ColumnType::kText && IsValidUtf8Text(f)) ||
              (col.type == ColumnType::kInteger && ParsesAsInteger(f)) ||
              (col.type == ColumnType::kDouble && ParsesAsFiniteDouble(f));
    if (!ok) {
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
