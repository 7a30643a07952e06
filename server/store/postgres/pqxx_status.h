// The one place where libpqxx exceptions become absl::Status. Every store method catches
// std::exception around its libpqxx calls and returns StatusFromPqxx(e, "what it was doing").
#ifndef DPQ_SERVER_STORE_POSTGRES_PQXX_STATUS_H_
#define DPQ_SERVER_STORE_POSTGRES_PQXX_STATUS_H_

#include <exception>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace dpq::store {

// Maps an exception thrown by libpqxx 6.4 (or anything else caught next to it) to a Status whose
// message starts with `context`, marked with its DatabaseFailure class (server/base/
// database_failure.h). Every failure after which a retry (with the same request id) is safe is
// UNAVAILABLE; INTERNAL is left for what only a bug explains:
//   pqxx::broken_connection (incl. too_many_connections), SQLSTATE class 08, 57P01 (terminated by
//   an administrator, a fast shutdown), 57P02 (crash shutdown), 57P03 (starting up or shutting
//   down), class 53 (insufficient resources: disk full, out of memory, too many connections)
//                                     -> UNAVAILABLE, kUnavailable
//   pqxx::in_doubt_error, pqxx::statement_completion_unknown (40003)
//                                     -> UNAVAILABLE, kCommitInDoubt (the COMMIT may have taken
//                                        effect: only a retry with the same request id resolves it)
//   pqxx::serialization_failure (40001), pqxx::deadlock_detected (40P01), 40000
//                                     -> UNAVAILABLE, kConflict (Database::Run retries these a
//                                        bounded number of times first)
//   pqxx::unique_violation (23505)    -> ALREADY_EXISTS, kOther
//   query_canceled (57014)            -> DEADLINE_EXCEEDED, kOther (statement_timeout)
//   other pqxx::sql_error, any other exception
//                                     -> INTERNAL, kOther
// Messages carry the SQLSTATE but never row data: the server's own text is quoted only for
// connection errors and for SQLSTATE classes 42 (syntax / undefined object) and 0A (feature not
// supported), whose messages name identifiers and query tokens (queries take values only as $n
// parameters), never values from rows. Connection errors name the server's host and port: that is
// why analysts never see these messages (api/status_mapping.h), only dpqd's log and admins do.
absl::Status StatusFromPqxx(const std::exception& e, absl::string_view context);

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_POSTGRES_PQXX_STATUS_H_
