#include "server/store/dataset_store.h"

#include <algorithm>

#include <pqxx/pqxx>
#include <pqxx/tablewriter>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"

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
  }
  return "text";
}

// One statement returns every dataset's columns; `filter` selects which datasets:
// by name ($1), all, or those granted to a principal ($1).
constexpr char kSelectSchemas[] = R"sql(
SELECT d.id, d.name, d.privacy_unit, d.version,
       to_char(d.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
       c.name, c.type, c.lower_bound, c.upper_bound
  FROM datasets d JOIN dataset_columns c ON c.dataset_id = d.id
)sql";

std::vector<DatasetSchema> SchemasFromRows(const pqxx::result& rows) {
  std::vector<DatasetSchema> out;
  for (const auto& row : rows) {
    int64_t id = row[0].as<int64_t>();
    if (out.empty() || out.back().id != id) {
      DatasetSchema s;
      s.id = id;
      s.name = row[1].as<std::string>();
      s.privacy_unit = row[2].as<std::string>();
      s.version = row[3].as<int64_t>();
      s.created_at = row[4].as<std::string>();
      out.push_back(std::move(s));
    }
    ColumnSchema c;
    c.name = row[5].as<std::string>();
    c.type = query::ParseColumnType(row[6].as<std::string>()).value_or(ColumnType::kText);
    if (!row[7].is_null()) c.lower = row[7].as<double>();
    if (!row[8].is_null()) c.upper = row[8].as<double>();
    out.back().columns.push_back(std::move(c));
  }
  return out;
}

}  // namespace

std::string DataTableName(int64_t dataset_id) { return absl::StrCat("dpq_data.ds_", dataset_id); }

namespace {

// Streams `source` into the dataset's table with COPY inside `tx` and returns the number of rows
// written; on a source error the caller's transaction aborts, so nothing of the file stays.
// Rows are counted as they pass (one '\n' per COPY line: text-format escapes keep newlines out of
// fields), so no count(*) scan of the table is needed.
absl::StatusOr<int64_t> CopyRows(pqxx::work& tx, const DatasetSchema& schema,
                                 const CopyLineSource& source) {
  std::vector<std::string> names;
  for (const ColumnSchema& col : schema.columns) {
    names.push_back(tx.quote_name(col.name));  // tablewriter splices the list unquoted
  }
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  // tablewriter (deprecated in 6.4 in favour of stream_to) is the libpqxx 6.4 API that accepts
  // pre-encoded COPY lines; stream_to would re-encode every field.
  pqxx::tablewriter writer(tx, DataTableName(schema.id), names.begin(), names.end());
#pragma GCC diagnostic pop
  std::string lines;
  int64_t rows = 0;
  for (;;) {
    lines.clear();
    absl::StatusOr<bool> more = source(&lines);
    if (!more.ok()) {
      writer.complete();
      return more.status();
    }
    if (!lines.empty()) {
      rows += std::count(lines.begin(), lines.end(), '\n');
      writer.write_raw_line(lines);
    }
    if (!*more) break;
  }
  writer.complete();
  return rows;
}

}  // namespace

