// Human output of datasets: `dataset show`, `dataset list` and what `dataset create` prints.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/dpqctl/enum_names.h"
#include "client/dpqctl/text_output.h"

namespace dpqctl {

namespace {

// More categories than this are cut short in `dataset show` (a key domain may hold thousands).
constexpr int kMaxCategoriesShown = 20;

std::string CategoriesCell(const dpq::v1::Column& column) {
  if (column.categories_size() == 0) return "-";
  std::vector<std::string> shown;
  for (int i = 0; i < column.categories_size() && i < kMaxCategoriesShown; ++i) {
    shown.push_back(column.categories(i));
  }
  std::string cell = absl::StrJoin(shown, "|");
  if (column.categories_size() > kMaxCategoriesShown) {
    absl::StrAppend(&cell, "|... (", column.categories_size(), " in all)");
  }
  return cell;
}

// "label:" padded to 15 characters, then `text` wrapped at 96 columns under itself.
void WrappedField(std::ostream& out, const std::string& label, const std::string& text) {
  constexpr size_t kIndent = 15, kWidth = 96;
  std::string line = label;
  line.resize(kIndent, ' ');
  size_t used = kIndent;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (used > kIndent && used + 1 + word.size() > kWidth) {
      out << line << '\n';
      line = std::string(kIndent, ' ');
      used = kIndent;
    } else if (used > kIndent) {
      line += ' ';
      ++used;
    }
    absl::StrAppend(&line, word);
    used += word.size();
  }
  out << line << '\n';
}

}  // namespace

void WriteDatasetText(std::ostream& out, const dpq::v1::Dataset& dataset) {
  out << "dataset:       " << dataset.name() << '\n';
  if (dataset.is_public()) {
    out << "public table:  not personal; no privacy unit, no budget; only ever joined\n";
  } else {
    out << "privacy unit:  " << dataset.privacy_unit() << '\n';
    if (!dataset.population().empty()) out << "population:    " << dataset.population() << '\n';
    if (!dataset.block_by().empty()) {
      out << "time blocks:   one " << dataset.block_width() << " of " << dataset.block_by()
          << " each, from the first day of its lower bound\n";
    }
    if (dataset.shards_size() > 0) {
      out << "shards:        " << absl::StrJoin(dataset.shards(), ", ") << " (rows hashed by "
          << dataset.privacy_unit() << ")\n";
    }
    if (!dataset.promise().empty()) WrappedField(out, "budget:", dataset.promise());
  }
  out << "version:       " << dataset.version() << '\n'
      << "created at:    " << dataset.created_at() << '\n'
      << '\n';
  bool any_categories = false;
  for (const dpq::v1::Column& column : dataset.columns()) {
    any_categories = any_categories || column.categories_size() > 0;
  }
  std::vector<std::vector<std::string>> rows;
  for (const dpq::v1::Column& column : dataset.columns()) {
    // A date or timestamp column's bounds are text (Column.lower_text), a number column's not.
    rows.push_back({column.name(), ColumnTypeWord(column.type()),
                    column.has_lower_text() ? column.lower_text()
                    : column.has_lower()    ? FormatNumber(column.lower())
                                            : "-",
                    column.has_upper_text() ? column.upper_text()
                    : column.has_upper()    ? FormatNumber(column.upper())
                                            : "-"});
    if (any_categories) rows.back().push_back(CategoriesCell(column));
  }
  std::vector<std::string> header = {"COLUMN", "TYPE", "LOWER", "UPPER"};
  if (any_categories) header.push_back("CATEGORIES");
  WriteTable(out, header, rows);
}

void WriteListDatasetsText(std::ostream& out, const dpq::v1::ListDatasetsResponse& response) {
  if (response.datasets().empty()) {
    out << "no datasets\n";
    return;
  }
  std::vector<std::vector<std::string>> rows;
  for (const dpq::v1::Dataset& dataset : response.datasets()) {
    rows.push_back({dataset.name(), dataset.privacy_unit(), absl::StrCat(dataset.columns_size()),
                    absl::StrCat(dataset.version()), dataset.created_at()});
  }
  WriteTable(out, {"NAME", "PRIVACY UNIT", "COLUMNS", "VERSION", "CREATED AT"}, rows);
}

void WriteCreateDatasetText(std::ostream& out, const dpq::v1::CreateDatasetResponse& response) {
  out << "loaded " << response.rows_loaded() << " rows\n";
  if (response.dataset().per_block_budget()) {
    // A late row joins its block: whatever that block has left is what protects it.
    WrappedField(out, "note:",
                 "each row joins the time block of its " + response.dataset().block_by() +
                     "; a row dated in a block that has already been queried is protected only "
                     "by what that block has left (`dpqctl budget show " +
                     response.dataset().name() + " --blocks`)");
  }
  WriteDatasetText(out, response.dataset());
}

}  // namespace dpqctl
