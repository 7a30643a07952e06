#include "server/query/csv_to_copy.h"

#include <cmath>
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

bool ParsesAsFiniteDouble(absl::string_view field) {
  double v;
  return absl::SimpleAtod(field, &v) && std::isfinite(v);
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
    bool ok = col.type == ColumnType::kText || (col.type == ColumnType::kInteger && ParsesAsInteger(f)) ||
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
