#include "server/store/admin_log.h"

#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "server/base/sha256.h"
#include "server/base/status_macros.h"

namespace dpq::store {
namespace {

std::string Bytes(const pqxx::field& f) { return pqxx::binarystring(f).str(); }

constexpr char kSelectEntries[] =
    "SELECT seq, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), admin, "
    "action, target, details, prev_hash, hash FROM admin_log ORDER BY seq";

AdminLogEntry EntryFromRow(const pqxx::row& r) {
  AdminLogEntry e;
  e.seq = r[0].as<int64_t>();
  e.created_at = r[1].as<std::string>();
  e.action = {r[2].as<std::string>(), r[3].as<std::string>(), r[4].as<std::string>(),
              r[5].as<std::string>()};
  e.prev_hash = Bytes(r[6]);
  e.hash = Bytes(r[7]);
  return e;
}

}  // namespace

void AppendAdminAction(pqxx::transaction_base& tx, const AdminAction& action) {
  tx.exec_params("SELECT pg_advisory_xact_lock($1)", kAdminLogLockKey);
  const pqxx::result head = tx.exec("SELECT seq, hash FROM admin_log ORDER BY seq DESC LIMIT 1");
  const int64_t seq = head.empty() ? 1 : head[0][0].as<int64_t>() + 1;
  const std::string prev = head.empty() ? GenesisHash() : Bytes(head[0][1]);
  tx.exec_params(
      "INSERT INTO admin_log (seq, admin, action, target, details, prev_hash, hash) "
      "VALUES ($1, $2, $3, $4, $5, $6, $7)",
      seq, action.admin, action.action, action.target, action.details, pqxx::binarystring(prev),
      pqxx::binarystring(AdminChainHash(prev, seq, action)));
}

absl::StatusOr<std::vector<AdminLogEntry>> AdminLog::List() {
  std::vector<AdminLogEntry> out;
  RETURN_IF_ERROR(db_->Run("list admin log", [&](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    for (const pqxx::row& r : tx.exec(kSelectEntries)) out.push_back(EntryFromRow(r));
    return absl::OkStatus();
  }));
  return out;
}

absl::StatusOr<AdminLog::Verification> AdminLog::Verify() {
  ASSIGN_OR_RETURN(std::vector<AdminLogEntry> entries, List());
  Verification v;
  v.entries = static_cast<int64_t>(entries.size());
  std::string prev = GenesisHash();
  for (size_t i = 0; i < entries.size(); ++i) {
    const AdminLogEntry& e = entries[i];
    const int64_t expected_seq = static_cast<int64_t>(i) + 1;
    std::string reason;
    if (e.seq != expected_seq) {
      reason = absl::StrCat("seq ", expected_seq, " is missing");
    } else if (e.prev_hash != prev) {
      reason = "prev_hash does not match the previous row's hash";
    } else if (e.hash != AdminChainHash(prev, e.seq, e.action)) {
      reason = "hash does not match the row's content";
    }
    if (!reason.empty()) {
      v.first_broken_seq = expected_seq;
      v.reason = reason;
      return v;
    }
    prev = e.hash;
  }
  v.ok = true;
  return v;
}

}  // namespace dpq::store
