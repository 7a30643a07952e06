#include "server/query/dataset_schema.h"

#include <cmath>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"
#include "server/query/calendar.h"
#include "server/query/query_spec.h"

namespace dpq::query {

absl::string_view ColumnTypeName(ColumnType type) {
  switch (type) {
    case ColumnType::kInteger: return "integer";
    case ColumnType::kDouble: return "double";
    case ColumnType::kText: return "text";
    case ColumnType::kDate: return "date";
    case ColumnType::kTimestamp: return "timestamp";
  }
  return "text";
}

absl::optional<ColumnType> ParseColumnType(absl::string_view name) {
  if (name == "integer") return ColumnType::kInteger;
  if (name == "double") return ColumnType::kDouble;
  if (name == "text") return ColumnType::kText;
  if (name == "date") return ColumnType::kDate;
  if (name == "timestamp") return ColumnType::kTimestamp;
  return absl::nullopt;
}

const ColumnSchema* DatasetSchema::FindColumn(absl::string_view column) const {
  for (const ColumnSchema& c : columns) {
    if (c.name == column) return &c;
  }
  return nullptr;
}

absl::Status ValidateBound(double value, absl::string_view name) {
  if (!(std::fabs(value) <= kMaxBoundMagnitude)) {  // also NaN and +-inf
    return absl::InvalidArgumentError(absl::StrCat(
        name,
        " must be a finite number of magnitude at most 1e15 (dpq's largest bound, which keeps "
        "every sum of clamped values finite), got ",
        value));
  }
  return absl::OkStatus();
}

absl::Status ValidateCategories(const ColumnSchema& c) {
  if (c.categories.empty()) return absl::OkStatus();
  if (c.is_numeric()) {
    return absl::InvalidArgumentError(
        absl::StrCat("column ", c.name, ": categories can only be declared on text columns"));
  }
  if (c.categories.size() > kMaxCategories) {
    return absl::InvalidArgumentError(
        absl::StrCat("column ", c.name, ": at most ", kMaxCategories, " categories"));
  }
  std::set<std::string> seen;
  for (const std::string& v : c.categories) {
    if (v.empty() || v.size() > kMaxCategoryLength) {
      return absl::InvalidArgumentError(absl::StrCat("column ", c.name, ": categories must be 1..",
                                                     kMaxCategoryLength, " bytes long"));
    }
    // PostgreSQL text cannot hold NUL: the category was stored cut at it ("Female\0" as "Female").
    if (v.find('\0') != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("column ", c.name, ": category ", QuoteForMessage(v), " holds a NUL byte"));
    }
    if (!seen.insert(v).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("column ", c.name, ": category ", QuoteForMessage(v), " appears twice"));
    }
  }
  return absl::OkStatus();
}

// A date or timestamp column's bounds: required, since every read clamps into them and its
// buckets come from them (docs/decisions.md, "Dates and timestamps"); other columns have none.
absl::Status ValidateCalendarBounds(const ColumnSchema& c) {
  const bool declared = c.calendar_lower.has_value() || c.calendar_upper.has_value();
  if (!c.is_calendar()) {
    if (!declared) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        "column ", c.name, ": calendar bounds can only be declared on date or timestamp columns"));
  }
  if (c.lower.has_value() || !c.calendar_lower.has_value() || !c.calendar_upper.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "column ", c.name, " is a ", ColumnTypeName(c.type), ": its bounds are required, as ",
        c.name, "=LOWER:UPPER in the form ", CalendarFormHint(c.type),
        " (every read is clamped into them, and its group-by "
        "buckets are the ones they span)"));
  }
  const int64_t lo = *c.calendar_lower, hi = *c.calendar_upper;
  // Within years 0001..9999: the canonical text must parse back to the same value.
  if (ParseCalendarValue(c.type, FormatCalendarValue(c.type, lo)) != lo ||
      ParseCalendarValue(c.type, FormatCalendarValue(c.type, hi)) != hi) {
    return absl::InvalidArgumentError(
        absl::StrCat("column ", c.name, ": bounds must lie in years 0001..9999"));
  }
  if (lo > hi) {
    return absl::InvalidArgumentError(
        absl::StrCat("column ", c.name, ": lower bound must be <= upper bound"));
  }
  return absl::OkStatus();
}

std::string DatasetSchema::ReadDatasets() const {
  if (join == nullptr) return name;
  std::vector<std::string> names;
  for (const JoinedTable& t : join->tables) names.push_back(t.name);
  return absl::StrJoin(names, ",");
}

