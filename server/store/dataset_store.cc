#include "server/store/dataset_store.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <tuple>

#include <pqxx/pqxx>
#include <pqxx/tablewriter>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "server/base/logging.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"
#include "server/query/calendar.h"
#include "server/store/admin_log.h"
#include "server/store/bounding_sql.h"
#include "server/store/population_store.h"
#include "server/store/row_ranker.h"
#include "server/store/schema_rows.h"
#include "server/store/sharded_table.h"

namespace dpq::store {
namespace {

using query::ColumnSchema;
using query::ColumnType;
using query::DatasetSchema;

const char* SqlType(ColumnType type) {
  switch (type) {
    case ColumnType::kInteger: return "bigint";
    case ColumnType::kDouble: return "double precision";
    case ColumnType::kText: return "text";
    // Stored values are read only clamped into the declared bounds (scan_sql.h), so an
    // 'infinity' or a far date written behind dpq's back never fails a scan.
    case ColumnType::kDate: return "date";
    case ColumnType::kTimestamp: return "timestamp";
  }
  return "text";
}

}  // namespace

std::string DataTableName(int64_t dataset_id) { return absl::StrCat("dpq_data.ds_", dataset_id); }

namespace {

// A ranker for the COPY lines of `schema` (its privacy unit's position and type).
// A load's admin-log entry records how many rows it added (the admin's own fact).
AdminAction WithRows(AdminAction action, int64_t rows) {
  absl::StrAppend(&action.details, action.details.empty() ? "" : " ", "rows=", rows);
  return action;
}

absl::StatusOr<RowRanker> NewRanker(const DatasetSchema& schema) {
  for (size_t i = 0; i < schema.columns.size(); ++i) {
    if (schema.columns[i].name == schema.privacy_unit) {
      return RowRanker(schema.columns.size(), i, schema.columns[i].type);
    }
  }
  return absl::InternalError("the privacy unit is not one of the dataset's columns");
}

void LogRanks(const DatasetSchema& schema, const RowRanker& ranker) {
  LogInfo(
      absl::StrFormat("dataset %s: ranked %d rows of %d privacy units; rank counters held %.1f MB",
                      schema.name, ranker.rows(), ranker.units(), ranker.MemoryBytes() / 1e6));
}

// Writes batches of COPY lines on a thread of its own, so that dpqd's work on the next batch
// (reading the upload, CSV validation, ranking) overlaps PostgreSQL's work on this one. In one
// thread the two alternate: a blocking write returns only once PostgreSQL has taken all but a
// socket buffer's worth of the batch, and PostgreSQL then idles while dpqd prepares the next one
// (10M rows: ~17 s in one thread, close to the sum of both sides' CPU time).
// The tablewriter is used by this thread only between construction and Finish().
class CopyWriterThread {
 public:
  explicit CopyWriterThread(pqxx::tablewriter* writer)
      : writer_(writer), thread_([this] { Run(); }) {}
  ~CopyWriterThread() { Join(); }
  CopyWriterThread(const CopyWriterThread&) = delete;
  CopyWriterThread& operator=(const CopyWriterThread&) = delete;

  // Queues *batch and leaves a recycled (empty) buffer in its place; blocks while kDepth batches
  // wait. False when the writer has failed (Finish() rethrows its exception).
  bool Push(std::string* batch) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return queue_.size() < kDepth || error_ != nullptr; });
    if (error_ != nullptr) return false;
    queue_.push_back(std::move(*batch));
    if (free_.empty()) {
      *batch = std::string();
    } else {
      *batch = std::move(free_.back());
      free_.pop_back();
    }
    batch->clear();
    cv_.notify_all();
    return true;
  }

  // Writes what is queued, stops the thread, and rethrows the writer's exception, if any.
  void Finish() {
    Join();
    if (error_ != nullptr) std::rethrow_exception(error_);
  }

 private:
  static constexpr size_t kDepth = 2;

  void Join() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  void Run() {
    for (;;) {
      std::string batch;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return !queue_.empty() || closed_; });
        if (queue_.empty()) return;
        batch = std::move(queue_.front());
        queue_.pop_front();
      }
      try {
        writer_->write_raw_line(batch);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu_);
        error_ = std::current_exception();
        queue_.clear();
        cv_.notify_all();
        return;
      }
      std::lock_guard<std::mutex> lock(mu_);
      free_.push_back(std::move(batch));
      cv_.notify_all();
    }
  }

  pqxx::tablewriter* writer_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::vector<std::string> free_;
  bool closed_ = false;
  std::exception_ptr error_;
  std::thread thread_;  // last: starts once the members above exist
};

