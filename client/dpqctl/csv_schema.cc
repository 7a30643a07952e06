#include "client/dpqctl/csv_schema.h"

#include <charconv>
#include <cmath>
#include <set>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace dpqctl {

absl::string_view CsvValueTypeWord(CsvValueType type) {
  switch (type) {
    case CsvValueType::kInteger: return "integer";
    case CsvValueType::kDouble: return "double";
    case CsvValueType::kText: return "text";
  }
  return "text";
}

std::vector<absl::string_view> SplitCsvLine(absl::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::vector<absl::string_view> fields;
  size_t start = 0;
  while (true) {
    size_t comma = line.find(',', start);
    if (comma == absl::string_view::npos) {
      fields.push_back(line.substr(start));
      return fields;
    }
    fields.push_back(line.substr(start, comma - start));
    start = comma + 1;
  }
}

bool ParsesAsInt64(absl::string_view value) {
  if (value.empty()) return false;
  int64_t parsed = 0;
  const char* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, parsed);
  return ec == std::errc() && ptr == end;
}

bool ParsesAsFiniteDouble(absl::string_view value) {
  if (value.empty()) return false;
  // from_chars(general) accepts "inf" and "nan" spelt out; the isfinite check refuses them, and
  // out-of-range values come back as an error rather than as infinity.
  double parsed = 0;
  const char* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, parsed, std::chars_format::general);
  return ec == std::errc() && ptr == end && std::isfinite(parsed);
}

absl::StatusOr<std::vector<std::string>> ParseCsvHeader(absl::string_view line) {
  constexpr absl::string_view kUtf8Bom = "\xEF\xBB\xBF";
  if (line.substr(0, kUtf8Bom.size()) == kUtf8Bom) {
    return absl::InvalidArgumentError(
        "CSV line 1: the file starts with a UTF-8 byte-order mark; remove it");
  }
  std::vector<std::string> names;
  std::set<absl::string_view> seen;
  for (absl::string_view field : SplitCsvLine(line)) {
    const size_t column = names.size() + 1;
    if (field.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("CSV line 1: column ", column, " has an empty name"));
    }
    if (!seen.insert(field).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("CSV line 1: column name '", field, "' appears more than once"));
    }
    names.emplace_back(field);
  }
  return names;
}

CsvTypeInferrer::CsvTypeInferrer(size_t column_count) : columns_(column_count) {}

absl::Status CsvTypeInferrer::AddRow(absl::string_view line, int64_t line_number) {
  // The server's loader (server/query/csv_to_copy.cc) skips blank lines, a trailing one above
  // all; refusing them here would reject files the server accepts.
  if (line.empty() || line == "\r") return absl::OkStatus();
  std::vector<absl::string_view> fields = SplitCsvLine(line);
  if (fields.size() != columns_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("CSV line ", line_number, ": ", fields.size(),
                                                   " fields, the header has ", columns_.size()));
  }
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].empty()) continue;  // NULL says nothing about the type
    ColumnState& state = columns_[i];
    state.any_value = true;
    // Once a column is text, there is nothing left to learn from it; skip the parse.
    if (state.all_int64) state.all_int64 = ParsesAsInt64(fields[i]);
    if (!state.all_int64 && state.all_double) state.all_double = ParsesAsFiniteDouble(fields[i]);
  }
  ++rows_;
  return absl::OkStatus();
}

std::vector<CsvValueType> CsvTypeInferrer::Types() const {
  std::vector<CsvValueType> types;
  types.reserve(columns_.size());
  for (const ColumnState& state : columns_) {
    if (!state.any_value) {
      types.push_back(CsvValueType::kText);
    } else if (state.all_int64) {
      types.push_back(CsvValueType::kInteger);
    } else if (state.all_double) {
      types.push_back(CsvValueType::kDouble);
    } else {
      types.push_back(CsvValueType::kText);
    }
  }
  return types;
}

absl::StatusOr<CsvSchema> InferCsvSchema(std::istream& in) {
  std::string line;
  if (!std::getline(in, line)) {
    if (in.bad()) return absl::DataLossError("reading the CSV file failed");
    return absl::InvalidArgumentError("CSV file is empty: a header row is required");
  }
  absl::StatusOr<std::vector<std::string>> names = ParseCsvHeader(line);
  if (!names.ok()) return names.status();

  CsvTypeInferrer inferrer(names->size());
  int64_t line_number = 1;
  while (std::getline(in, line)) {
    ++line_number;
    absl::Status row = inferrer.AddRow(line, line_number);
    if (!row.ok()) return row;
  }
  if (in.bad()) return absl::DataLossError("reading the CSV file failed");

  CsvSchema schema;
  schema.column_names = *std::move(names);
  schema.column_types = inferrer.Types();
  schema.rows = inferrer.rows();
  return schema;
}

}  // namespace dpqctl
