// A transaction whose BEGIN and its SET LOCAL settings travel in one round trip
// (for the small-query benchmark scenario p3, bench/README.md).
//
// libpqxx 6.4's transactions send "BEGIN; SET TRANSACTION ..." by themselves, so a SET LOCAL after it
// (the scan's role and deadline, the ledger lookups' plan_cache_mode) was a round trip of its own on
// every query. This sends "BEGIN <mode>; <settings>" as one simple query through a
// pqxx::nontransaction and ends the transaction with COMMIT or, on any other way out, ROLLBACK.
// Statements run through tx() (a pqxx::transaction_base, as before). Store-internal: <pqxx> here.
#ifndef DPQ_SERVER_STORE_ONE_TRIP_TRANSACTION_H_
#define DPQ_SERVER_STORE_ONE_TRIP_TRANSACTION_H_

#include <exception>
#include <string>

#include <pqxx/pqxx>

#include "absl/strings/string_view.h"

namespace dpq::store {

class OneTripTransaction {
 public:
  enum class Mode { kReadOnly, kReadWrite };

  // Sends "BEGIN [READ ONLY]; <settings>" (settings: SET LOCAL statements built by the caller from
  // constants and integers it computed, never request text; may be empty). Throws as libpqxx does;
  // Database::Run then closes the connection, so no transaction outlives a throw.
  OneTripTransaction(pqxx::connection& c, Mode mode, absl::string_view settings);
  OneTripTransaction(const OneTripTransaction&) = delete;
  OneTripTransaction& operator=(const OneTripTransaction&) = delete;
  // ROLLBACK unless committed. When an exception is unwinding, nothing is sent (Database::Run closes
  // the connection anyway); if the ROLLBACK itself fails the connection is closed, so it is never
  // pooled inside a transaction.
  ~OneTripTransaction();

  pqxx::transaction_base& tx() { return tx_; }
  // COMMIT; throws as libpqxx does (a failed COMMIT is never reported as success). A read-write
  // block whose session broke during the COMMIT throws pqxx::in_doubt_error; a read-only one the
  // error itself (it wrote nothing, so nothing is in doubt).
  void Commit();

 private:
  pqxx::connection& conn_;
  pqxx::nontransaction tx_;
  const Mode mode_;
  const int uncaught_at_start_;
  bool open_ = false;
};

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_ONE_TRIP_TRANSACTION_H_