// Streams `source` into the dataset's table with COPY inside `tx` and returns the number of rows
// written; on a source error the caller's transaction aborts, so nothing of the file stays.
// Rows are counted as they pass (one '\n' per COPY line: text-format escapes keep newlines out of
// fields), so no count(*) scan of the table is needed.
// With a `ranker`, each line gets its per-unit rank as one more field, for the hidden column
// `_dpq_rank` (row_ranker.h): the ranks are assigned here, on the way into COPY, so they cost
// no second pass over the table.
absl::StatusOr<int64_t> CopyRows(pqxx::work& tx, const DatasetSchema& schema,
                                 const std::string& table, const CopyLineSource& source,
                                 RowRanker* ranker = nullptr) {
  std::vector<std::string> names;
  for (const ColumnSchema& col : schema.columns) {
    names.push_back(tx.quote_name(col.name));  // tablewriter splices the list unquoted
  }
  if (ranker != nullptr) names.push_back(kRowRankColumn);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  // tablewriter (deprecated in 6.4 in favour of stream_to) is the libpqxx 6.4 API that accepts
  // pre-encoded COPY lines; stream_to would re-encode every field.
  pqxx::tablewriter writer(tx, table, names.begin(), names.end());
#pragma GCC diagnostic pop
  std::string lines;
  std::string ranked;
  int64_t rows = 0;
  absl::Status status;
  {
    CopyWriterThread pipe(&writer);
    for (;;) {
      lines.clear();
      absl::StatusOr<bool> more = source(&lines);
      if (!more.ok()) {
        status = more.status();
        break;
      }
      if (!lines.empty()) {
        std::string* batch = &lines;
        if (ranker != nullptr) {
          const int64_t before = ranker->rows();
          status = ranker->RankLines(lines, &ranked);
          if (!status.ok()) break;
          rows += ranker->rows() - before;
          batch = &ranked;
        } else {
          rows += std::count(lines.begin(), lines.end(), '\n');
        }
        if (!pipe.Push(batch)) break;  // Finish() rethrows the database's error
      }
      if (!*more) break;
    }
    pipe.Finish();
  }
  // On an error the caller's transaction aborts, so completing the COPY keeps nothing.
  writer.complete();
  RETURN_IF_ERROR(status);
  return rows;
}

// The dataset_columns and dataset_categories rows of column `position`.
void InsertColumnRows(pqxx::work& tx, int64_t dataset_id, size_t position,
                      const ColumnSchema& col) {
  std::string lower = col.lower ? ExactDouble(*col.lower) : "";
  std::string upper = col.upper ? ExactDouble(*col.upper) : "";
  std::string lower_text, upper_text;
  if (col.calendar_lower && col.calendar_upper) {
    lower_text = query::FormatCalendarValue(col.type, *col.calendar_lower);
    upper_text = query::FormatCalendarValue(col.type, *col.calendar_upper);
  }
  tx.exec_params(
      "INSERT INTO dataset_columns (dataset_id, position, name, type, lower_bound, upper_bound, "
      "lower_text, upper_text) VALUES ($1, $2, $3, $4, nullif($5, '')::float8, "
      "nullif($6, '')::float8, nullif($7, ''), nullif($8, ''))",
      dataset_id, static_cast<int>(position), col.name,
      std::string(query::ColumnTypeName(col.type)), lower, upper, lower_text, upper_text);
  for (size_t k = 0; k < col.categories.size(); ++k) {
    tx.exec_params0(
        "INSERT INTO dataset_categories (dataset_id, column_name, position, value) "
        "VALUES ($1, $2, $3, $4)",
        dataset_id, col.name, static_cast<int>(k), col.categories[k]);
  }
}

// The datasets row of `schema` (its population and row rank already decided): id, version and
// creation time.
pqxx::row InsertDatasetRow(pqxx::work& tx, const DatasetSchema& schema) {
  return tx.exec_params1(
      "INSERT INTO datasets (name, privacy_unit, has_row_rank, population_id, is_public, "
      "block_column, block_width) VALUES ($1, $2, $3, nullif($4, 0), $5, nullif($6, ''), "
      "nullif($7, '')) RETURNING id, version, "
      "to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')",
      schema.name, schema.is_public ? std::string() : schema.privacy_unit, schema.has_row_rank,
      schema.population_id, schema.is_public,
      schema.time_blocks ? schema.time_blocks->column : std::string(),
      schema.time_blocks ? std::string(query::CalendarBucketName(schema.time_blocks->width))
                         : std::string());
}

}  // namespace

