// The statement that reads datasets' schemas (their rows, their columns, their ledger's declared
// settings, their shards) and the code that turns its rows into query::DatasetSchema: every
// lookup of a schema (DatasetStore::Get, GetWithGrant, List) reads the same columns.
#ifndef DPQ_SERVER_STORE_SCHEMA_ROWS_H_
#define DPQ_SERVER_STORE_SCHEMA_ROWS_H_

#include <string>
#include <vector>

#include <pqxx/pqxx>

#include "absl/strings/string_view.h"
#include "server/query/dataset_schema.h"

namespace dpq::store {

// The schema rows (one per column, ordered by `order_by`) of the datasets `filter` selects (a
// condition on datasets `d`; its parameters are the caller's). `per_dataset` adds columns
// computed once per dataset (", <expr> AS name" ...), and `extra_outputs` selects them (", d.name"
// ...), after SchemasFromRows' own kSchemaRowColumns.
std::string SchemaQuery(absl::string_view filter, absl::string_view per_dataset,
                        absl::string_view extra_outputs, absl::string_view order_by);

// How many columns SchemasFromRows reads: a caller's extra outputs start at this index.
inline constexpr int kSchemaRowColumns = 22;

// The schemas in `rows` (SchemaQuery's), in their order.
std::vector<query::DatasetSchema> SchemasFromRows(const pqxx::result& rows);

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_SCHEMA_ROWS_H_
