// The admin log (migration 0009): every admin action, append-only and hash-chained like the audit
// trail (audit_chain.h), written in the same transaction as the action it records.
#ifndef DPQ_SERVER_STORE_ADMIN_LOG_H_
#define DPQ_SERVER_STORE_ADMIN_LOG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/store/audit_chain.h"
#include "server/store/database.h"

namespace pqxx {
class transaction_base;
}  // namespace pqxx

namespace dpq::store {

struct AdminLogEntry {
  int64_t seq = 0;
  std::string created_at;  // RFC 3339 UTC, microseconds
  AdminAction action;
  std::string prev_hash, hash;
};

class AdminLog {
 public:
  explicit AdminLog(Database* db) : db_(db) {}

  // Oldest first.
  absl::StatusOr<std::vector<AdminLogEntry>> List();

  struct Verification {
    bool ok = false;
    int64_t entries = 0;           // rows in the log (the last seq walked)
    int64_t first_broken_seq = 0;  // 0: no broken link
    std::string reason;
    bool full = false;           // walked from genesis (else from the checkpoint)
    int64_t rows_read = 0;       // rows read (the checkpoint row included)
    int64_t checkpoint_seq = 0;  // the stored checkpoint found (0: none)
  };
  // Walks the chain in pages of kVerifyPageRows rows inside one repeatable-read snapshot, keeping
  // only the last row's seq and hash: seq 1..n without gaps, each prev_hash the previous row's hash
  // (the first the genesis hash), each hash AdminChainHash of the row's content.
  // `full` false: starts at the checkpoint (admin_log_verified), which must still hold the hash it
  // was verified with (else the run goes on from genesis and fails: the log was rewritten or cut).
  // A run that finds nothing wrong moves the checkpoint to the last row.
  absl::StatusOr<Verification> Verify(bool full = true);
  static constexpr int64_t kVerifyPageRows = 10000;

 private:
  Database* db_;
};

// Appends `action` inside the caller's transaction (store code only). Serialised by a
// transaction-scoped advisory lock, so concurrent admin actions get consecutive seqs.
void AppendAdminAction(pqxx::transaction_base& tx, const AdminAction& action);

// Key of that lock ("dpq_admn" in ASCII).
inline constexpr long long kAdminLogLockKey = 0x6470715f61646d6eLL;

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_ADMIN_LOG_H_
