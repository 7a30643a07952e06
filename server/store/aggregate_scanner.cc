#include "server/store/aggregate_scanner.h"

#include <map>

#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/base/status_macros.h"
#include "server/store/one_trip_transaction.h"
#include "server/store/scan_sql.h"

namespace dpq::store {
namespace {

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

absl::Status AggregateScanner::RunOnce(const query::ScanPlan& plan, absl::Time deadline,
                                       const query::filter::TypedFilter* filter,
                                       const std::string& partition_seed, ScanArithmetic arithmetic,
                                       ScanResult* out, std::string* data_error) {
  const auto scan = [&](pqxx::connection& c) -> absl::Status {
    *out = ScanResult{};
    data_error->clear();
    // Least privilege (docs/database-roles.md): the raw rows are read in a READ ONLY transaction
    // under dpq_scan, which can read the dataset tables and nothing else, so even a flaw in the
    // SQL built below could neither write nor read a ledger, an audit row or a token hash.
    // BEGIN and the settings go in one round trip (one_trip_transaction.h).
    std::string settings = absl::StrCat("SET LOCAL ROLE ", kScanRole);
    if (deadline != absl::InfiniteFuture()) {
      const int64_t ms = absl::ToInt64Milliseconds(deadline - absl::Now());
      if (ms <= 0) return absl::DeadlineExceededError("aggregate scan: deadline already passed");
      absl::StrAppend(&settings, "; SET LOCAL statement_timeout = ", ms);  // an integer we computed
    }
    OneTripTransaction read_only(c, OneTripTransaction::Mode::kReadOnly, settings);
    pqxx::transaction_base& tx = read_only.tx();
    // Identifiers come from the stored schema (validated at creation) and are quoted; every value
    // is a bound parameter.
    const auto quote = [&tx](const std::string& name) { return tx.quote_name(name); };
    ASSIGN_OR_RETURN(ScanStatement statement,
                     BuildScanStatement(plan, filter, partition_seed, arithmetic, quote));
    if (fail_float8_for_testing_ && arithmetic == ScanArithmetic::kFloat8) {
      statement.sql = absl::StrCat("SELECT * FROM (", statement.sql, ") s WHERE 1 / 0 = 0");
    }
    pqxx::result rows;
    try {
      rows = tx.exec_params(statement.sql, pqxx::prepare::make_dynamic_params(statement.params));
    } catch (const pqxx::data_exception& e) {
      // Caught while the transaction object lives, so its destructor rolls the block back and the
      // connection stays poolable.
      *data_error = e.sqlstate().empty() ? "22000" : e.sqlstate();
      return absl::OkStatus();
    }
    std::map<std::vector<std::string>, GroupStats> by_key;
    for (const pqxx::row& r : rows) RETURN_IF_ERROR(AddResultRow(r, statement, by_key, *out));
    for (auto& [key, stats] : by_key) out->groups.push_back(std::move(stats));
    return absl::OkStatus();
  };
  // A joined scan waits for every joined table's planned version.
  std::vector<std::pair<int64_t, int64_t>> versions = {{plan.dataset_id, plan.dataset_version}};
  if (plan.join != nullptr) {
    versions.clear();
    for (const query::JoinedTable& t : plan.join->tables)
      versions.push_back({t.dataset_id, t.version});
  }
  return router_->Run("aggregate scan", versions, deadline, scan);
}

absl::StatusOr<ScanResult> AggregateScanner::Scan(const query::ScanPlan& plan, absl::Time deadline,
                                                  const query::filter::TypedFilter* filter,
                                                  const std::string& partition_seed) {
  ScanResult out;
  std::string data_error;
  RETURN_IF_ERROR(
      RunOnce(plan, deadline, filter, partition_seed, ScanArithmetic::kFloat8, &out, &data_error));
  if (data_error.empty()) return out;
  // Defence in depth: the same scan (same seed, so the same kept rows up to the random window's
  // draw) in exact numeric, whose arithmetic has no overflow or underflow at these magnitudes.
  std::string numeric_error;
  RETURN_IF_ERROR(RunOnce(plan, deadline, filter, partition_seed, ScanArithmetic::kNumeric, &out,
                          &numeric_error));
  if (!numeric_error.empty()) {
    return absl::InternalError(absl::StrCat("aggregate scan: data exception ", data_error,
                                            " in float8 and ", numeric_error, " in numeric"));
  }
  out.recovered_data_error = data_error;
  return out;
}

}  // namespace dpq::store
