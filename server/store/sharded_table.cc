#include "server/store/sharded_table.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/store/array_literal.h"
#include "server/store/dataset_store.h"
#include "server/store/shard_store.h"

namespace dpq::store {
namespace {

std::string ShardTableName(int64_t dataset_id) { return absl::StrCat("ds_", dataset_id); }

std::string ArrayOf(const std::vector<TableColumn>& columns, bool names) {
  ArrayLiteral out;
  for (const TableColumn& c : columns) out.AddText(names ? c.name : c.type);
  return out.str();
}

}  // namespace

std::string ShardLocalTableName(int64_t dataset_id) {
  return absl::StrCat("dpq_shard.", ShardTableName(dataset_id));
}

std::string ShardPartitionName(int64_t dataset_id, const std::string& shard) {
  return absl::StrCat(DataTableName(dataset_id), "_", shard);
}

absl::Status CreateShardedTable(pqxx::work& tx, const query::DatasetSchema& schema,
                                const std::vector<TableColumn>& columns) {
  if (schema.is_public) {
    return absl::FailedPreconditionError(
        "a public table is not sharded: it has no privacy unit to place its rows by");
  }
  std::set<std::string> seen;
  std::vector<int64_t> ids;
  for (const std::string& shard : schema.shards) {
    if (absl::Status valid = ValidateShardName(shard); !valid.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("shards: ", valid.message()));
    }
    if (!seen.insert(shard).second) {
      return absl::FailedPreconditionError(
          absl::StrCat("shard ", shard, " is named twice in --shards: name each shard once"));
    }
    const pqxx::result r = tx.exec_params(
        "SELECT id FROM shards WHERE name = $1 AND removed_at IS NULL FOR SHARE", shard);
    if (r.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("shard ", shard, " is not registered: add it first (`dpqctl shard add ",
                       shard, " --url-file F`; `dpqctl shard list` lists them)"));
    }
    ids.push_back(r[0][0].as<int64_t>());
  }
  std::vector<std::string> definitions;
  for (const TableColumn& c : columns) {
    definitions.push_back(absl::StrCat(tx.quote_name(c.name), " ", c.type));
  }
  const std::string table = DataTableName(schema.id);
  tx.exec0(absl::StrCat("CREATE TABLE ", table, " (", absl::StrJoin(definitions, ", "),
                        ") PARTITION BY HASH (", tx.quote_name(schema.privacy_unit), ")"));
  const std::string names = ArrayOf(columns, true), types = ArrayOf(columns, false);
  for (size_t i = 0; i < schema.shards.size(); ++i) {
    const std::string& shard = schema.shards[i];
    // Written through postgres_fdw: the shard creates dpq_shard.ds_<id> in this remote transaction.
    tx.exec_params0(absl::StrCat("INSERT INTO ", ShardPartitionsTable(shard),
                                 " VALUES ($1, $2::text[], $3::text[])"),
                    ShardTableName(schema.id), names, types);
    tx.exec0(absl::StrCat("CREATE FOREIGN TABLE ", ShardPartitionName(schema.id, shard),
                          " PARTITION OF ", table, " FOR VALUES WITH (MODULUS ",
                          schema.shards.size(), ", REMAINDER ", i, ") SERVER ",
                          ShardServerName(shard), " OPTIONS (schema_name 'dpq_shard', table_name ",
                          tx.quote(ShardTableName(schema.id)), ", batch_size '1000')"));
    tx.exec_params0(
        "INSERT INTO dataset_shards (dataset_id, position, shard_id) VALUES ($1, $2, $3)",
        schema.id, static_cast<int>(i), ids[i]);
  }
  return absl::OkStatus();
}

std::string CreateStagingTable(pqxx::work& tx, int64_t dataset_id) {
  tx.exec0(absl::StrCat("CREATE TEMP TABLE dpq_staged (LIKE ", DataTableName(dataset_id),
                        ") ON COMMIT DROP"));
  tx.exec0(absl::StrCat("ALTER TABLE pg_temp.dpq_staged DROP COLUMN ", kLoadColumn));
  return "pg_temp.dpq_staged";
}

void MoveStagedRows(pqxx::work& tx, int64_t dataset_id, int64_t load_version) {
  std::vector<std::string> columns;
  for (const pqxx::row& r :
       tx.exec("SELECT attname FROM pg_attribute WHERE attrelid = 'pg_temp.dpq_staged'::regclass "
               "AND attnum > 0 AND NOT attisdropped ORDER BY attnum")) {
    columns.push_back(tx.quote_name(r[0].as<std::string>()));
  }
  const std::string list = absl::StrJoin(columns, ", ");
  tx.exec_params0(
      absl::StrCat("INSERT INTO ", DataTableName(dataset_id), " (", list, ", ", kLoadColumn,
                   ") SELECT ", list, ", $1::bigint FROM pg_temp.dpq_staged"),
      load_version);
}

void DeleteUncommittedRows(pqxx::work& tx, int64_t dataset_id, int64_t committed_version) {
  tx.exec_params0(absl::StrCat("DELETE FROM ", DataTableName(dataset_id), " WHERE ", kLoadColumn,
                               " > $1::bigint"),
                  committed_version);
}

void DropShardedTable(pqxx::work& tx, const query::DatasetSchema& schema) {
  tx.exec0(absl::StrCat("DROP TABLE ", DataTableName(schema.id)));
  for (const std::string& shard : schema.shards) {
    tx.exec_params0(
        absl::StrCat("DELETE FROM ", ShardPartitionsTable(shard), " WHERE table_name = $1"),
        ShardTableName(schema.id));
  }
}

}  // namespace dpq::store