absl::StatusOr<CreatedDataset> DatasetStore::Create(const DatasetSchema& schema,
                                                    const CopyLineSource& source) {
  CreatedDataset created;
  absl::Status status = db_->RunOnce("create dataset", [&](pqxx::connection& c) -> absl::Status {
    pqxx::work tx(c);
    pqxx::row r = tx.exec_params1(
        "INSERT INTO datasets (name, privacy_unit) VALUES ($1, $2) RETURNING id, version, "
        "to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')",
        schema.name, schema.privacy_unit);
    created.schema = schema;
    created.schema.id = r[0].as<int64_t>();
    created.schema.version = r[1].as<int64_t>();
    created.schema.created_at = r[2].as<std::string>();

    std::string ddl = absl::StrCat("CREATE TABLE ", DataTableName(created.schema.id), " (");
    for (size_t i = 0; i < schema.columns.size(); ++i) {
      const ColumnSchema& col = schema.columns[i];
      std::string lower = col.lower ? ExactDouble(*col.lower) : "";
      std::string upper = col.upper ? ExactDouble(*col.upper) : "";
      tx.exec_params(
          "INSERT INTO dataset_columns (dataset_id, position, name, type, lower_bound, upper_bound) "
          "VALUES ($1, $2, $3, $4, nullif($5, '')::float8, nullif($6, '')::float8)",
          created.schema.id, static_cast<int>(i), col.name, std::string(query::ColumnTypeName(col.type)),
          lower, upper);
      absl::StrAppend(&ddl, i ? ", " : "", tx.quote_name(col.name), " ", SqlType(col.type));
    }
    ddl.push_back(')');
    tx.exec0(ddl);
    tx.exec_params0("INSERT INTO ledgers (dataset_id) VALUES ($1)", created.schema.id);

    ASSIGN_OR_RETURN(created.rows_loaded, CopyRows(tx, created.schema, source));
    tx.commit();
    return absl::OkStatus();
  });
  if (status.code() == absl::StatusCode::kAlreadyExists) {
    return absl::AlreadyExistsError(absl::StrCat("dataset ", schema.name, " already exists"));
  }
  RETURN_IF_ERROR(status);
  return created;
}

absl::StatusOr<int64_t> DatasetStore::Append(const DatasetSchema& schema, const CopyLineSource& source) {
  int64_t appended = 0;
  RETURN_IF_ERROR(db_->RunOnce("load dataset", [&](pqxx::connection& c) -> absl::Status {
    pqxx::work tx(c);
    // Lock the dataset row: concurrent loads and a drop serialise, and the version bump is exact.
    pqxx::result d = tx.exec_params(
        "SELECT 1 FROM datasets WHERE id = $1 AND dropped_at IS NULL FOR UPDATE", schema.id);
    if (d.empty()) return absl::NotFoundError(absl::StrCat("dataset ", schema.name, " not found"));
    ASSIGN_OR_RETURN(appended, CopyRows(tx, schema, source));
    tx.exec_params0("UPDATE datasets SET version = version + 1 WHERE id = $1", schema.id);
    tx.commit();
    return absl::OkStatus();
  }));
  return appended;
}

absl::Status DatasetStore::Drop(const DatasetSchema& schema) {
  return db_->Run("drop dataset", [&](pqxx::connection& c) -> absl::Status {
    pqxx::work tx(c);
    pqxx::result d = tx.exec_params(
        "UPDATE datasets SET dropped_at = now(), version = version + 1 "
        "WHERE id = $1 AND dropped_at IS NULL RETURNING id",
        schema.id);
    if (d.empty()) return absl::NotFoundError(absl::StrCat("dataset ", schema.name, " not found"));
    tx.exec0(absl::StrCat("DROP TABLE ", DataTableName(schema.id)));
    tx.commit();
    return absl::OkStatus();
  });
}

absl::StatusOr<DatasetSchema> DatasetStore::Get(const std::string& name, bool include_dropped) {
  std::vector<DatasetSchema> found;
  RETURN_IF_ERROR(db_->Run("get dataset", [&](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    found = SchemasFromRows(tx.exec_params(
        absl::StrCat(kSelectSchemas, " WHERE d.name = $1 AND ($2 OR d.dropped_at IS NULL) ",
                     "ORDER BY d.id, c.position"),
        name, include_dropped));
    return absl::OkStatus();
  }));
  if (found.empty()) return absl::NotFoundError(absl::StrCat("dataset ", name.substr(0, 64), " not found"));
  return std::move(found.front());
}

absl::StatusOr<std::vector<DatasetSchema>> DatasetStore::List(absl::optional<int64_t> principal_id) {
  std::vector<DatasetSchema> found;
  RETURN_IF_ERROR(db_->Run("list datasets", [&](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    found = SchemasFromRows(tx.exec_params(
        absl::StrCat(kSelectSchemas,
                     " WHERE d.dropped_at IS NULL AND ($1 < 0 OR EXISTS (SELECT 1 FROM grants g "
                     "WHERE g.dataset_id = d.id AND g.principal_id = $1)) ORDER BY d.name, c.position"),
        principal_id.value_or(-1)));
    return absl::OkStatus();
  }));
  return found;
}

}  // namespace dpq::store
