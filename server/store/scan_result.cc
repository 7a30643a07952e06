#include "server/store/scan_result.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/query/planner.h"
#include "server/store/scan_result_rows.h"

namespace dpq::store {
namespace {

void AddStats(const GroupStats& partial, GroupStats& total) {
  total.count += partial.count;
  total.sum += partial.sum;
  total.sum_sq += partial.sum_sq;
  total.units += partial.units;
  if (total.buckets.size() < partial.buckets.size()) total.buckets.resize(partial.buckets.size());
  for (size_t b = 0; b < partial.buckets.size(); ++b) total.buckets[b] += partial.buckets[b];
}

// Adds one result row of `statement` (scan_sql.h's column order) to `out`.
absl::Status AddResultRow(const pqxx::row& r, const ScanStatement& statement,
                          std::map<std::vector<std::string>, GroupStats>& by_key, ScanResult& out) {
  const bool grouped = statement.group_columns > 0;
  std::vector<std::string> key;
  for (size_t i = 0; i < statement.group_columns; ++i) {
    const pqxx::field value = r[static_cast<int>(i)];
    key.push_back(value.is_null() ? query::NullGroupKey() : value.as<std::string>());
  }
  const int base = static_cast<int>(statement.group_columns);
  GroupStats& g = grouped ? by_key[key] : static_cast<GroupStats&>(out);
  if (grouped) g.key = key;
  if (statement.buckets > 0 && g.buckets.empty()) g.buckets.assign(statement.buckets, 0);
  const bool total_row = r[base + 1].as<int>() == 1;
  if (!total_row) {  // a bucket's row
    const int64_t b = r[base].as<int64_t>();
    if (b < 0 || b >= static_cast<int64_t>(statement.buckets)) {
      return absl::InternalError(absl::StrCat("aggregate scan: bucket ", b, " out of range"));
    }
    g.buckets[b] = r[base + 2].as<int64_t>();
    return absl::OkStatus();
  }
  g.count = r[base + 2].as<int64_t>();
  g.sum = r[base + 3].as<double>();
  g.sum_sq = r[base + 4].as<double>();
  g.units = r[base + 5].as<int64_t>();
  return absl::OkStatus();
}

}  // namespace

absl::Status ReadScanRows(const pqxx::result& rows, const ScanStatement& statement,
                          ScanResult* out) {
  *out = ScanResult{};
  std::map<std::vector<std::string>, GroupStats> by_key;
  for (const pqxx::row& r : rows) RETURN_IF_ERROR(AddResultRow(r, statement, by_key, *out));
  for (auto& [key, stats] : by_key) out->groups.push_back(std::move(stats));
  return absl::OkStatus();
}

absl::Status RunScanStatement(pqxx::transaction_base& tx, const ScanStatement& statement,
                              ScanResult* out, std::string* data_error) {
  *out = ScanResult{};
  data_error->clear();
  pqxx::result rows;
  try {
    rows = tx.exec_params(statement.sql, pqxx::prepare::make_dynamic_params(statement.params));
  } catch (const pqxx::data_exception& e) {
    *data_error = e.sqlstate().empty() ? "22000" : e.sqlstate();
    return absl::OkStatus();
  }
  return ReadScanRows(rows, statement, out);
}

void AddShardPartial(const ScanResult& partial, ScanResult* total) {
  AddStats(partial, *total);
  if (partial.groups.empty()) return;
  std::map<std::vector<std::string>, GroupStats> by_key;
  for (GroupStats& g : total->groups) by_key[g.key] = std::move(g);
  for (const GroupStats& g : partial.groups) {
    GroupStats& into = by_key[g.key];
    into.key = g.key;
    AddStats(g, into);
  }
  total->groups.clear();
  for (auto& [key, stats] : by_key) total->groups.push_back(std::move(stats));
}

}  // namespace dpq::store
