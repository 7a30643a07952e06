// A statement's FROM ... JOIN ...: the tables it names (JoinTablesOf, for the engine to load), and,
// once their schemas are known, the join request, the joined schema (query/join_source.h, which
// checks the privacy rules) and the statement rewritten onto that schema (ResolveJoin): every
// column reference, qualified (`p.age`) or unqualified when it names one column among the joined
// tables, becomes the joined schema's column (`p__age`), so the analyser (analyzer.h) compiles it
// as a statement on one dataset. A USING column, and every private table's privacy unit, is one
// column. Pure: no data, no I/O.
//
// Refusals are INVALID_ARGUMENT / UNIMPLEMENTED "sql: line L, column C: ..." at the offending
// clause, before anything is planned or charged.
#ifndef DPQ_SERVER_SQL_JOIN_RESOLUTION_H_
#define DPQ_SERVER_SQL_JOIN_RESOLUTION_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "server/query/dataset_schema.h"
#include "server/query/join_source.h"
#include "server/sql/analyzer.h"
#include "server/sql/ast.h"

namespace dpq::sql {

// The tables `statement` reads, in FROM order, each with its alias (its name when none is
// written); the conditions are left empty. Null when the statement reads one table.
std::shared_ptr<query::JoinRequest> JoinTablesOf(const Statement& statement);

struct ResolvedJoin {
  std::shared_ptr<const query::JoinRequest> request;
  query::DatasetSchema schema;  // the joined schema (query::ResolveJoin)
  Statement statement;          // rewritten onto `schema`
};

// `tables` are the schemas of JoinTablesOf(statement)'s tables, in order.
absl::StatusOr<ResolvedJoin> ResolveJoin(const Statement& statement,
                                         const std::vector<query::DatasetSchema>& tables);

// Analyze(resolved.statement, resolved.schema) (analyzer.h), its refusals naming columns as the
// statement writes them (`p.age`, never the joined schema's `p__age`: JoinSource::WrittenNames).
absl::StatusOr<CompiledStatement> AnalyzeJoin(const ResolvedJoin& resolved);

}  // namespace dpq::sql

#endif  // DPQ_SERVER_SQL_JOIN_RESOLUTION_H_
