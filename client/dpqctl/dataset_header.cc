#include "client/dpqctl/dataset_header.h"

#include <charconv>
#include <cmath>
#include <map>
#include <set>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/dpqctl/enum_names.h"

namespace dpqctl {
namespace internal {
namespace {

// Splits "COL=REST" at the first '='; INVALID_ARGUMENT (naming `flag`) without one or with an
// empty side.
absl::Status SplitAssignment(absl::string_view spec, absl::string_view flag,
                             absl::string_view expected, absl::string_view* column,
                             absl::string_view* rest) {
  size_t eq = spec.find('=');
  if (eq == absl::string_view::npos || eq == 0 || eq + 1 == spec.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": '", spec, "' is not of the form ", expected));
  }
  *column = spec.substr(0, eq);
  *rest = spec.substr(eq + 1);
  return absl::OkStatus();
}

absl::StatusOr<double> ParseFiniteBound(absl::string_view text, absl::string_view spec) {
  if (!ParsesAsFiniteDouble(text)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--bounds: '", text, "' in '", spec, "' is not a finite number"));
  }
  double value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value, std::chars_format::general);
  return value;
}

bool IsNumeric(dpq::v1::ColumnType type) {
  return type == dpq::v1::COLUMN_TYPE_INTEGER || type == dpq::v1::COLUMN_TYPE_DOUBLE;
}

dpq::v1::ColumnType ToProto(CsvValueType type) {
  switch (type) {
    case CsvValueType::kInteger: return dpq::v1::COLUMN_TYPE_INTEGER;
    case CsvValueType::kDouble: return dpq::v1::COLUMN_TYPE_DOUBLE;
    case CsvValueType::kText: return dpq::v1::COLUMN_TYPE_TEXT;
  }
  return dpq::v1::COLUMN_TYPE_TEXT;
}

bool LooksLikeCalendar(absl::string_view text) {
  // 'YYYY-MM-DD...': dpqd checks the rest (a real day, the timestamp form).
  if (text.size() < 10 || text[4] != '-' || text[7] != '-') return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9}) {
    if (text[i] < '0' || text[i] > '9') return false;
  }
  return true;
}

}  // namespace
}  // namespace internal

absl::StatusOr<BoundsSpec> ParseBoundsSpec(absl::string_view spec) {
  absl::string_view column, range;
  absl::Status split =
      internal::SplitAssignment(spec, "--bounds", "COLUMN=LOWER:UPPER", &column, &range);
  if (!split.ok()) return split;
  // A number never contains ':', so the first one separates the bounds ("-5:-1" included); a
  // timestamp ends in 'Z', after which the separator comes.
  const size_t zulu = range.find("Z:");
  size_t colon = zulu != absl::string_view::npos ? zulu + 1 : range.find(':');
  if (colon == absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("--bounds: '", spec, "' is not of the form COLUMN=LOWER:UPPER"));
  }
  if (internal::LooksLikeCalendar(range.substr(0, colon)) &&
      internal::LooksLikeCalendar(range.substr(colon + 1))) {
    BoundsSpec calendar;
    calendar.column = std::string(column);
    calendar.calendar = true;
    calendar.lower_text = std::string(range.substr(0, colon));
    calendar.upper_text = std::string(range.substr(colon + 1));
    return calendar;
  }
  absl::StatusOr<double> lower = internal::ParseFiniteBound(range.substr(0, colon), spec);
  if (!lower.ok()) return lower.status();
  absl::StatusOr<double> upper = internal::ParseFiniteBound(range.substr(colon + 1), spec);
  if (!upper.ok()) return upper.status();
  if (!(*lower < *upper)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--bounds: in '", spec, "' the lower bound must be below the upper bound"));
  }
  BoundsSpec numeric;
  numeric.column = std::string(column);
  numeric.lower = *lower;
  numeric.upper = *upper;
  return numeric;
}

absl::StatusOr<CategoriesSpec> ParseCategoriesSpec(absl::string_view spec) {
  absl::string_view column, list;
  absl::Status split =
      internal::SplitAssignment(spec, "--categories", "COLUMN=VALUE|VALUE|...", &column, &list);
  if (!split.ok()) return split;
  CategoriesSpec parsed{std::string(column), {}};
  std::set<std::string> seen;
  for (absl::string_view value : absl::StrSplit(list, '|')) {
    if (value.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--categories: '", spec, "' has an empty value (values are separated by '|')"));
    }
    if (!seen.insert(std::string(value)).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--categories: value '", value, "' of column '", column, "' is given more than once"));
    }
    parsed.values.emplace_back(value);
  }
  return parsed;
}