absl::StatusOr<CreatedDataset> DatasetStore::Create(const DatasetSchema& schema,
                                                    const CopyLineSource& source,
                                                    const AdminAction* log) {
  CreatedDataset created;
  absl::Status population_refused;  // not a taken dataset name: returned as it is
  absl::Status status = db_->RunOnce("create dataset", [&](pqxx::connection& c) -> absl::Status {
    pqxx::work tx(c);
    created.schema = schema;
    created.schema.population_id = 0;
    if (!schema.is_public) {
      absl::StatusOr<int64_t> population = AttachPopulation(tx, schema);
      if (!population.ok()) return population_refused = population.status();
      created.schema.population_id = *population;
      created.schema.population = schema.population.empty() ? schema.name : schema.population;
    }
    // A public table has no privacy unit, hence no per-unit row rank.
    created.schema.has_row_rank = !schema.is_public;
    const pqxx::row r = InsertDatasetRow(tx, created.schema);
    created.schema.id = r[0].as<int64_t>();
    created.schema.version = r[1].as<int64_t>();
    created.schema.created_at = r[2].as<std::string>();

    // The hidden rank goes right after the leading numeric (8-byte, fixed-width) columns, before
    // the first text column. PostgreSQL deforms a tuple only up to the last attribute a query
    // needs, at cached offsets while the attributes before it are fixed-width: there the rank
    // costs a rank-filtered scan almost nothing, however many text columns follow (as the last
    // column, after a text column, it made a count of 10M rows ~15% slower). It adds 4 bytes
    // with no alignment padding before it (as the first column it also padded the next 8-byte
    // column: +8 bytes per row).
    size_t rank_position = schema.is_public ? schema.columns.size() + 1 : 0;
    while (rank_position < schema.columns.size() &&
           schema.columns[rank_position].type != ColumnType::kText) {
      ++rank_position;
    }
    std::vector<TableColumn> columns;
    for (size_t i = 0; i <= schema.columns.size(); ++i) {
      if (i == rank_position) columns.push_back({kRowRankColumn, "integer"});
      if (i == schema.columns.size()) break;
      const ColumnSchema& col = schema.columns[i];
      InsertColumnRows(tx, created.schema.id, i, col);
      columns.push_back({col.name, SqlType(col.type)});
    }
    std::string table = DataTableName(created.schema.id);
    if (!schema.shards.empty()) {
      columns.push_back({kLoadColumn, "bigint"});
      RETURN_IF_ERROR(CreateShardedTable(tx, created.schema, columns));
      table = CreateStagingTable(tx, created.schema.id);
    } else {
      std::vector<std::string> definitions;
      for (const TableColumn& c : columns) {
        definitions.push_back(absl::StrCat(tx.quote_name(c.name), " ", c.type,
                                           c.name == kRowRankColumn ? " NOT NULL" : ""));
      }
      tx.exec0(absl::StrCat("CREATE TABLE ", table, " (", absl::StrJoin(definitions, ", "), ")"));
    }
    if (schema.is_public) {
      ASSIGN_OR_RETURN(created.rows_loaded, CopyRows(tx, created.schema, table, source));
    } else {
      ASSIGN_OR_RETURN(RowRanker ranker, NewRanker(created.schema));
      ASSIGN_OR_RETURN(created.rows_loaded, CopyRows(tx, created.schema, table, source, &ranker));
      LogRanks(created.schema, ranker);
    }
    if (!schema.shards.empty()) MoveStagedRows(tx, created.schema.id, created.schema.version);
    if (log != nullptr) AppendAdminAction(tx, WithRows(*log, created.rows_loaded));
    tx.commit();
    return absl::OkStatus();
  });
  if (!population_refused.ok()) return population_refused;
  if (status.code() == absl::StatusCode::kAlreadyExists) {
    return absl::AlreadyExistsError(absl::StrCat("dataset ", schema.name, " already exists"));
  }
  RETURN_IF_ERROR(status);
  return created;
}

