// CSV header parsing and column-type inference for `dpqctl dataset create`.
//
// The CSV dialect is the one CreateDataset accepts (proto/dpq/v1/dpq.proto): fields separated by
// commas, no quoting or escaping, lines ending in `\n` or `\r\n`, an empty field is NULL. Line 1
// is the header row; line numbers in error messages count from 1 like an editor does.
//
// Inference is deliberately strict (std::from_chars: no leading '+', no whitespace, no hex) so
// that a column inferred as numeric is one every reasonable server-side parser also accepts; when
// in doubt a column becomes text, which always loads.
#ifndef DPQ_CLIENT_DPQCTL_CSV_SCHEMA_H_
#define DPQ_CLIENT_DPQCTL_CSV_SCHEMA_H_

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dpqctl {

enum class CsvValueType { kInteger, kDouble, kText };

// "integer", "double" or "text".
absl::string_view CsvValueTypeWord(CsvValueType type);

struct CsvSchema {
  std::vector<std::string> column_names;   // in file order
  std::vector<CsvValueType> column_types;  // parallel to column_names
  int64_t rows = 0;                        // data rows (header excluded)
};

// Splits one line (without its '\n'; a trailing '\r' is dropped) into fields. Never fails: an
// empty line is one empty field.
std::vector<absl::string_view> SplitCsvLine(absl::string_view line);

// True when `value` is an int64 in plain decimal ("-12", not "+12", " 12" or "1e3").
bool ParsesAsInt64(absl::string_view value);
// True when `value` is a finite double in decimal or scientific notation (not "nan", "inf",
// hex, or a value that overflows).
bool ParsesAsFiniteDouble(absl::string_view value);

// Parses the header line. INVALID_ARGUMENT when a name is empty, a name repeats, or the line
// starts with a UTF-8 byte-order mark (the server would see it as part of the first name).
absl::StatusOr<std::vector<std::string>> ParseCsvHeader(absl::string_view line);

// Accumulates rows and decides each column's type: integer if every non-empty value parses as
// int64, else double if every non-empty value parses as a finite double, else text. A column
// with no non-empty value is text.
class CsvTypeInferrer {
 public:
  explicit CsvTypeInferrer(size_t column_count);

  // INVALID_ARGUMENT naming `line_number` when the row's field count differs from the header's.
  // A blank line is skipped, as the server's loader does; it is neither a row nor an error.
  absl::Status AddRow(absl::string_view line, int64_t line_number);

  std::vector<CsvValueType> Types() const;
  int64_t rows() const { return rows_; }

 private:
  struct ColumnState {
    bool any_value = false;
    bool all_int64 = true;
    bool all_double = true;
  };
  std::vector<ColumnState> columns_;
  int64_t rows_ = 0;
};

// Reads a whole CSV stream: header, then every row through CsvTypeInferrer. INVALID_ARGUMENT for
// an empty input, a bad header or a row with the wrong field count; DATA_LOSS when the stream
// fails while reading.
absl::StatusOr<CsvSchema> InferCsvSchema(std::istream& in);

}  // namespace dpqctl

#endif  // DPQ_CLIENT_DPQCTL_CSV_SCHEMA_H_
