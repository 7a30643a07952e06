#include "server/store/schema_rows.h"

#include "absl/strings/str_cat.h"
#include "server/query/calendar.h"
#include "server/store/text_array.h"

namespace dpq::store {

// The per-dataset values are computed in a MATERIALIZED CTE, once per dataset rather than once
// per column row: the ledger row (for max_query_epsilon) and the grant row are the hottest rows of
// the database (every debit group rewrites them, and each lookup walks their HOT chain), and the
// per-column subqueries had made this the most expensive statement of a small query
// (pg_stat_statements, 7 columns, 32 clients: 0.108 ms per call, above the scan's 0.055).
std::string SchemaQuery(absl::string_view filter, absl::string_view per_dataset,
                        absl::string_view extra_outputs, absl::string_view order_by) {
  return absl::StrCat(
      "WITH d AS MATERIALIZED (SELECT d.id, d.name, d.privacy_unit, d.version, l.epsilon_preset, "
      "d.created_at, d.has_row_rank, coalesce(l.max_query_epsilon_units, 0) AS "
      "max_query_epsilon_units, d.population_id, coalesce(p.name, '') AS population, d.is_public, d.block_column, "
      "d.block_width, coalesce(l.per_block, false) AS per_block, "
      "(SELECT coalesce(array_agg(s.name ORDER BY x.position), '{}') FROM dataset_shards x "
      "JOIN shards s ON s.id = x.shard_id WHERE x.dataset_id = d.id) AS shards",
      per_dataset,
      " FROM datasets d LEFT JOIN populations p ON p.id = d.population_id "
      "LEFT JOIN ledgers l ON l.population_id = d.population_id WHERE ",
      filter, ") ",
      R"sql(SELECT d.id, d.name, d.privacy_unit, d.version, coalesce(d.epsilon_preset, ''),
       to_char(d.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
       c.name, c.type, c.lower_bound, c.upper_bound,
       (SELECT array_agg(k.value ORDER BY k.position) FROM dataset_categories k
         WHERE k.dataset_id = d.id AND k.column_name = c.name),
       d.has_row_rank, d.max_query_epsilon_units, coalesce(d.population_id, 0), d.population,
       d.is_public, c.lower_text, c.upper_text, d.block_column, d.block_width,
       d.per_block, d.shards)sql",
      extra_outputs, " FROM d JOIN dataset_columns c ON c.dataset_id = d.id ORDER BY ", order_by);
}

std::vector<query::DatasetSchema> SchemasFromRows(const pqxx::result& rows) {
  std::vector<query::DatasetSchema> out;
  for (const auto& row : rows) {
    int64_t id = row[0].as<int64_t>();
    if (out.empty() || out.back().id != id) {
      query::DatasetSchema s;
      s.id = id;
      s.name = row[1].as<std::string>();
      s.privacy_unit = row[2].as<std::string>();
      s.population_id = row[13].as<int64_t>();
      s.population = row[14].as<std::string>();
      s.is_public = row[15].as<bool>();
      s.version = row[3].as<int64_t>();
      s.epsilon_preset = row[4].as<std::string>();
      s.created_at = row[5].as<std::string>();
      s.has_row_rank = row[11].as<bool>();
      s.max_query_epsilon_units = row[12].is_null() ? 0 : row[12].as<int64_t>();
      if (!row[18].is_null()) {
        // The CHECK of migration 0016 admits only bucket names.
        s.time_blocks = query::TimeBlocking{row[18].as<std::string>(),
                                            query::ParseCalendarBucket(row[19].as<std::string>())
                                                .value_or(query::CalendarBucket::kDay)};
        s.per_block_budget = row[20].as<bool>();
      }
      s.shards = ParseTextArray(row[21]);
      out.push_back(std::move(s));
    }
    query::ColumnSchema c;
    c.name = row[6].as<std::string>();
    c.type = query::ParseColumnType(row[7].as<std::string>()).value_or(query::ColumnType::kText);
    if (!row[8].is_null()) c.lower = row[8].as<double>();
    if (!row[9].is_null()) c.upper = row[9].as<double>();
    if (!row[10].is_null()) c.categories = ParseTextArray(row[10]);
    if (c.is_calendar() && !row[16].is_null() && !row[17].is_null()) {
      // Written by Create from the canonical text, so they parse (and a date or timestamp column
      // without them cannot be stored: migration 0015's check).
      c.calendar_lower = query::ParseCalendarValue(c.type, row[16].as<std::string>());
      c.calendar_upper = query::ParseCalendarValue(c.type, row[17].as<std::string>());
    }
    out.back().columns.push_back(std::move(c));
  }
  return out;
}

}  // namespace dpq::store
