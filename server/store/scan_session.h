// The sessions aggregate scans run on, and how a scan's deadline reaches them without a round trip
// of its own (the small-query path, benchmark scenario p3, bench/README.md).
//
// A scan pool's sessions take the scan role and read-only mode once, when they open
// (SetUpScanSession, Database::OpenDeferred's session_setup). A scan is then one
// autocommitted, parameterised statement: before, every scan paid "BEGIN READ ONLY; SET LOCAL ROLE
// ...; SET LOCAL statement_timeout" and a ROLLBACK, two round trips of three.
//
// The deadline becomes the session's statement_timeout, changed only when the one the session
// holds does not serve the scan (ScanTimeoutChange): a client that sends every call with the same
// deadline (60 s from the CLI, the Python client and the load tool) pays for the SET once per
// session. No <pqxx> here (database.h declares pqxx::connection): the engine sees kScanRole.
#ifndef DPQ_SERVER_STORE_SCAN_SESSION_H_
#define DPQ_SERVER_STORE_SCAN_SESSION_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "server/store/database.h"

namespace dpq::store {

// The database role every scan runs under (migration 0010; docs/database-roles.md): SELECT on the
// dataset tables in dpq_data, nothing else.
inline constexpr char kScanRole[] = "dpq_scan";

// What every scan session holds from its start: the scan role, so even a flaw in the scan SQL
// could read nothing but dataset tables; and read-only transactions, so it could write nothing.
// Each scan is one statement (the extended protocol carries exactly one), so no SET can precede
// its SELECT. Then statement_timeout 0 through libpqxx, which so remembers it (ApplyScanDeadline):
// two round trips, once in a session's life.
void SetUpScanSession(pqxx::connection& c);
// The same for a shard's scan sessions (shard_fan_out.h), without the role: a shard has no
// dpq_scan, and its login reads the shard's tables only. Read-only, because that login may own
// them.
void SetUpShardScanSession(pqxx::connection& c);

// The statement_timeout (ms; 0: none) a scan session must take so a scan with `remaining` time to
// its deadline is neither cut short nor left running long after it, or nullopt when `current_ms`
// (what the session holds; 0: none, negative: unknown) already does.
//   - Never cut short: a held timeout below `remaining` is raised.
//   - Not left running: a held timeout may exceed `remaining` by the allowance max(1 s,
//     remaining / 10), and is lowered beyond it. A scan may so outlive its client's deadline by
//     that allowance at most; its result then goes nowhere, but it was paid for already.
//   - A new timeout is `remaining` plus half the allowance, so the next calls with the same
//     deadline, whose remaining time differs by the few milliseconds before their scan, find it
//     serving.
std::optional<int64_t> ScanTimeoutChange(int64_t current_ms, absl::Duration remaining);

// Sets `c`'s statement_timeout for a scan that must end by `deadline` (InfiniteFuture: none), when
// the session's does not serve (above). DEADLINE_EXCEEDED naming `what` when the deadline has
// passed. Call it with no transaction open on `c`: the value is a session setting, and libpqxx
// remembers it (connection_base::set_variable), so reading it back costs no round trip.
absl::Status ApplyScanDeadline(pqxx::connection& c, absl::Time deadline, absl::string_view what);

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_SCAN_SESSION_H_
