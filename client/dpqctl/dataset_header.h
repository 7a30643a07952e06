// Turns the arguments of `dpqctl dataset create` and the CSV's inferred schema into the
// DatasetHeader that opens the CreateDataset stream. Everything here is checked before any byte
// is sent; every error is INVALID_ARGUMENT and names the flag and column at fault.
#ifndef DPQ_CLIENT_DPQCTL_DATASET_HEADER_H_
#define DPQ_CLIENT_DPQCTL_DATASET_HEADER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "client/dpqctl/csv_schema.h"
#include "dpq/v1/dpq.pb.h"

namespace dpqctl {

// One `--bounds COL=LO:HI`: LO and HI finite decimals with LO < HI ("x=-5:1e3"), or, for a date
// or timestamp column, two calendar values kept as text for dpqd to check
// ("day=2026-01-01:2026-12-31", "at=2026-01-01T00:00:00Z:2026-12-31T23:59:59Z": a timestamp's
// own colons are passed over, the bounds split after its 'Z').
struct BoundsSpec {
  std::string column;
  double lower = 0;
  double upper = 0;
  bool calendar = false;  // lower_text / upper_text hold the bounds
  std::string lower_text = std::string();
  std::string upper_text = std::string();
};
absl::StatusOr<BoundsSpec> ParseBoundsSpec(absl::string_view spec);

// One `--type COL=integer|double|text`.
struct TypeSpec {
  std::string column;
  dpq::v1::ColumnType type = dpq::v1::COLUMN_TYPE_UNSPECIFIED;
};
absl::StatusOr<TypeSpec> ParseTypeSpec(absl::string_view spec);

// One `--categories COL=a|b|c`: the public category values of a text column, in the given order.
// Refuses an empty value ("a||b", a trailing '|') and a value given twice; a value may contain
// '=' and spaces (it is matched exactly), but not '|'.
struct CategoriesSpec {
  std::string column;
  std::vector<std::string> values;
};
absl::StatusOr<CategoriesSpec> ParseCategoriesSpec(absl::string_view spec);

// The schema is declared, not inferred (docs/threat-model.md): analysts see every column's type,
// and a type inferred from the rows reveals something of them (one 2.5 turns an integer column
// into a double). OK when every CSV column has a --type; otherwise INVALID_ARGUMENT listing the
// undeclared columns and the --type flags inferred from the file, for the admin to check and pass
// (or to accept with --infer-types).
absl::Status RequireDeclaredTypes(const CsvSchema& schema, const std::vector<TypeSpec>& types);

// Builds the header: columns in CSV order, a declared --type overriding the inferred one,
// --bounds attached to numeric columns (numbers) and date or timestamp columns (calendar text),
// --categories to text columns. Refuses: a --type,
// --bounds or --categories column missing from the CSV or given twice, bounds on a text column,
// categories on a numeric column, and a privacy unit that is not a CSV column.
absl::StatusOr<dpq::v1::DatasetHeader> BuildDatasetHeader(
    absl::string_view name, absl::string_view privacy_unit, const CsvSchema& schema,
    const std::vector<TypeSpec>& types, const std::vector<BoundsSpec>& bounds,
    const std::vector<CategoriesSpec>& categories = {});

}  // namespace dpqctl

#endif  // DPQ_CLIENT_DPQCTL_DATASET_HEADER_H_
