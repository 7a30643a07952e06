// A join of datasets read as one table (DP SQL's FROM a JOIN b ...): what the analyst asked for
// (JoinRequest: tables by name, equality conditions), and what the engine resolved it to against
// the stored schemas (a joined DatasetSchema whose `join` is the JoinSource the store renders as
// the scan's source). Pure: no SQL text, no I/O.
//
// Privacy (docs/threat-model.md "Joins", docs/decisions.md "Joins in DP SQL"): every private table
// belongs to one population and two private tables join only on equal privacy units, so every
// joined row still belongs to exactly one person, the unit of the first private table; a public
// table (declared non-personal) joins on any one equality. Contribution bounding then applies to
// the joined rows per unit, so join multiplicity never raises a person's influence, and the stored
// row rank (a fact of one table's rows) is never used.
#ifndef DPQ_SERVER_QUERY_JOIN_SOURCE_H_
#define DPQ_SERVER_QUERY_JOIN_SOURCE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dpq::query {

struct DatasetSchema;

// One `left.column = right.column` condition: tables are indexes into the FROM list.
struct JoinEquality {
  int left_table = 0;
  std::string left_column;
  int right_table = 0;
  std::string right_column;
};

// As the analyst wrote it: tables[0] is FROM's table, tables[i] (i >= 1) is joined by on[i - 1],
// whose right_table is i and whose left_table is an earlier one.
struct JoinRequest {
  struct Table {
    std::string dataset;
    std::string alias;  // the name qualified columns use (the dataset's name when none written)
  };
  std::vector<Table> tables;
  std::vector<JoinEquality> on;

  // Canonical text (names and conditions only), to compare the joins of a batch's parts.
  std::string CanonicalText() const;
};

// A joined table as resolved: its stored identity and version.
struct JoinedTable {
  int64_t dataset_id = 0;
  int64_t version = 0;
  std::string name;
  std::string alias;
  bool is_public = false;
};

// A column of the joined schema: `name` (JoinedColumnName) reads `column` of tables[table].
struct JoinedColumn {
  std::string name;
  int table = 0;
  std::string column;
};

struct JoinSource {
  std::vector<JoinedTable> tables;
  std::vector<JoinEquality> on;
  std::vector<JoinedColumn> columns;

  // Every table's id and version and every condition: the fingerprint's join part, so that a
  // reload of any joined table changes the question's identity (and so the result cache's key).
  std::string CanonicalText() const;

  // `text` with every joined column name (`p__age`, a whole identifier) written as the analyst
  // writes it (`p.age`): refusals of the analyzer and planner, which only know the joined schema,
  // then name what the statement names.
  std::string WrittenNames(absl::string_view text) const;
  // `status` with its message passed through WrittenNames (the code and payloads kept).
  absl::Status WithWrittenNames(const absl::Status& status) const;
};

// The joined schema's name of `column` of the table called `alias`: "alias__column".
std::string JoinedColumnName(const std::string& alias, const std::string& column);

// Where ResolveJoin refused: the table (index into JoinRequest::tables) whose join, or whose
// population, broke a rule; -1 for a rule of the whole statement.
struct JoinRefusal {
  int table = -1;
};

// The joined schema of `request` over `schemas` (schemas[i] is request.tables[i]'s). Its columns
// are every table's columns under JoinedColumnName with their declared types, bounds and
// categories; privacy_unit is the first private table's unit; id, name, version, population and
// budget settings are that table's (the ledger charged is the population's); has_row_rank is
// false; `join` holds the JoinSource. INVALID_ARGUMENT saying which rule broke (and `refusal`,
// when given, where): tables of different populations; a join of two private tables other than
// on their privacy units; unit or key types that differ; only public tables; a duplicated alias;
// two joined column names that collide.
absl::StatusOr<DatasetSchema> ResolveJoin(const JoinRequest& request,
                                          const std::vector<DatasetSchema>& schemas,
                                          JoinRefusal* refusal = nullptr);

}  // namespace dpq::query

#endif  // DPQ_SERVER_QUERY_JOIN_SOURCE_H_
