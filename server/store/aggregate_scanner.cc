#include "server/store/aggregate_scanner.h"

#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/base/status_macros.h"
#include "server/store/scan_result_rows.h"
#include "server/store/scan_sql.h"
#include "server/store/shard_fan_out.h"
#include "server/store/sharded_scan.h"

namespace dpq::store {

absl::Status AggregateScanner::RunOnce(const query::ScanPlan& plan, absl::Time deadline,
                                       const query::filter::TypedFilter* filter,
                                       const std::string& partition_seed, ScanArithmetic arithmetic,
                                       ScanResult* out, std::string* data_error) {
  if (!plan.shards.empty() && !PushesDownWhole(plan, filter != nullptr)) {
    if (fan_out_ == nullptr) {
      return absl::FailedPreconditionError(
          "this scan of a sharded dataset runs on each shard, and the scanner has no shard fan-out");
    }
    return fan_out_->Scan(plan, deadline, filter, partition_seed, arithmetic, out, data_error);
  }
  const auto scan = [&](pqxx::connection& c) -> absl::Status {
    // Least privilege (docs/database-roles.md): the router's scan sessions read the raw rows as
    // dpq_scan, which can read the dataset tables and nothing else, in read-only transactions, so
    // even a flaw in the SQL built below could neither write nor read a ledger, an audit row or a
    // token hash. The scan is one autocommitted statement: one round trip (scan_session.h).
    RETURN_IF_ERROR(ApplyScanDeadline(c, deadline, "aggregate scan"));
    pqxx::nontransaction tx(c);
    // Identifiers come from the stored schema (validated at creation) and are quoted; every value
    // is a bound parameter.
    const auto quote = [&tx](const std::string& name) { return tx.quote_name(name); };
    ASSIGN_OR_RETURN(ScanStatement statement,
                     BuildScanStatement(plan, filter, partition_seed, arithmetic, quote));
    if (fail_float8_for_testing_ && arithmetic == ScanArithmetic::kFloat8) {
      statement.sql = absl::StrCat("SELECT * FROM (", statement.sql, ") s WHERE 1 / 0 = 0");
    }
    return RunScanStatement(tx, statement, out, data_error);
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
