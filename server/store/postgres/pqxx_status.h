// The one place where libpqxx exceptions become absl::Status. Every store method catches
// std::exception around its libpqxx calls and returns StatusFromPqxx(e, "what it was doing").
#ifndef DPQ_SERVER_STORE_POSTGRES_PQXX_STATUS_H_
#define DPQ_SERVER_STORE_POSTGRES_PQXX_STATUS_H_

#include <exception>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace dpq::store {

// Maps an exception thrown by libpqxx 6.4 (or anything else caught next to it) to a Status whose
// message starts with `context`:
//   pqxx::serialization_failure, pqxx::deadlock_detected, other pqxx::transaction_rollback
//                                     -> ABORTED (the caller may retry a bounded number of times)
//   pqxx::statement_completion_unknown, pqxx::in_doubt_error
//                                     -> INTERNAL ("commit in doubt"; never retry)
//   pqxx::broken_connection (incl. too_many_connections), SQLSTATE class 08 / 57P0x
//                                     -> UNAVAILABLE
//   pqxx::unique_violation (23505)    -> ALREADY_EXISTS
//   query_canceled (57014)            -> DEADLINE_EXCEEDED (statement_timeout)
//   other pqxx::sql_error             -> INTERNAL
//   anything else                     -> INTERNAL
// Messages carry the SQLSTATE but never row data: the server's own text is quoted only for
// connection errors and for SQLSTATE classes 42 (syntax / undefined object) and 0A (feature not
// supported), whose messages name identifiers and query tokens (queries take values only as $n
// parameters), never values from rows.
absl::Status StatusFromPqxx(const std::exception& e, absl::string_view context);

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_POSTGRES_PQXX_STATUS_H_
