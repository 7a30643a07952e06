#include "server/store/one_trip_transaction.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace dpq::store {

OneTripTransaction::OneTripTransaction(pqxx::connection& c, Mode mode, absl::string_view settings)
    : conn_(c), tx_(c), uncaught_at_start_(std::uncaught_exceptions()) {
  std::string begin = mode == Mode::kReadOnly ? "BEGIN READ ONLY" : "BEGIN";
  if (!settings.empty()) absl::StrAppend(&begin, "; ", settings);
  open_ = true;  // from here on a throw may leave the session inside the block: see ~
  tx_.exec0(begin);
}

OneTripTransaction::~OneTripTransaction() {
  if (!open_ || std::uncaught_exceptions() > uncaught_at_start_) return;
  try {
    tx_.exec0("ROLLBACK");
  } catch (...) {
    // The session's state is unknown: closed, Database::Release drops it instead of pooling it.
    try {
      conn_.disconnect();
    } catch (...) {
    }
  }
}

void OneTripTransaction::Commit() {
  open_ = false;  // a failed COMMIT ends the block too (or leaves it in doubt: the caller sees a throw)
  // No statement of the block can have failed unnoticed (each failure throws, and the throw skips
  // this call), so COMMIT never meets an aborted block (which PostgreSQL would answer with ROLLBACK).
  try {
    tx_.exec0("COMMIT");
  } catch (const pqxx::broken_connection& e) {
    // As libpqxx's own commit does: the COMMIT may or may not have taken effect, and a caller must
    // not read that as "nothing was written" (pqxx_status.h maps this to INTERNAL, never retried).
    throw pqxx::in_doubt_error(std::string("connection lost during COMMIT: ") + e.what());
  }
}

}  // namespace dpq::store
