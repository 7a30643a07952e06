#include "server/store/admin_log.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "absl/types/optional.h"
#include "server/base/sha256.h"
#include "server/base/status_macros.h"

namespace dpq::store {
namespace {

std::string Bytes(const pqxx::field& f) { return pqxx::binarystring(f).str(); }

constexpr char kSelectFrom[] =
    "SELECT seq, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), admin, "
    "action, target, details, prev_hash, hash FROM admin_log";

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

// Why `e` does not extend the chain that ends at (seq, hash), or "".
std::string BrokenLink(const AdminLogEntry& e, int64_t seq, const std::string& hash) {
  if (e.seq != seq + 1) return absl::StrCat("seq ", seq + 1, " is missing");
  if (e.prev_hash != hash) return "prev_hash does not match the previous row's hash";
  if (e.hash != AdminChainHash(hash, e.seq, e.action))
    return "hash does not match the row's content";
  return "";
}

struct AdminCheckpoint {
  int64_t seq = 0;
  std::string hash, verified_at;
};

absl::optional<AdminCheckpoint> ReadAdminCheckpoint(pqxx::transaction_base& tx) {
  const pqxx::result r = tx.exec(
      "SELECT seq, hash, to_char(verified_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') "
      "FROM admin_log_verified");
  if (r.empty()) return absl::nullopt;
  return AdminCheckpoint{r[0][0].as<int64_t>(), Bytes(r[0][1]), r[0][2].as<std::string>()};
}

// Why the checkpoint cannot be continued from, or "": its row must still be there with the hash
// it was verified with, and hash to it.
std::string AdminCheckpointProblem(pqxx::transaction_base& tx, const AdminCheckpoint& cp,
                                   int64_t* rows_read) {
  const pqxx::result r = tx.exec_params(absl::StrCat(kSelectFrom, " WHERE seq = $1"), cp.seq);
  if (r.empty()) {
    return absl::StrCat("row ", cp.seq, ", verified at ", cp.verified_at,
                        ", is gone: rows were removed");
  }
  ++*rows_read;
  const AdminLogEntry e = EntryFromRow(r[0]);
  if (e.hash != cp.hash || AdminChainHash(e.prev_hash, e.seq, e.action) != e.hash) {
    return absl::StrCat("row ", cp.seq, " differs from the row verified at ", cp.verified_at,
                        ": the log was rewritten up to it");
  }
  return "";
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
    for (const pqxx::row& r : tx.exec(absl::StrCat(kSelectFrom, " ORDER BY seq"))) {
      out.push_back(EntryFromRow(r));
    }
    return absl::OkStatus();
  }));
  return out;
}

absl::StatusOr<AdminLog::Verification> AdminLog::Verify(bool full) {
  Verification v;
  int64_t last_seq = 0;
  std::string last_hash;
  RETURN_IF_ERROR(db_->Run("verify admin log", [&](pqxx::connection& c) -> absl::Status {
    v = Verification();
    pqxx::transaction<pqxx::isolation_level::repeatable_read, pqxx::readwrite_policy::read_only> tx(
        c);
    const absl::optional<AdminCheckpoint> cp = ReadAdminCheckpoint(tx);
    std::string problem;
    last_seq = 0;
    last_hash = GenesisHash();
    if (cp.has_value()) {
      v.checkpoint_seq = cp->seq;
      if (!full) {
        problem = AdminCheckpointProblem(tx, *cp, &v.rows_read);
        if (problem.empty()) std::tie(last_seq, last_hash) = std::tie(cp->seq, cp->hash);
      }
    }
    v.full = last_seq == 0;
    // Pages in key order, never sorted (as in audit_verify.cc: stale statistics plan a scan of
    // the rest of the log and a sort per page).
    tx.exec0("SET LOCAL enable_sort = off");
    for (bool more = true; more && v.first_broken_seq == 0;) {
      const pqxx::result page =
          tx.exec_params(absl::StrCat(kSelectFrom, " WHERE seq > $1 ORDER BY seq LIMIT $2"),
                         last_seq, kVerifyPageRows);
      more = static_cast<int64_t>(page.size()) == kVerifyPageRows;
      for (const pqxx::row& r : page) {
        const AdminLogEntry e = EntryFromRow(r);
        ++v.rows_read;
        // A walk from genesis passes the checkpoint: the row must be the one verified then.
        if (cp.has_value() && e.seq == cp->seq && e.hash != cp->hash && problem.empty()) {
          problem = absl::StrCat("row ", e.seq, " differs from the row verified at ",
                                 cp->verified_at, ": the log was rewritten up to it");
        }
        if (std::string broken = BrokenLink(e, last_seq, last_hash); !broken.empty()) {
          v.first_broken_seq = last_seq + 1;
          v.reason = std::move(broken);
          break;
        }
        last_seq = e.seq;
        last_hash = e.hash;
      }
    }
    if (v.first_broken_seq == 0 && cp.has_value() && problem.empty() && last_seq < cp->seq) {
      problem = absl::StrCat("the log ends at row ", last_seq, ", before row ", cp->seq,
                             " verified at ", cp->verified_at, ": rows were removed");
    }
    if (v.first_broken_seq == 0 && !problem.empty()) {
      v.first_broken_seq = std::min(cp->seq, last_seq + 1);
      v.reason = std::move(problem);
    }
    tx.commit();
    return absl::OkStatus();
  }));
  v.entries = last_seq;
  v.ok = v.reason.empty();
  if (v.ok && last_seq > 0) {
    RETURN_IF_ERROR(db_->Run("record admin log checkpoint", [&](pqxx::connection& c) {
      pqxx::work tx(c);
      // Only forward: a concurrent verification may have moved it further already.
      tx.exec_params0(
          "INSERT INTO admin_log_verified AS v (seq, hash, verified_at, full_verified_at) "
          "VALUES ($1, decode($2, 'hex'), now(), CASE WHEN $3 THEN now() END) "
          "ON CONFLICT (id) DO UPDATE SET seq = EXCLUDED.seq, hash = EXCLUDED.hash, verified_at = now(), "
          "full_verified_at = coalesce(EXCLUDED.full_verified_at, v.full_verified_at) "
          "WHERE v.seq < EXCLUDED.seq OR (v.seq = EXCLUDED.seq AND v.hash = EXCLUDED.hash)",
          last_seq, ToHex(last_hash), v.full);
      tx.commit();
      return absl::OkStatus();
    }));
  }
  return v;
}

}  // namespace dpq::store
