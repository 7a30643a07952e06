// Streams CSV text into PostgreSQL COPY text format, validating every field against the dataset's
// declared column types on the way, so a bad row is reported by line and column before any of it
// reaches the database.
//
// CSV dialect: comma-separated, no quoting, `\n` or `\r\n` line ends, first line is the header and
// must list exactly the declared column names in order, an empty field is NULL.
#ifndef DPQ_SERVER_QUERY_CSV_TO_COPY_H_
#define DPQ_SERVER_QUERY_CSV_TO_COPY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "server/query/dataset_schema.h"

namespace dpq::query {

class CsvToCopy {
 public:
  static constexpr size_t kMaxLineBytes = 1 << 20;

  explicit CsvToCopy(std::vector<ColumnSchema> columns);

  // Consumes a chunk (split anywhere). Appends each complete data row to *out as one COPY line
  // ending in '\n'. INVALID_ARGUMENT naming the line (1-based, the header is line 1) and column for a
  // wrong field count, a header mismatch, an unparsable or non-finite number, or an over-long line.
  absl::Status Feed(absl::string_view chunk, std::string* out);
  // Flushes a final line that has no trailing newline. INVALID_ARGUMENT when no header was seen
  // (empty input).
  absl::Status Finish(std::string* out);

  int64_t rows() const { return rows_; }

 private:
  absl::Status ProcessLine(absl::string_view line, std::string* out);
  absl::Status CheckHeader(absl::string_view line) const;

  std::vector<ColumnSchema> columns_;
  std::string pending_;  // bytes of an incomplete line
  int64_t line_no_ = 0;
  int64_t rows_ = 0;
  bool header_seen_ = false;
};

}  // namespace dpq::query

#endif  // DPQ_SERVER_QUERY_CSV_TO_COPY_H_
