#include "server/store/shard_fan_out.h"

#include <iterator>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/base/status_macros.h"
#include "server/store/scan_result_rows.h"
#include "server/store/scan_session.h"
#include "server/store/scan_sql.h"

namespace dpq::store {
namespace {

// One shard's part of a fan-out scan.
struct ShardPart {
  std::string name;
  std::shared_ptr<Database> pool;
  absl::Status status;
  ScanResult result;
  std::string data_error;
  double seconds = 0;  // wall time, from asking the pool for a session to the last row
};

// Runs the shard-local statement on `part`'s shard.
void ScanShard(const query::ScanPlan& plan, absl::Time deadline,
               const query::filter::TypedFilter* filter, const std::string& partition_seed,
               ScanArithmetic arithmetic, ShardPart& part) {
  part.status =
      part.pool->Run(absl::StrCat("aggregate scan on shard ", part.name), [&](pqxx::connection& c) {
        // One autocommitted statement on a read-only session (SetUpShardScanSession: the
        // shard's login may own the table, and the scan must not be able to write even if the
        // statement were wrong), its deadline the session's statement_timeout.
        RETURN_IF_ERROR(ApplyScanDeadline(c, deadline, "aggregate scan"));
        pqxx::nontransaction tx(c);
        const auto quote = [&tx](const std::string& name) { return tx.quote_name(name); };
        ASSIGN_OR_RETURN(
            ScanStatement statement,
            BuildShardLocalScanStatement(plan, filter, partition_seed, arithmetic, quote));
        return RunScanStatement(tx, statement, &part.result, &part.data_error);
      });
}

}  // namespace

std::shared_ptr<Database> ShardFanOut::PoolFor(const ShardUrl& url, absl::Time now) {
  const std::string conninfo = ShardConninfo(url, 2, "dpqd scan");
  absl::MutexLock lock(&mu_);
  for (auto it = pools_.begin(); it != pools_.end();) {
    it = now - it->second.last_used > kIdlePoolLifetime ? pools_.erase(it) : std::next(it);
  }
  Pool& pool = pools_[conninfo];
  if (pool.db == nullptr)
    pool.db = Database::OpenDeferred(conninfo, kSessionsPerShard, SetUpShardScanSession);
  pool.last_used = now;
  return pool.db;
}

absl::Status ShardFanOut::Scan(const query::ScanPlan& plan, absl::Time deadline,
                               const query::filter::TypedFilter* filter,
                               const std::string& partition_seed, ScanArithmetic arithmetic,
                               ScanResult* out, std::string* data_error) {
  *out = ScanResult{};
  data_error->clear();
  ASSIGN_OR_RETURN(std::vector<ShardUrl> urls, shards_->ConnectionUrls(plan.shards));
  std::vector<ShardPart> parts(plan.shards.size());
  const absl::Time now = absl::Now();
  for (size_t i = 0; i < parts.size(); ++i) {
    parts[i].name = plan.shards[i];
    parts[i].pool = PoolFor(urls[i], now);
  }
  const auto run = [&](ShardPart& part) {
    const absl::Time start = absl::Now();
    ScanShard(plan, deadline, filter, partition_seed, arithmetic, part);
    part.seconds = absl::ToDoubleSeconds(absl::Now() - start);
  };
  // All shards at once: one thread per shard beyond the first, which runs here.
  std::vector<std::thread> threads;
  for (size_t i = 1; i < parts.size(); ++i) threads.emplace_back(run, std::ref(parts[i]));
  if (!parts.empty()) run(parts[0]);
  for (std::thread& t : threads) t.join();
  // On this thread, one shard after the other (shard_fan_out.h says what the observer may assume).
  if (observer_) {
    for (const ShardPart& part : parts) observer_(part.name, part.seconds);
  }
  for (const ShardPart& part : parts) RETURN_IF_ERROR(part.status);
  for (const ShardPart& part : parts) {
    if (!part.data_error.empty()) {
      *data_error = part.data_error;
      return absl::OkStatus();
    }
  }
  for (const ShardPart& part : parts) AddShardPartial(part.result, out);
  return absl::OkStatus();
}

}  // namespace dpq::store
