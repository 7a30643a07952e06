// The audit hash chain: each allocation's hash covers its content and the previous row's hash, so
// altering, inserting or removing a committed row breaks every later link (a Merkle-Damgard-style
// chain; Haber & Stornetta, "How to time-stamp a digital document", J. Cryptology 1991).
#ifndef DPQ_SERVER_STORE_AUDIT_CHAIN_H_
#define DPQ_SERVER_STORE_AUDIT_CHAIN_H_

#include <string>

#include "server/store/allocation.h"

namespace dpq::store {

// The genesis "previous hash" of every dataset's chain: 32 zero bytes.
std::string GenesisHash();

// Canonical byte string of the hashed fields (every field of Allocation except created_at, prev_hash
// and hash), with doubles at 17 significant digits so the encoding is exact.
std::string CanonicalAllocation(int64_t population_id, const Allocation& a);

// SHA-256(prev_hash || CanonicalAllocation(population_id, a)).
std::string ChainHash(const std::string& prev_hash, int64_t population_id, const Allocation& a);

// The released values of a deferred allocation (its `releases` row), bound to that allocation:
// SHA-256(audit_hash || canonical content), audit_hash being the paid audit row's hash. Altering a
// release, or moving it to another audit row, breaks it.
std::string CanonicalRelease(int64_t population_id, int64_t seq, double value, double ci_lower,
                             double ci_upper, const std::string& result);
std::string ReleaseHash(const std::string& audit_hash, int64_t population_id, int64_t seq,
                        double value, double ci_lower, double ci_upper, const std::string& result);

// The admin log's chain (migration 0009): one row per admin action, linked the same way.
struct AdminAction {
  std::string admin;    // the principal that acted
  std::string action;   // e.g. "dataset.create", "grant.revoke"
  std::string target;   // what it acted on, e.g. "slid" or "alice/slid"
  std::string details;  // "key=value" pairs, e.g. "epsilon=3 delta=1e-06 accountant=basic"
};
std::string CanonicalAdminAction(int64_t seq, const AdminAction& a);
// SHA-256(prev_hash || CanonicalAdminAction(seq, a)).
std::string AdminChainHash(const std::string& prev_hash, int64_t seq, const AdminAction& a);

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_AUDIT_CHAIN_H_
