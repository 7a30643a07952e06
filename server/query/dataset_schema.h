// The stored description of a dataset: its columns, their types and declared public bounds.
#ifndef DPQ_SERVER_QUERY_DATASET_SCHEMA_H_
#define DPQ_SERVER_QUERY_DATASET_SCHEMA_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"

namespace dpq::query {

enum class ColumnType { kInteger, kDouble, kText };

absl::string_view ColumnTypeName(ColumnType type);  // "integer", "double", "text"
// Inverse of ColumnTypeName; nullopt for an unknown name.
absl::optional<ColumnType> ParseColumnType(absl::string_view name);

struct ColumnSchema {
  std::string name;
  ColumnType type = ColumnType::kText;
  absl::optional<double> lower;  // declared public bounds (numeric columns only; both or neither)
  absl::optional<double> upper;

  bool is_numeric() const { return type != ColumnType::kText; }
};

struct DatasetSchema {
  int64_t id = 0;
  std::string name;
  std::string privacy_unit;
  std::vector<ColumnSchema> columns;  // in file order
  int64_t version = 1;
  std::string created_at;

  // nullptr when absent.
  const ColumnSchema* FindColumn(absl::string_view column) const;
};

// Checks a dataset about to be created: name and column names are identifiers (validation.h),
// column names are unique, the privacy unit names a column, bounds are declared only on numeric
// columns, both or neither, finite, with lower < upper. INVALID_ARGUMENT naming the field.
absl::Status ValidateNewDataset(const DatasetSchema& schema);

}  // namespace dpq::query

#endif  // DPQ_SERVER_QUERY_DATASET_SCHEMA_H_