absl::StatusOr<int64_t> DatasetStore::Append(const DatasetSchema& schema,
                                             const CopyLineSource& source, const AdminAction* log) {
  int64_t appended = 0;
  RETURN_IF_ERROR(db_->RunOnce("load dataset", [&](pqxx::connection& c) -> absl::Status {
    pqxx::work tx(c);
    // Lock the dataset row: concurrent loads and a drop serialise, and the version bump is exact.
    pqxx::result d = tx.exec_params(
        "SELECT has_row_rank, version FROM datasets WHERE id = $1 AND dropped_at IS NULL "
        "FOR UPDATE",
        schema.id);
    if (d.empty()) return absl::NotFoundError(absl::StrCat("dataset ", schema.name, " not found"));
    const int64_t version = d[0][1].as<int64_t>();
    std::string table = DataTableName(schema.id);
    if (!schema.shards.empty()) {
      DeleteUncommittedRows(tx, schema.id, version);
      // Each shard's max rank per unit is a complete aggregate over its partition (the unit is
      // the partition key), which postgres_fdw runs on the shard.
      tx.exec0("SET LOCAL enable_partitionwise_aggregate = on");
    }
    if (!d[0][0].as<bool>()) {  // a table from before migration 0006: no rank column
      ASSIGN_OR_RETURN(appended, CopyRows(tx, schema, table, source));
    } else {
      ASSIGN_OR_RETURN(RowRanker ranker, NewRanker(schema));
      // The counters continue from the stored ranks, read under the row lock above (loads
      // serialise on it, so no concurrent load can add ranks meanwhile). Cost: one scan and hash
      // aggregate of the whole table per append (about a second per 10M rows), and memory for
      // every unit already stored; an index on (unit, _dpq_rank) would make it cheaper per append
      // but would slow every load and double the table's footprint.
      const std::string unit = tx.quote_name(schema.privacy_unit);
      for (const pqxx::row& r :
           tx.exec(absl::StrCat("SELECT ", unit, "::text, ", unit, " IS NULL, max(", kRowRankColumn,
                                ") FROM ", table, " GROUP BY ", unit))) {
        RETURN_IF_ERROR(ranker.Seed(r[1].as<bool>() ? "" : r[0].as<std::string>(), r[1].as<bool>(),
                                    r[2].as<int32_t>()));
      }
      if (!schema.shards.empty()) table = CreateStagingTable(tx, schema.id);
      ASSIGN_OR_RETURN(appended, CopyRows(tx, schema, table, source, &ranker));
      LogRanks(schema, ranker);
    }
    if (!schema.shards.empty()) MoveStagedRows(tx, schema.id, version + 1);
    tx.exec_params0("UPDATE datasets SET version = version + 1 WHERE id = $1", schema.id);
    if (log != nullptr) AppendAdminAction(tx, WithRows(*log, appended));
    tx.commit();
    return absl::OkStatus();
  }));
  return appended;
}

absl::Status DatasetStore::Drop(const DatasetSchema& schema, const AdminAction* log) {
  return db_->Run("drop dataset", [&](pqxx::connection& c) -> absl::Status {
    pqxx::work tx(c);
    pqxx::result d = tx.exec_params(
        "UPDATE datasets SET dropped_at = now(), version = version + 1 "
        "WHERE id = $1 AND dropped_at IS NULL RETURNING id",
        schema.id);
    if (d.empty()) return absl::NotFoundError(absl::StrCat("dataset ", schema.name, " not found"));
    if (schema.shards.empty()) {
      tx.exec0(absl::StrCat("DROP TABLE ", DataTableName(schema.id)));
    } else {
      DropShardedTable(tx, schema);
    }
    if (log != nullptr) AppendAdminAction(tx, *log);
    tx.commit();
    return absl::OkStatus();
  });
}

absl::Status DatasetStore::SetEpsilonPreset(int64_t population_id, const std::string& preset) {
  return db_->Run("set epsilon preset", [&](pqxx::connection& c) {
    pqxx::work tx(c);
    tx.exec_params0("UPDATE ledgers SET epsilon_preset = nullif($2, '') WHERE population_id = $1",
                    population_id, preset);
    tx.commit();
    return absl::OkStatus();
  });
}

