#include "server/store/one_trip_transaction.h"

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
  tx_.exec0("COMMIT");
}

}  // namespace dpq::store
