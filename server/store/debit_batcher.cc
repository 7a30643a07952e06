#include "server/store/debit_batcher.h"

#include <algorithm>

#include "absl/status/status.h"

namespace dpq::store {

struct DebitBatcher::Waiter {
  Member member;
  bool done = false;  // member.result is final
  bool lead = false;  // this waiter leads the next group
  absl::CondVar cv;   // one per waiter: a wake-up goes to exactly the thread concerned
};

DebitBatcher& DebitBatcher::Shared() {
  static DebitBatcher* const shared = new DebitBatcher();  // never destroyed: used until exit
  return *shared;
}

DebitBatcher::Stats DebitBatcher::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

size_t DebitBatcher::Pending(const void* owner, int64_t population_id) const {
  absl::MutexLock lock(&mu_);
  auto it = queues_.find(Key(owner, population_id));
  return it == queues_.end() ? 0 : it->second.pending.size();
}

absl::Span<DebitBatcher::Member* const> DebitBatcher::Group::TakeUpTo(size_t limit) {
  if (!taken_) {
    absl::MutexLock lock(&batcher_->mu_);
    // Only the active leader removes from `pending`, and it is still at the front (it arrived on
    // an idle key, or was the front when promoted), so the group starts with the leader's debit.
    std::deque<Waiter*>& pending = queue_->pending;
    const auto n = static_cast<std::ptrdiff_t>(std::min(pending.size(), limit));
    waiters_.assign(pending.begin(), pending.begin() + n);
    pending.erase(pending.begin(), pending.begin() + n);
    taken_ = true;
    for (Waiter* w : waiters_) members_.push_back(&w->member);
  }
  return absl::MakeConstSpan(members_);
}

absl::Span<DebitBatcher::Member* const> DebitBatcher::Group::TakeWhile(
    absl::FunctionRef<bool(const Allocation&)> fits) {
  if (taken_) return absl::MakeConstSpan(members_);
  size_t n = 0;
  {
    absl::MutexLock lock(&batcher_->mu_);
    const std::deque<Waiter*>& pending = queue_->pending;
    while (n < pending.size() && n < batcher_->max_group_ && fits(pending[n]->member.allocation)) {
      ++n;
    }
  }
  // Only this leader removes from `pending`, so its first n members are still those checked.
  if (n == 0) return {};
  return TakeUpTo(n);
}

absl::StatusOr<DebitResult> DebitBatcher::Submit(const void* owner, int64_t population_id,
                                                 Allocation allocation, GroupFn commit_group) {
  Waiter self;
  self.member.allocation = std::move(allocation);
  self.member.result = absl::InternalError("the debit group ended without deciding this debit");
  const Key key(owner, population_id);
  Queue* queue;
  {
    absl::MutexLock lock(&mu_);
    queue = &queues_[key];
    queue->pending.push_back(&self);
    if (!queue->leader_active) {
      queue->leader_active = true;
      self.lead = true;
    }
    while (!self.done && !self.lead) self.cv.Wait(&mu_);
    if (self.done) return std::move(self.member.result);
  }

  // Leading. The hand-off runs in a destructor so that members are released and the next leader
  // promoted even if commit_group broke its no-throw contract: nobody may wait forever.
  Group group(this, queue);
  struct Finish {
    DebitBatcher* batcher;
    const Key& key;
    Group& group;
    const Waiter* self;
    ~Finish() {
      group.TakeLeader();  // no-op when commit_group took the group; else the leader alone
      absl::MutexLock lock(&batcher->mu_);
      const auto size = static_cast<int64_t>(group.waiters_.size());
      ++batcher->stats_.groups;
      batcher->stats_.debits += size;
      batcher->stats_.largest_group = std::max(batcher->stats_.largest_group, size);
      for (Waiter* w : group.waiters_) {
        if (w == self) continue;
        w->done = true;
        w->cv.Signal();  // it re-checks under mu_, after this critical section
      }
      if (!group.queue_->pending.empty()) {
        Waiter* next = group.queue_->pending.front();
        next->lead = true;
        next->cv.Signal();
      } else {
        batcher->queues_.erase(key);
      }
    }
  } finish{this, key, group, &self};
  commit_group(group);
  return std::move(self.member.result);
}

}  // namespace dpq::store
