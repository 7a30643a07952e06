#include "server/store/one_trip_transaction.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace dpq::store {

OneTripTransaction::OneTripTransaction(pqxx::connection& c, Mode mode, absl::string_view settings)
    : conn_(c), tx_(c), mode_(mode), uncaught_at_start_(std::uncaught_exceptions()) {
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
  open_ =
      false;  // a failed COMMIT ends the block too (or leaves it in doubt: the caller sees a throw)
  // No statement of the block can have failed unnoticed (each failure throws, and the throw skips
  // this call), so COMMIT never meets an aborted block (which PostgreSQL would answer with ROLLBACK).
  // A READ ONLY block wrote nothing, so a COMMIT that fails leaves nothing in doubt: the plain
  // error (a broken connection: UNAVAILABLE) is the truth. Reported as in doubt, a lookup failed
  // as "commit in doubt", which told the analyst something false.
  if (mode_ == Mode::kReadOnly) {
    tx_.exec0("COMMIT");
    return;
  }
  try {
    tx_.exec0("COMMIT");
  } catch (const pqxx::broken_connection& e) {
    // As libpqxx's own commit does: the COMMIT may or may not have taken effect, and a caller must
    // not read that as "nothing was written" (pqxx_status.h: UNAVAILABLE, kCommitInDoubt).
    throw pqxx::in_doubt_error(std::string("connection lost during COMMIT: ") + e.what());
  } catch (const pqxx::sql_error& e) {
    // The backend terminated (pg_terminate_backend, a fast shutdown) while it processed the
    // COMMIT: it may have committed first. Any other error of the COMMIT rolled it back.
    const std::string& state = e.sqlstate();
    if (state.rfind("08", 0) == 0 || state == "57P01" || state == "57P02") {
      throw pqxx::in_doubt_error(std::string("session ended during COMMIT: ") + e.what());
    }
    throw;
  }
}

}  // namespace dpq::store
