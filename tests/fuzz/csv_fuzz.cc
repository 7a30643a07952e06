// Fuzz target: the CSV reader of dataset loads (server/query/csv_to_copy.h), CSV -> COPY text.
// Input: byte 0 picks one of a few schemas, byte 1 the chunk size of a second, split feed (and
// whether the correct header is prepended, so most inputs reach the row checks); the rest is the
// CSV text. Invariants beyond "no crash, no sanitizer report":
//   - the result does not depend on how the stream is split into chunks (gRPC messages split it
//     anywhere): same status, same output, same row count;
//   - refusals are INVALID_ARGUMENT; rows() equals the lines written;
//   - every COPY line has exactly one tab per column separator (escapes are right), and every
//     field it keeps is what PostgreSQL's input function of the column type accepts: int64 for
//     integer, a finite strtod value for double (float8in), UTF-8 without NUL for text.
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "server/query/csv_to_copy.h"
#include "server/query/dataset_schema.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using dpq::query::ColumnSchema;
using dpq::query::ColumnType;
using dpq::query::CsvToCopy;

std::vector<ColumnSchema> SchemaFor(uint8_t selector) {
  const auto col = [](const char* name, ColumnType type) {
    ColumnSchema c;
    c.name = name;
    c.type = type;
    return c;
  };
  switch (selector % 4) {
    case 0:
      return {col("person_id", ColumnType::kInteger), col("age", ColumnType::kInteger),
              col("wages", ColumnType::kDouble), col("sex", ColumnType::kText)};
    case 1: return {col("t", ColumnType::kText)};
    case 2: return {col("x", ColumnType::kDouble)};
    default: return {col("id", ColumnType::kInteger), col("x", ColumnType::kDouble)};
  }
}

struct Result {
  absl::Status status;
  std::string out;
  int64_t rows = 0;
};

Result Convert(const std::vector<ColumnSchema>& columns, absl::string_view csv, size_t chunk) {
  CsvToCopy converter(columns);
  Result r;
  for (size_t pos = 0; pos < csv.size() && r.status.ok(); pos += chunk) {
    r.status = converter.Feed(csv.substr(pos, chunk), &r.out);
  }
  if (r.status.ok()) r.status = converter.Finish(&r.out);
  r.rows = converter.rows();
  return r;
}

// COPY text unescaping of one field (PostgreSQL docs, "COPY: Text Format"), as CsvToCopy escapes.
std::string Unescape(absl::string_view f) {
  std::string s;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] == '\\' && i + 1 < f.size()) {
      const char n = f[++i];
      s.push_back(n == 't' ? '\t' : n == 'r' ? '\r' : n == 'n' ? '\n' : n);
    } else {
      s.push_back(f[i]);
    }
  }
  return s;
}

bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// float8in (PostgreSQL 15, utils/adt/float.c): leading and trailing white space, strtod consuming
// the rest, ERANGE refused when the result is 0 or infinite. NaN/Infinity are refused by dpq.
bool PostgresTakesFloat8(const std::string& field) {
  size_t b = 0, e = field.size();
  while (b < e && IsSpace(field[b])) ++b;
  while (e > b && IsSpace(field[e - 1])) --e;
  const std::string core = field.substr(b, e - b);
  if (core.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(core.c_str(), &end);
  if (end != core.c_str() + core.size()) return false;
  if (errno == ERANGE && (v == 0 || std::isinf(v))) return false;
  return std::isfinite(v);
}

void CheckCopyLine(const std::vector<ColumnSchema>& columns, absl::string_view line) {
  const std::vector<absl::string_view> fields = absl::StrSplit(line, '\t');
  DPQ_FUZZ_CHECK(fields.size() == columns.size(), "COPY line has %zu fields, want %zu",
                 fields.size(), columns.size());
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i] == "\\N") continue;
    const std::string v = Unescape(fields[i]);
    DPQ_FUZZ_CHECK(!v.empty(), "empty field %zu is not \\N", i);
    DPQ_FUZZ_CHECK(v.find('\0') == std::string::npos, "NUL in field %zu", i);
    switch (columns[i].type) {
      case ColumnType::kInteger: {
        int64_t n;
        DPQ_FUZZ_CHECK(absl::SimpleAtoi(v, &n), "integer field %zu is not an int64", i);
        break;
      }
      case ColumnType::kDouble:
        DPQ_FUZZ_CHECK(PostgresTakesFloat8(v), "double field %zu refused by float8in: %s", i,
                       v.c_str());
        break;
      case ColumnType::kText:
        DPQ_FUZZ_CHECK(v.find('\n') == std::string::npos, "newline in text field %zu", i);
        break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const std::vector<ColumnSchema> columns = SchemaFor(data[0]);
  const bool add_header = (data[1] & 1) != 0;
  const size_t chunk = 1 + (data[1] >> 1);  // 1..128
  std::string csv;
  if (add_header) {
    for (size_t i = 0; i < columns.size(); ++i) csv += (i ? "," : "") + columns[i].name;
    csv += '\n';
  }
  csv.append(reinterpret_cast<const char*>(data + 2), size - 2);

  const Result whole = Convert(columns, csv, csv.size() + 1);
  const Result split = Convert(columns, csv, chunk);
  DPQ_FUZZ_CHECK(whole.status == split.status, "whole: %s / split by %zu: %s",
                 whole.status.ToString().c_str(), chunk, split.status.ToString().c_str());
  DPQ_FUZZ_CHECK(whole.out == split.out, "output depends on the split (%zu)", chunk);
  DPQ_FUZZ_CHECK(whole.rows == split.rows, "rows depend on the split (%zu)", chunk);
  if (!whole.status.ok()) {
    DPQ_FUZZ_CHECK(whole.status.code() == absl::StatusCode::kInvalidArgument, "%s",
                   whole.status.ToString().c_str());
  }

  int64_t lines = 0;
  absl::string_view rest = whole.out;
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    DPQ_FUZZ_CHECK(nl != absl::string_view::npos, "output does not end in a newline");
    CheckCopyLine(columns, rest.substr(0, nl));
    rest.remove_prefix(nl + 1);
    ++lines;
  }
  // On a refusal the output may hold the rows before the bad one (the caller discards it all).
  DPQ_FUZZ_CHECK(lines == whole.rows, "%lld lines written, rows() = %lld",
                 static_cast<long long>(lines), static_cast<long long>(whole.rows));
  return 0;
}