absl::StatusOr<TypeSpec> ParseTypeSpec(absl::string_view spec) {
  absl::string_view column, word;
  absl::Status split =
      internal::SplitAssignment(spec, "--type", "COLUMN=integer|double|text", &column, &word);
  if (!split.ok()) return split;
  absl::StatusOr<dpq::v1::ColumnType> type = ParseColumnTypeWord(word, "--type");
  if (!type.ok()) return type.status();
  return TypeSpec{std::string(column), *type};
}

absl::Status RequireDeclaredTypes(const CsvSchema& schema, const std::vector<TypeSpec>& types) {
  std::set<std::string> declared;
  for (const TypeSpec& t : types) declared.insert(t.column);
  std::string missing, proposal;
  for (size_t i = 0; i < schema.column_names.size(); ++i) {
    const std::string& name = schema.column_names[i];
    if (declared.count(name) != 0) continue;
    absl::StrAppend(&missing, missing.empty() ? "" : ", ", name);
    absl::StrAppend(&proposal, " --type ", name, "=", CsvValueTypeWord(schema.column_types[i]));
  }
  if (missing.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "declare the type of every column: analysts see the schema, and a type inferred from the rows "
      "reveals something of them (one 2.5 turns an integer column into a double). Undeclared: ",
      missing, ". Inferred from this file:", proposal,
      ". Check them and pass them, or accept the inferred types with --infer-types"));
}

absl::StatusOr<dpq::v1::DatasetHeader> BuildDatasetHeader(
    absl::string_view name, absl::string_view privacy_unit, const CsvSchema& schema,
    const std::vector<TypeSpec>& types, const std::vector<BoundsSpec>& bounds,
    const std::vector<CategoriesSpec>& categories) {
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < schema.column_names.size(); ++i) index[schema.column_names[i]] = i;

  dpq::v1::DatasetHeader header;
  header.set_name(std::string(name));
  if (!privacy_unit.empty() && index.count(std::string(privacy_unit)) == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--privacy-unit: '", privacy_unit, "' is not a column of the CSV file"));
  }
  header.set_privacy_unit(std::string(privacy_unit));
  for (size_t i = 0; i < schema.column_names.size(); ++i) {
    dpq::v1::Column* column = header.add_columns();
    column->set_name(schema.column_names[i]);
    column->set_type(internal::ToProto(schema.column_types[i]));
  }

  std::set<std::string> typed;
  for (const TypeSpec& spec : types) {
    auto it = index.find(spec.column);
    if (it == index.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--type: '", spec.column, "' is not a column of the CSV file"));
    }
    if (!typed.insert(spec.column).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("--type: column '", spec.column, "' is given more than once"));
    }
    header.mutable_columns(static_cast<int>(it->second))->set_type(spec.type);
  }

  std::set<std::string> bounded;
  for (const BoundsSpec& spec : bounds) {
    auto it = index.find(spec.column);
    if (it == index.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--bounds: '", spec.column, "' is not a column of the CSV file"));
    }
    if (!bounded.insert(spec.column).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("--bounds: column '", spec.column, "' is given more than once"));
    }
    dpq::v1::Column* column = header.mutable_columns(static_cast<int>(it->second));
    const bool calendar_column = column->type() == dpq::v1::COLUMN_TYPE_DATE ||
                                 column->type() == dpq::v1::COLUMN_TYPE_TIMESTAMP;
    if (calendar_column != spec.calendar) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--bounds: column '", spec.column, "' is ", ColumnTypeWord(column->type()),
          calendar_column ? "; its bounds are dates ('2026-01-01') or timestamps "
                            "('2026-01-01T00:00:00Z') as LOWER:UPPER"
                          : "; calendar bounds apply to date and timestamp columns only"));
    }
    if (calendar_column) {
      column->set_lower_text(spec.lower_text);
      column->set_upper_text(spec.upper_text);
      continue;
    }
    if (!internal::IsNumeric(column->type())) {
      return absl::InvalidArgumentError(absl::StrCat("--bounds: column '", spec.column, "' is ",
                                                     ColumnTypeWord(column->type()),
                                                     "; bounds apply to numeric columns only"));
    }
    column->set_lower(spec.lower);
    column->set_upper(spec.upper);
  }

  std::set<std::string> categorized;
  for (const CategoriesSpec& spec : categories) {
    auto it = index.find(spec.column);
    if (it == index.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--categories: '", spec.column, "' is not a column of the CSV file"));
    }
    if (!categorized.insert(spec.column).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("--categories: column '", spec.column, "' is given more than once"));
    }
    dpq::v1::Column* column = header.mutable_columns(static_cast<int>(it->second));
    if (column->type() != dpq::v1::COLUMN_TYPE_TEXT) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--categories: column '", spec.column, "' is ", ColumnTypeWord(column->type()),
          "; categories apply to text columns only (declare it with --type ", spec.column,
          "=text)"));
    }
    for (const std::string& value : spec.values) column->add_categories(value);
  }
  return header;
}

}  // namespace dpqctl