absl::StatusOr<DatasetSchema> DatasetStore::Get(const std::string& name, bool include_dropped) {
  // Every lookup by name passes here: a malformed name (empty, a NUL byte that PostgreSQL's text
  // input would refuse or that a C string would truncate, a control character) is the caller's
  // error, never NOT_FOUND or INTERNAL.
  RETURN_IF_ERROR(ValidateIdentifier(name, "dataset"));
  std::vector<DatasetSchema> found;
  RETURN_IF_ERROR(db_->Run("get dataset", [&](pqxx::connection& c) {
    // One statement: autocommit, no BEGIN/ROLLBACK round trips (it runs on every query).
    pqxx::nontransaction tx(c);
    found = SchemasFromRows(tx.exec_params(
        SchemaQuery("d.name = $1 AND ($2 OR d.dropped_at IS NULL)", "", "", "d.id, c.position"),
        name, include_dropped));
    return absl::OkStatus();
  }));
  if (found.empty())
    return absl::NotFoundError(absl::StrCat("dataset ", name.substr(0, 64), " not found"));
  return std::move(found.front());
}

absl::StatusOr<DatasetStore::Granted> DatasetStore::GetWithGrant(const std::string& name,
                                                                 const QueryCaller& caller) {
  RETURN_IF_ERROR(ValidateIdentifier(name, "dataset"));  // as Get
  Granted out;
  std::vector<DatasetSchema> found;
  RETURN_IF_ERROR(db_->Run("get dataset", [&](pqxx::connection& c) {
    // One statement: autocommit, no BEGIN/ROLLBACK round trips, prepared once per connection
    // (parsed and planned once: it runs on every query; a lookup by unique name plans alike for
    // every value). The grant, the token's confirmation and the cache probe are three columns
    // after SchemasFromRows' own, the same on every row, computed once per dataset. An empty $3
    // confirms nothing (the caller was looked up just now); an empty $4 probes nothing.
    static const std::string* const sql = new std::string(SchemaQuery(
        "d.name = $1 AND d.dropped_at IS NULL",
        absl::StrCat(
            ", EXISTS (SELECT 1 FROM grants g WHERE g.principal_id = $2 AND g.dataset_id = d.id "
            "AND g.revoked_at IS NULL) AS granted, (octet_length($3::bytea) = 0 OR EXISTS "
            "(SELECT 1 FROM principals q WHERE q.id = $2 AND q.token_sha256 = $3 AND "
            "q.revoked_at IS NULL)) AS caller_confirmed, (SELECT x.request_id FROM (",
            CacheProbeSql("d.population_id", "$4", "d.version", "$2", "''"),
            ") x WHERE $4 <> '') AS cached_request_id"),
        ", d.granted, d.caller_confirmed, d.cached_request_id", "d.id, c.position"));
    c.prepare("dpq_dataset_with_grant", *sql);
    pqxx::nontransaction tx(c);
    const pqxx::result rows = tx.exec_prepared("dpq_dataset_with_grant", name, caller.principal_id,
                                               pqxx::binarystring(caller.token_sha256_to_confirm),
                                               caller.probe_fingerprint);
    found = SchemasFromRows(rows);
    if (!rows.empty()) {
      const pqxx::row& first = rows[0];
      out.granted = first[kSchemaRowColumns].as<bool>();
      out.caller_confirmed = first[kSchemaRowColumns + 1].as<bool>();
      if (!caller.probe_fingerprint.empty()) {
        out.probed = ProbedCache{caller.probe_fingerprint, absl::nullopt};
        const pqxx::field hit = first[kSchemaRowColumns + 2];
        if (!hit.is_null()) out.probed->request_id = hit.as<std::string>();
      }
    }
    return absl::OkStatus();
  }));
  if (found.empty())
    return absl::NotFoundError(absl::StrCat("dataset ", name.substr(0, 64), " not found"));
  out.schema = std::move(found.front());
  return out;
}

absl::StatusOr<std::vector<DatasetSchema>> DatasetStore::List(
    absl::optional<int64_t> principal_id) {
  std::vector<DatasetSchema> found;
  RETURN_IF_ERROR(db_->Run("list datasets", [&](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    found = SchemasFromRows(tx.exec_params(
        SchemaQuery("d.dropped_at IS NULL AND ($1 < 0 OR EXISTS (SELECT 1 FROM grants g "
                    "WHERE g.dataset_id = d.id AND g.principal_id = $1 AND g.revoked_at IS NULL))",
                    "", "", "d.name, c.position"),
        principal_id.value_or(-1)));
    return absl::OkStatus();
  }));
  return found;
}

}  // namespace dpq::store