absl::Status ValidateNewDataset(const DatasetSchema& schema) {
  RETURN_IF_ERROR(ValidateIdentifier(schema.name, "dataset name"));
  if (schema.columns.empty()) return absl::InvalidArgumentError("columns must not be empty");
  if (schema.columns.size() > 1000) return absl::InvalidArgumentError("at most 1000 columns");
  std::set<std::string> seen;
  for (const ColumnSchema& c : schema.columns) {
    RETURN_IF_ERROR(ValidateIdentifier(c.name, "column name"));
    if (absl::StartsWith(c.name, kReservedColumnPrefix)) {
      return absl::InvalidArgumentError(absl::StrCat("column ", c.name, ": names starting with \"",
                                                     kReservedColumnPrefix, "\" are reserved"));
    }
    if (!seen.insert(c.name).second) {
      return absl::InvalidArgumentError(absl::StrCat("column ", c.name, " appears twice"));
    }
    if (c.lower.has_value() != c.upper.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat("column ", c.name, ": declare both lower and upper bounds or neither"));
    }
    RETURN_IF_ERROR(ValidateCategories(c));
    RETURN_IF_ERROR(ValidateCalendarBounds(c));
    if (!c.lower.has_value()) continue;
    if (!c.is_numeric()) {
      return absl::InvalidArgumentError(
          absl::StrCat("column ", c.name, ": bounds can only be declared on numeric columns"));
    }
    RETURN_IF_ERROR(ValidateBound(*c.lower, absl::StrCat("lower bound of ", c.name)));
    RETURN_IF_ERROR(ValidateBound(*c.upper, absl::StrCat("upper bound of ", c.name)));
    if (!(*c.lower < *c.upper)) {
      return absl::InvalidArgumentError(
          absl::StrCat("column ", c.name, ": lower bound must be < upper bound"));
    }
  }
  if (schema.time_blocks.has_value()) {
    const ColumnSchema* c = schema.FindColumn(schema.time_blocks->column);
    if (c == nullptr || !c->is_calendar()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "block_by: ", schema.time_blocks->column,
          " is not a date or timestamp column of the dataset; time blocks are calendar buckets of "
          "one (--type COL=date --bounds COL=FROM:TO)"));
    }
    if (schema.is_public) {
      return absl::InvalidArgumentError(
          "block_by: a public table has no budget to split into time blocks");
    }
  }
  if (schema.is_public) {
    // Not personal: nothing identifies a person in it, and no budget protects anyone.
    if (!schema.privacy_unit.empty() || !schema.population.empty()) {
      return absl::InvalidArgumentError(
          "a public table has no privacy_unit and no population: drop --privacy-unit and "
          "--population, or drop --public if its rows are about people");
    }
    return absl::OkStatus();
  }
  if (!schema.population.empty()) {
    RETURN_IF_ERROR(ValidateIdentifier(schema.population, "population"));
  }
  RETURN_IF_ERROR(ValidateIdentifier(schema.privacy_unit, "privacy_unit"));
  if (seen.count(schema.privacy_unit) == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("privacy_unit ", schema.privacy_unit, " is not one of the columns"));
  }
  if (schema.FindColumn(schema.privacy_unit)->is_calendar()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "privacy_unit ", schema.privacy_unit, ": a date or timestamp cannot identify a person"));
  }
  return absl::OkStatus();
}

absl::string_view AggregateName(AggregateKind kind) {
  switch (kind) {
    case AggregateKind::kCount: return "count";
    case AggregateKind::kSum: return "sum";
    case AggregateKind::kMean: return "mean";
    case AggregateKind::kVariance: return "variance";
    case AggregateKind::kStddev: return "stddev";
    case AggregateKind::kQuantile: return "quantile";
    case AggregateKind::kHistogram: return "histogram";
  }
  return "count";
}

absl::string_view MechanismName(MechanismKind kind) {
  return kind == MechanismKind::kGaussian ? "gaussian" : "laplace";
}

std::string BudgetPromise(const DatasetSchema& schema) {
  if (schema.per_block_budget && schema.time_blocks.has_value()) {
    const absl::string_view width = CalendarBucketName(schema.time_blocks->width);
    return absl::StrCat(
        "one budget per ", width, " of ", schema.time_blocks->column, " (time blocks): a person's ",
        "rows within one ", width, " are protected by that block's budget; over k blocks a ",
        "person's total privacy loss is at most the sum of those blocks' spend, and it grows as ",
        "new blocks are queried");
  }
  // No names in the text: it is the same sentence on every dataset with the same declarations
  // (a neighbour dataset's differs only by its name, which is shown where names are).
  return "one budget for all time: every person in the population is protected by its one total, "
         "however many rows and queries come";
}

}  // namespace dpq::query
