// Group commit of debits (hot-row throughput): concurrent debits of one dataset queue up,
// and one caller at a time, the leader, takes every pending debit of that dataset (up to a cap) and
// decides and writes them in ONE transaction, so a hot dataset pays one WAL flush and one set of
// round trips per group instead of per debit. This file holds only the queueing (who leads, who
// waits, hand-off); the transaction itself is BudgetLedger's (budget_ledger.cc). No SQL here.
//
// Protocol, per key (owner, dataset id):
//   - Submit() appends the caller to the key's FIFO queue. If no leader is active, the caller
//     becomes the leader at once: a lone debit never waits for a timer or for other debits.
//   - Otherwise it sleeps on its own condition variable (no spinning) until either its result is
//     set (done) or it is promoted to leader.
//   - A leader is always at the front of the queue. It runs `commit_group` outside the lock, which
//     takes the group with Group::Take() as late as it can (BudgetLedger takes it once it holds
//     the ledger row lock, so debits that arrive while the leader connects and locks still join):
//     Take() removes the first min(pending, max_group) members, the leader's own debit first.
//     A leader that fails before taking its group takes its own debit alone (TakeLeader), so the
//     others are not failed untried. Afterwards, under the lock, the leader marks every member
//     done (each with its own result) and, if more debits queued meanwhile, promotes the new
//     front to leader; otherwise the key's entry is removed.
//   Invariants: pending non-empty => a leader is active (or promoted and about to run), so no
//   member waits forever; each leader runs exactly one group (its own debit is in it), so a
//   caller's latency is bounded by the groups ahead of it in FIFO order.
// The batching only decides who writes when; correctness (exact budget, one audit row per debit,
// replays) rests on the transaction's row locks, as without batching: two batchers over the same
// database (two processes, or two Database objects) still serialise on the ledger row.
#ifndef DPQ_SERVER_STORE_DEBIT_BATCHER_H_
#define DPQ_SERVER_STORE_DEBIT_BATCHER_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "server/store/allocation.h"
#include "server/store/budget_ledger.h"

namespace dpq::store {

class DebitBatcher {
 private:
  struct Waiter;
  struct Queue;

 public:
  static constexpr size_t kMaxGroup = 256;

  // One queued debit. `commit_group` must set `result` of every member it takes; a member left
  // unset gets INTERNAL.
  struct Member {
    Allocation allocation;  // as submitted
    absl::StatusOr<DebitResult> result;
  };
  // The leader's handle on its group.
  class Group {
   public:
    // Removes the group from the queue on the first call: the debits of the key pending now, in
    // arrival order, at most max_group, the leader's own first. Later calls return the same
    // members (for a transaction that is retried). Never empty.
    absl::Span<Member* const> Take() { return TakeUpTo(batcher_->max_group_); }
    // Takes the leader's own debit alone (the same if already taken): for a leader that failed
    // before it could form its group, so that the others wait for the next leader instead of
    // failing untried.
    absl::Span<Member* const> TakeLeader() { return TakeUpTo(1); }
    // Takes the longest run of pending debits, from the leader's own, that `fits` accepts (at most
    // max_group; called under the batcher's lock, so it must be quick and not call back). Takes
    // nothing, and returns an empty span, when the leader's own does not fit: Take() may then
    // still form the group later. Once taken, returns the taken members, as Take() does.
    absl::Span<Member* const> TakeWhile(absl::FunctionRef<bool(const Allocation&)> fits);
    bool taken() const { return taken_; }

   private:
    friend class DebitBatcher;
    Group(DebitBatcher* batcher, Queue* queue) : batcher_(batcher), queue_(queue) {}
    absl::Span<Member* const> TakeUpTo(size_t limit);
    DebitBatcher* const batcher_;
    Queue* const queue_;
    bool taken_ = false;
    std::vector<Waiter*> waiters_;
    std::vector<Member*> members_;
  };
  // Decides and writes one group: calls group.Take() (or TakeLeader(); if it calls neither, the
  // group is the leader alone, with INTERNAL) and sets the members' results, in arrival order.
  // Called by the leader with no lock held; must not throw.
  using GroupFn = absl::FunctionRef<void(Group& group)>;

  // The process-wide batcher used by every BudgetLedger (ledgers built over one Database share
  // its queues; keys include the Database, so distinct databases never share a group).
  static DebitBatcher& Shared();

  explicit DebitBatcher(size_t max_group = kMaxGroup) : max_group_(max_group < 1 ? 1 : max_group) {}
  DebitBatcher(const DebitBatcher&) = delete;
  DebitBatcher& operator=(const DebitBatcher&) = delete;

  // Queues `allocation` for (owner, population_id) and returns its result once the group containing
  // it has been decided (and, for OK results, committed) by `commit_group` (see the protocol above).
  absl::StatusOr<DebitResult> Submit(const void* owner, int64_t population_id,
                                     Allocation allocation, GroupFn commit_group);

  // Counters since construction, for tests and benchmarks.
  struct Stats {
    int64_t groups = 0;  // commit_group calls
    int64_t debits = 0;  // members over all groups
    int64_t largest_group = 0;
  };
  Stats stats() const;
  // Debits of (owner, population_id) queued and not yet taken into a group (tests wait on it).
  size_t Pending(const void* owner, int64_t population_id) const;

 private:
  struct Queue {
    std::deque<Waiter*> pending;  // arrival order; a taken group is no longer in it
    bool leader_active = false;
  };
  using Key = std::pair<const void*, int64_t>;

  const size_t max_group_;
  mutable absl::Mutex mu_;
  std::map<Key, Queue> queues_ ABSL_GUARDED_BY(mu_);  // node-based: a Queue stays put while used
  Stats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_DEBIT_BATCHER_H_
