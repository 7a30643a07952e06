// The stored description of a dataset: its columns, their types and declared public bounds.
#ifndef DPQ_SERVER_QUERY_DATASET_SCHEMA_H_
#define DPQ_SERVER_QUERY_DATASET_SCHEMA_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "server/query/join_source.h"

namespace dpq::query {

// kDate and kTimestamp are calendar columns (calendar.h): filtered and grouped by calendar
// buckets, never aggregated as numbers.
enum class ColumnType { kInteger, kDouble, kText, kDate, kTimestamp };

// "integer", "double", "text", "date", "timestamp"
absl::string_view ColumnTypeName(ColumnType type);
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
  // Declared public bounds of a date (days since 1970-01-01) or timestamp (microseconds since
  // 1970-01-01T00:00:00Z) column: required at creation, lower <= upper. Every read of the column
  // clamps it into them first (scans are total), and its group-by buckets are the ones they span.
  absl::optional<int64_t> calendar_lower = absl::nullopt;
  absl::optional<int64_t> calendar_upper = absl::nullopt;

  bool is_numeric() const { return type == ColumnType::kInteger || type == ColumnType::kDouble; }
  bool is_calendar() const { return type == ColumnType::kDate || type == ColumnType::kTimestamp; }
};

// The calendar buckets of a date or timestamp column (calendar.h): a group-by key or a time block
// is a bucket, named by its first day.
enum class CalendarBucket { kDay, kWeek, kMonth };

// A dataset's time blocks (declared at creation; server/query/time_blocks): its rows are
// partitioned by the calendar bucket of `column` (a date or timestamp column, clamped into its
// declared bounds), counted from the bucket holding the bounds' lower end, never from the rows.
struct TimeBlocking {
  std::string column;
  CalendarBucket width = CalendarBucket::kDay;
};

struct DatasetSchema {
  int64_t id = 0;
  std::string name;
  // The column that identifies a person; empty for a public table (is_public).
  std::string privacy_unit;
  // The population the dataset belongs to: the set of people whose one privacy ledger every query
  // of any of its datasets debits (a dataset created without one gets a population of its own,
  // named after it). 0 and empty for a public table.
  int64_t population_id = 0;
  std::string population;
  // A public lookup table: an admin stated that its contents are not personal. It has no privacy
  // unit and no ledger, is never queried on its own, and may be joined by a private dataset on any
  // key.
  bool is_public = false;
  std::vector<ColumnSchema> columns;  // in file order
  int64_t version = 1;
  std::string created_at;
  std::string epsilon_preset;  // domain preset of the budget (epsilon_guidance.h); empty: none
  // The largest epsilon one query may ask (a budget setting, migration 0010); 0: no such limit.
  int64_t max_query_epsilon_units = 0;
  // Filled by the store (migration 0006): the data table has the hidden per-unit row rank
  // `_dpq_rank` (store/row_ranker.h; every dataset created since). A fact of the table's creation,
  // never of its rows: every plan choice must be a function of declared facts only (threat model).
  bool has_row_rank = false;
  // Declared time blocks (migration 0016); absent: the dataset is not partitioned in time.
  absl::optional<TimeBlocking> time_blocks;
  // The population's budget is per time block (ledgers.per_block): every query pays each block
  // of the range it may read, and reads only those blocks (time_blocks.h). Set only together with
  // time_blocks: a per-block population has no dataset without them.
  bool per_block_budget = false;
  // The shard servers (migration 0019) holding the table's hash partitions, in partition order
  // (shard i holds the rows whose unit hashes to remainder i); empty: one local table. A fact of
  // the dataset's creation, never of its rows.
  std::vector<std::string> shards;
  // A joined schema (join_source.h ResolveJoin; never stored): the tables the scan reads instead of
  // this dataset's table. Null for a stored dataset.
  std::shared_ptr<const JoinSource> join;

  // nullptr when absent.
  const ColumnSchema* FindColumn(absl::string_view column) const;
  // The stored datasets a scan of this schema reads, comma-separated in the order the query named
  // them ("patients,visits,regions" for a join; the name otherwise): what an audit row records.
  std::string ReadDatasets() const;
  // True when the stored row rank may bound contributions (ungrouped, unfiltered plans; see
  // store/bounding_sql.h): whenever the table has ranks. NULL values are dropped inside the kept
  // set (a unit keeps its non-NULL rows among its first K), so the choice never depends on whether
  // some row holds a NULL: one person's NULL must not switch every other person's bounding.
  bool CanBoundByRowRank() const { return has_row_rank; }
};

// The largest magnitude of any bound: declared bounds, requested --lower/--upper, histogram bin
// edges. A public constant, so that no scan can overflow whatever the data: a sum of at most 2^63
// clamped values of magnitude <= 1e15 stays below 9.3e33, and a sum of their centred squares below
// 9.3e48, far inside the double range; the noisy values stay finite too (additive_mechanism.h).
// 1e15 < 2^53, so every integer bound is exact.
inline constexpr double kMaxBoundMagnitude = 1e15;

// Finite with |value| <= kMaxBoundMagnitude; INVALID_ARGUMENT naming `name` otherwise.
absl::Status ValidateBound(double value, absl::string_view name);

// Column names starting with this prefix are reserved for dpq's hidden columns (`_dpq_rank`).
inline constexpr absl::string_view kReservedColumnPrefix = "_dpq";

inline constexpr size_t kMaxCategories = 10000;
inline constexpr size_t kMaxCategoryLength = 256;

// Categories only on text columns, at most kMaxCategories, each 1..kMaxCategoryLength bytes without
// NUL, no repeats. INVALID_ARGUMENT naming the column.
absl::Status ValidateCategories(const ColumnSchema& column);
// Calendar bounds only on date and timestamp columns, where they are required (lower <= upper,
// years 0001..9999). INVALID_ARGUMENT naming the column and the form of a bound.
absl::Status ValidateCalendarBounds(const ColumnSchema& column);

// Checks a dataset about to be created: name and column names are identifiers (validation.h) not
// starting with "_dpq" (reserved), column names are unique, the privacy unit names a column, bounds
// are declared only on numeric columns, both or neither, finite, with lower < upper; a date or
// timestamp column has calendar bounds (required) with lower <= upper, and is not the privacy unit.
// INVALID_ARGUMENT naming the field.
absl::Status ValidateNewDataset(const DatasetSchema& schema);

// What the budget of `schema`'s population protects, in words (`dataset show`): one budget for
// all time, or one per time block (block composition: a person's rows within one block are
// protected by that block's budget, and over k blocks by the sum of theirs).
std::string BudgetPromise(const DatasetSchema& schema);

}  // namespace dpq::query

#endif  // DPQ_SERVER_QUERY_DATASET_SCHEMA_H_
