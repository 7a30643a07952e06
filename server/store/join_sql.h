// The source a joined scan reads (query/join_source.h): the joined tables as one subquery whose
// columns carry the joined schema's names, so the scan statement (scan_sql.h) reads it exactly as
// it reads one dataset's table. Pure: builds a string from the stored schema's identifiers only
// (quoted by the caller's `quote_name`), no values.
//
// Totality (docs/threat-model.md): the join compares columns of one declared type with `=`, which
// raises no error for any stored value (NaN = NaN is true in PostgreSQL, NULL never matches), and
// no value is computed here: clamping happens in the scan that reads this source.
#ifndef DPQ_SERVER_STORE_JOIN_SQL_H_
#define DPQ_SERVER_STORE_JOIN_SQL_H_

#include <functional>
#include <string>

#include "server/query/join_source.h"

namespace dpq::store {

// `(SELECT t0."age" AS "p__age", ... FROM dpq_data.ds_1 t0 JOIN dpq_data.ds_2 t1 ON t1."u" =
// t0."u" ...) joined`: internal table names t0, t1, ... by position, never the analyst's aliases.
std::string JoinedSourceSql(const query::JoinSource& join,
                            const std::function<std::string(const std::string&)>& quote_name);

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_JOIN_SQL_H_
