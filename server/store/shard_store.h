// The registry of shard servers (migration 0018): the PostgreSQL servers that will hold the
// partitions of a dataset's raw rows, reached from the coordinator (the database dpqd connects
// to, which holds the ledger) through postgres_fdw; a sharded dataset (dataset_store.h) keeps one
// hash partition of its rows on each of its shards (docs/scaling.md, "Shard servers").
//
// For each live shard the coordinator has a foreign server dpq_shard_<name>, a user mapping for
// dpqd's login role and one for dpq_scan (scans run under SET LOCAL ROLE dpq_scan, migration
// 0010, and postgres_fdw connects with the mapping of the role a foreign table is read as), and
// the foreign table dpq_shards.health_<name> on the shard's view dpq_shard.health. The shard's
// password is stored only in those two user mappings: never in the shards table, never in a
// message or a log line.
#ifndef DPQ_SERVER_STORE_SHARD_STORE_H_
#define DPQ_SERVER_STORE_SHARD_STORE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/store/audit_chain.h"
#include "server/store/database.h"
#include "server/store/shard_url.h"

namespace dpq::store {

struct Shard {
  int64_t id = 0;
  std::string name, host;
  int port = 0;
  std::string dbname, user;
  int server_version_num = 0;  // when it was added, e.g. 150018
  std::string added_at;        // RFC 3339 UTC
};

// One health probe through the coordinator: the path scans will take (coordinator -> postgres_fdw
// -> shard), not a direct connection.
struct ShardProbe {
  std::string name;
  bool up = false;
  double seconds = 0;   // wall time of the probe, up or down
  int version_num = 0;  // the shard's server_version_num when up
  // When down: UNAVAILABLE with the SQLSTATE and the server's message (never the password).
  absl::Status error;
};

class ShardStore {
 public:
  explicit ShardStore(Database* db) : db_(db) {}

  // Registers the shard at `url` (shard_url.h) as `name` ([a-z][a-z0-9_]{0,39}): checks that it
  // answers (connect_timeout 5 s) and runs PostgreSQL 15 or later, creates the view
  // dpq_shard.health on it (CREATE OR REPLACE: harmless and idempotent), then creates the
  // coordinator's objects and the shards row in one transaction with `log`'s admin-log row, and
  // reads the health table as dpq_scan before committing (so a mapping scans could not use is
  // refused now, not at the first scan).
  // INVALID_ARGUMENT: bad name or URL. ALREADY_EXISTS: a live shard has that name.
  // FAILED_PRECONDITION: the shard cannot be reached or refuses the login (naming host:port and
  // what to check), runs PostgreSQL < 15, or a step lacks a privilege. On any error nothing is left
  // on the coordinator.
  absl::StatusOr<Shard> Add(const std::string& name, const std::string& url,
                            const AdminAction* log = nullptr);
  // Every live shard, by name.
  absl::StatusOr<std::vector<Shard>> List();
  // Drops the shard's foreign table, user mappings and foreign server, and marks its row removed
  // (the name may be used again). NOT_FOUND for a name no live shard has.
  absl::Status Remove(const std::string& name, const AdminAction* log = nullptr);

  // SELECT version_num FROM dpq_shards.health_<name> (through the function dpq_shards.probe,
  // migration 0018, which keeps a failure's SQLSTATE), under a statement_timeout of kProbeTimeout.
  // NOT_FOUND for an unknown shard; a down shard is an OK ShardProbe with up false. A shard that
  // went down and came back is seen up again on the same pooled session: postgres_fdw (since
  // PostgreSQL 14) drops a cached connection it finds broken when it starts the next remote
  // transaction, and connects afresh.
  absl::StatusOr<ShardProbe> Probe(const std::string& name);
  // OK when every named shard answers its probe now (one after the other, each bounded by
  // kProbeTimeout); else the first down shard's UNAVAILABLE. What a sharded query checks before
  // it is charged.
  absl::Status CheckUp(const std::vector<std::string>& names);
  // Every live shard, by name, one after the other (each bounded by kProbeTimeout).
  absl::StatusOr<std::vector<ShardProbe>> ProbeAll();

  // How dpqd itself reaches each named live shard, in order: the address and user from the shards
  // row, the password and sslmode from the coordinator's user mapping and foreign server (the only
  // place the password is kept; readable by the mapping's own user, dpqd's login role). For the
  // scans postgres_fdw cannot push down whole (shard_fan_out.h). FAILED_PRECONDITION for a shard
  // that is not live or lacks the mapping.
  absl::StatusOr<std::vector<ShardUrl>> ConnectionUrls(const std::vector<std::string>& names);

  static constexpr absl::Duration kProbeTimeout = absl::Seconds(2);

 private:
  ShardProbe ProbeOne(const std::string& name);

  Database* db_;
};

// Names on the coordinator of a validated shard name (ValidateShardName: no quoting needed): the
// foreign server, and the foreign table on the shard's dpq_shard.partitions (created by Add; a
// row written there creates a dataset's table on the shard, a row deleted drops it).
std::string ShardServerName(const std::string& shard);       // dpq_shard_<name>
std::string ShardPartitionsTable(const std::string& shard);  // dpq_shards.partitions_<name>

// [a-z][a-z0-9_]{0,39}: short enough for "dpq_shard_" and "health_" prefixes in a PostgreSQL name.
absl::Status ValidateShardName(const std::string& name);

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_SHARD_STORE_H_
