// A sharded dataset's table (migration 0019; docs/scaling.md, "Sharded datasets"): on the
// coordinator, dpq_data.ds_<id> PARTITION BY HASH (privacy unit) with one foreign partition
// dpq_data.ds_<id>_<shard> per shard (postgres_fdw, batch_size 1000), each on the table
// dpq_shard.ds_<id> that the shard creates when the coordinator writes its row of
// dpq_shard.partitions (shard_store.h), in the same remote transaction as the first load.
//
// Every row carries kLoadColumn, the dataset version its load committed; scans read only rows up
// to the version they were planned on (sharded_scan.h). So a load is atomic without two-phase
// commit: if one shard commits its remote transaction and another then fails, the coordinator's
// transaction aborts, its version stays, and the committed shard's rows stay invisible until the
// next load deletes them (DeleteUncommittedRows) before it writes.
#ifndef DPQ_SERVER_STORE_SHARDED_TABLE_H_
#define DPQ_SERVER_STORE_SHARDED_TABLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include <pqxx/pqxx>

#include "absl/status/status.h"
#include "server/query/dataset_schema.h"

namespace dpq::store {

inline constexpr char kLoadColumn[] = "_dpq_load";

// A column of the data table: its name (unquoted) and SQL type.
struct TableColumn {
  std::string name;
  std::string type;
};

// dpq_shard.ds_<id>: the dataset's own table on each of its shards.
std::string ShardLocalTableName(int64_t dataset_id);

// dpq_data.ds_<id>_<shard>: the foreign partition of `shard` (a validated shard name).
std::string ShardPartitionName(int64_t dataset_id, const std::string& shard);

// Creates the partitioned table, each shard's table and foreign partition, and the
// dataset_shards rows, in `tx`. The shards are locked FOR SHARE (a concurrent `shard remove`
// waits). FAILED_PRECONDITION for a shard that is not live, named twice, or a public table.
absl::Status CreateShardedTable(pqxx::work& tx, const query::DatasetSchema& schema,
                                const std::vector<TableColumn>& columns);

// The staging table pg_temp.dpq_staged (dropped at commit) that COPY fills before
// MoveStagedRows: postgres_fdw in PostgreSQL 15 sends COPY into a foreign partition as one INSERT
// per row, and an INSERT ... SELECT in batches of batch_size rows.
std::string CreateStagingTable(pqxx::work& tx, int64_t dataset_id);
// Routes the staged rows to their shards with kLoadColumn = `load_version`.
void MoveStagedRows(pqxx::work& tx, int64_t dataset_id, int64_t load_version);

// Deletes rows of loads the coordinator never committed (kLoadColumn > `committed_version`).
void DeleteUncommittedRows(pqxx::work& tx, int64_t dataset_id, int64_t committed_version);

// Drops the partitioned table and each shard's table (its dpq_shard.partitions row deleted).
void DropShardedTable(pqxx::work& tx, const query::DatasetSchema& schema);

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_SHARDED_TABLE_H_
