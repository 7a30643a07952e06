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
  // Public category values of a text column (declared at creation without looking at the data):
  // a group-by or histogram over the column releases exactly these keys.
  std::vector<std::string> categories;

  bool is_numeric() const { return type != ColumnType::kText; }
};

struct DatasetSchema {
  int64_t id = 0;
  std::string name;
  std::string privacy_unit;
  std::vector<ColumnSchema> columns;  // in file order
  int64_t version = 1;
  std::string created_at;
  std::string epsilon_preset;  // domain preset of the budget (epsilon_guidance.h); empty: none
  // Filled by the store (migration 0006): the data table has the hidden per-unit row rank
  // `_dpq_rank` (store/row_ranker.h; every dataset created since), and the columns in which a load
  // has seen a NULL (every column of a dataset from before, which did not record it).
  bool has_row_rank = false;
  std::vector<std::string> columns_with_nulls;

  // nullptr when absent.
  const ColumnSchema* FindColumn(absl::string_view column) const;
  // True when the stored row rank may bound contributions for a scan of `value_column` ("" for a
  // row count): the table has ranks and no NULL was ever loaded into that column (the window path
  // drops NULL values before choosing K rows; the rank counts every row).
  bool CanBoundByRowRank(absl::string_view value_column) const;
};

// Column names starting with this prefix are reserved for dpq's hidden columns (`_dpq_rank`).
inline constexpr absl::string_view kReservedColumnPrefix = "_dpq";

inline constexpr size_t kMaxCategories = 10000;
inline constexpr size_t kMaxCategoryLength = 256;

// Categories only on text columns, at most kMaxCategories, each 1..kMaxCategoryLength bytes, no
// repeats. INVALID_ARGUMENT naming the column.
absl::Status ValidateCategories(const ColumnSchema& column);

// Checks a dataset about to be created: name and column names are identifiers (validation.h) not
// starting with "_dpq" (reserved), column names are unique, the privacy unit names a column, bounds
// are declared only on numeric columns, both or neither, finite, with lower < upper.
// INVALID_ARGUMENT naming the field.
absl::Status ValidateNewDataset(const DatasetSchema& schema);

}  // namespace dpq::query

#endif  // DPQ_SERVER_QUERY_DATASET_SCHEMA_H_
