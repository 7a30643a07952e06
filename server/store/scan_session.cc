#include "server/store/scan_session.h"

#include <algorithm>
#include <string>

#include <pqxx/pqxx>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace dpq::store {

namespace {

// `role` (a SET ROLE with its semicolon, or nothing), read-only transactions and no timeout.
void SetUpReadOnlySession(pqxx::connection& c, absl::string_view role) {
  {
    pqxx::nontransaction tx(c);
    tx.exec0(absl::StrCat(role, "SET default_transaction_read_only = on"));
  }
  c.set_variable("statement_timeout", "0");
}

}  // namespace

void SetUpScanSession(pqxx::connection& c) {
  SetUpReadOnlySession(c, absl::StrCat("SET ROLE ", kScanRole, "; "));
}

void SetUpShardScanSession(pqxx::connection& c) { SetUpReadOnlySession(c, ""); }

std::optional<int64_t> ScanTimeoutChange(int64_t current_ms, absl::Duration remaining) {
  if (remaining == absl::InfiniteDuration()) {
    if (current_ms == 0) return std::nullopt;
    return 0;
  }
  // Whole milliseconds, rounded up and at least 1: statement_timeout 0 would mean none.
  const int64_t wanted =
      std::max<int64_t>(1, absl::ToInt64Milliseconds(absl::Ceil(remaining, absl::Milliseconds(1))));
  const int64_t allowance = std::max<int64_t>(1000, wanted / 10);
  if (current_ms > 0 && current_ms >= wanted && current_ms - wanted <= allowance) {
    return std::nullopt;
  }
  return wanted + allowance / 2;
}

absl::Status ApplyScanDeadline(pqxx::connection& c, absl::Time deadline, absl::string_view what) {
  absl::Duration remaining = absl::InfiniteDuration();
  if (deadline != absl::InfiniteFuture()) {
    remaining = deadline - absl::Now();
    if (remaining <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError(absl::StrCat(what, ": deadline already passed"));
    }
  }
  // libpqxx's memory of the last set_variable (SetUpScanSession made one), no round trip. Text that
  // is not a plain integer (a unit, as SHOW prints "4321ms") counts as unknown and is replaced.
  int64_t current_ms = -1;
  if (!absl::SimpleAtoi(c.get_variable("statement_timeout"), &current_ms)) current_ms = -1;
  const std::optional<int64_t> change = ScanTimeoutChange(current_ms, remaining);
  if (change.has_value()) c.set_variable("statement_timeout", absl::StrCat(*change));
  return absl::OkStatus();
}

}  // namespace dpq::store
