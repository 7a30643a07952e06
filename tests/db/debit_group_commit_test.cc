// Group commit of debits (server/store/debit_batcher.h, BudgetLedger::Debit): many concurrent
// debits of one dataset are decided and written in shared transactions, and the ledger must behave
// exactly as if they had run one by one: never over budget or cap, one audit row per OK, a valid
// chain whose sums (and accountant state) match the ledger, replays charged once.
#include "server/store/debit_batcher.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/dp/accounting/privacy_event.h"
#include "server/query/privacy_units.h"
#include "server/store/audit_chain.h"
#include "server/store/budget_ledger.h"
#include "server/store/principal_store.h"
#include "tests/db/store_test_env.h"
#include "tests/support/status_matchers.h"

namespace dpq::store {
namespace {

using ::dpq::testing::DelU;
using ::dpq::testing::EpsU;
using ::dpq::testing::IsOk;
using ::dpq::testing::StatusIs;
using ::dpq::testing::SumAllocation;
using ::testing::HasSubstr;

// Polls `done` every 10 ms for up to `seconds`; true once it holds.
bool WaitFor(const std::function<bool()>& done, double seconds = 10) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int>(seconds * 1000));
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// ---- The queue alone (no database) ----

DebitResult Echo(const Allocation& a) {
  DebitResult r;
  r.allocation = a;
  return r;
}

TEST(DebitBatcherTest, LoneDebitLeadsAtOnceAsAGroupOfOne) {
  DebitBatcher batcher;
  int calls = 0;
  Allocation a;
  a.request_id = "solo";
  auto r = batcher.Submit(&batcher, 1, a, [&](DebitBatcher::Group& g) {
    absl::Span<DebitBatcher::Member* const> group = g.Take();
    ++calls;
    ASSERT_EQ(group.size(), 1u);
    group[0]->result = Echo(group[0]->allocation);
  });
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->allocation.request_id, "solo");
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(batcher.stats().groups, 1);
  EXPECT_EQ(batcher.Pending(&batcher, 1), 0u);
}

// While a leader's group is in flight, later debits queue; the next leader takes them in arrival
// order, at most max_group at a time, and hands off until the queue is empty. Every caller gets its
// own result, and a member left without a result gets INTERNAL rather than hanging.
TEST(DebitBatcherTest, QueuedDebitsFormGroupsInArrivalOrderUpToTheCapAndHandOff) {
  DebitBatcher batcher(/*max_group=*/3);
  absl::Notification first_started, release_first;
  absl::Mutex mu;
  std::vector<std::vector<std::string>> groups;
  auto commit = [&](DebitBatcher::Group& g) {
    absl::Span<DebitBatcher::Member* const> group = g.Take();
    bool first;
    {
      absl::MutexLock lock(&mu);
      first = groups.empty();
      groups.emplace_back();
      for (auto* m : group) groups.back().push_back(m->allocation.request_id);
    }
    if (first) {
      first_started.Notify();
      release_first.WaitForNotification();
    }
    for (auto* m : group) {
      if (m->allocation.request_id != "undecided") m->result = Echo(m->allocation);
    }
  };
  auto submit = [&](const std::string& id) {
    Allocation a;
    a.request_id = id;
    auto r = batcher.Submit(&batcher, 7, a, commit);
    if (id == "undecided") {
      EXPECT_THAT(r, StatusIs(absl::StatusCode::kInternal));
    } else {
      ASSERT_THAT(r, IsOk()) << id;
      EXPECT_EQ(r->allocation.request_id, id);  // its own result, not a neighbour's
    }
  };
  std::vector<std::thread> threads;
  threads.emplace_back(submit, "lead");
  first_started.WaitForNotification();
  const std::vector<std::string> queued = {"q0", "q1", "undecided", "q3", "q4", "q5", "q6"};
  for (size_t i = 0; i < queued.size(); ++i) {
    threads.emplace_back(submit, queued[i]);
    // One at a time, so the arrival order is known.
    ASSERT_TRUE(WaitFor([&] { return batcher.Pending(&batcher, 7) == i + 1; }));
  }
  release_first.Notify();
  for (auto& t : threads) t.join();
  const std::vector<std::vector<std::string>> want = {
      {"lead"}, {"q0", "q1", "undecided"}, {"q3", "q4", "q5"}, {"q6"}};
  EXPECT_EQ(groups, want);
  EXPECT_EQ(batcher.Pending(&batcher, 7), 0u);
  EXPECT_EQ(batcher.stats().groups, 4);
  EXPECT_EQ(batcher.stats().debits, 8);
  EXPECT_EQ(batcher.stats().largest_group, 3);
}

TEST(DebitBatcherTest, DifferentDatasetsAndOwnersNeverShareAGroup) {
  DebitBatcher batcher;
  absl::Notification started, release;
  std::atomic<int> calls{0};
  auto commit = [&](DebitBatcher::Group& g) {
    absl::Span<DebitBatcher::Member* const> group = g.Take();
    EXPECT_EQ(group.size(), 1u);
    if (calls.fetch_add(1) == 0) {
      started.Notify();
      release.WaitForNotification();
    }
    for (auto* m : group) m->result = Echo(m->allocation);
  };
  int owner_a = 0, owner_b = 0;
  std::thread blocked([&] { (void)batcher.Submit(&owner_a, 1, Allocation(), commit); });
  started.WaitForNotification();
  // Not queued behind the blocked group: they lead their own keys at once.
  EXPECT_THAT(batcher.Submit(&owner_a, 2, Allocation(), commit), IsOk());
  EXPECT_THAT(batcher.Submit(&owner_b, 1, Allocation(), commit), IsOk());
  release.Notify();
  blocked.join();
  EXPECT_EQ(calls.load(), 3);
}

// A leader whose commit function fails before forming its group (it never calls Take) decides
// its own debit alone (INTERNAL here); the debits queued behind it go to the next leader.
TEST(DebitBatcherTest, ALeaderThatNeverTakesItsGroupFailsAloneAndHandsOff) {
  DebitBatcher batcher;
  absl::Notification started, release;
  std::atomic<int> calls{0};
  auto commit = [&](DebitBatcher::Group& g) {
    if (calls.fetch_add(1) == 0) {
      started.Notify();
      release.WaitForNotification();
      return;  // as if the connection broke before the ledger lock
    }
    for (auto* m : g.Take()) m->result = Echo(m->allocation);
  };
  Allocation lead;
  lead.request_id = "lead";
  absl::StatusOr<DebitResult> lead_result = absl::UnknownError("not run");
  std::thread leader([&] { lead_result = batcher.Submit(&batcher, 3, lead, commit); });
  started.WaitForNotification();
  std::vector<std::thread> queued;
  for (int i = 0; i < 3; ++i) {
    queued.emplace_back([&, i] {
      Allocation a;
      a.request_id = absl::StrCat("q", i);
      auto r = batcher.Submit(&batcher, 3, a, commit);
      ASSERT_THAT(r, IsOk());
      EXPECT_EQ(r->allocation.request_id, a.request_id);
    });
  }
  ASSERT_TRUE(WaitFor([&] { return batcher.Pending(&batcher, 3) == 4; }));  // the leader's included
  release.Notify();
  leader.join();
  for (auto& t : queued) t.join();
  EXPECT_THAT(lead_result, StatusIs(absl::StatusCode::kInternal));
  EXPECT_EQ(calls.load(), 2);  // the failed leader, then one group of the three
  EXPECT_EQ(batcher.stats().groups, 2);
  EXPECT_EQ(batcher.stats().largest_group, 3);
}

// ---- Through BudgetLedger, on PostgreSQL ----

class DebitGroupCommitTest : public ::dpq::testing::StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_OK_AND_ASSIGN(alice_, CreatePrincipal("alice"));
    ASSERT_OK_AND_ASSIGN(bob_, CreatePrincipal("bob"));
    ledger_ = std::make_unique<BudgetLedger>(db());
  }

  int64_t NewDataset(const std::string& name, double epsilon, double delta,
                     const std::string& accountant = "") {
    auto created = CreateTinyDataset(name);
    EXPECT_THAT(created, IsOk());
    if (!created.ok()) return -1;
    EXPECT_THAT(ledger_->Set(created->schema.population_id, EpsU(epsilon), DelU(delta), accountant),
                IsOk());
    return created->schema.population_id;
  }

  // SumAllocation plus what a group-commit row also carries (a result with characters that need
  // quoting in an array literal, the events, the dataset version).
  static Allocation Alloc(const Principal& who, const std::string& id, double epsilon,
                          double delta = 0, const std::string& fingerprint = "") {
    Allocation a = SumAllocation(who, id, epsilon, delta, fingerprint);
    a.dataset_version = 1;
    a.result = absl::StrCat("{\"id\":\"", id, "\",\"note\":\"a, \\\"quoted\\\" {brace} NULL\"}");
    a.events = absl::StrCat("pure:epsilon=", epsilon);
    return a;
  }

  // A Gaussian release of sigma 10 for sensitivity 1 (about eps 0.5 at delta 1e-6 by itself).
  Allocation Gaussian(const std::string& id) const {
    Allocation a = Alloc(alice_, id, 0.5, 1e-7);
    a.noise_scale = 10;
    a.sensitivity = 1;
    a.events = dp::accounting::PrivacyEvent::Gaussian(10, 1).ToSpec();
    return a;
  }

  int64_t Count(const std::string& sql) {
    const std::string n = Sql(sql);
    return n.empty() ? -1 : std::stoll(n);
  }
  int64_t AuditRows(int64_t ds) {
    return Count(absl::StrCat("SELECT count(*) FROM audit WHERE population_id = ", ds));
  }
  // Audit rows written by the same transaction share its xid (xmin): the number of distinct
  // transactions that wrote the dataset's audit rows.
  int64_t AuditTransactions(int64_t ds) {
    return Count(
        absl::StrCat("SELECT count(DISTINCT xmin::text) FROM audit WHERE population_id = ", ds));
  }

  // Holds the dataset's ledger row lock from another session for `seconds`. Returns once the holder
  // is asleep with the lock; join the thread before the test ends.
  std::thread HoldLedgerLock(int64_t ds, double seconds) {
    std::thread holder([this, ds, seconds] {
      (void)TrySql(absl::StrCat("SELECT 1 FROM ledgers WHERE population_id = ", ds,
                                " FOR UPDATE; SELECT pg_sleep(", seconds, ")"));
    });
    EXPECT_TRUE(WaitFor([&] {
      return Sql("SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND datname = "
                 "current_database()") == "1";
    })) << "the lock holder did not start";
    return holder;
  }
  // Terminates the backends of this database that wait for a lock in a statement matching
  // `pattern` (SQL LIKE, inside %...%); "t" when there was one.
  std::string KillBlocked(const std::string& pattern) {
    return Sql(absl::StrCat(
        "SELECT coalesce(bool_or(pg_terminate_backend(pid)), false) FROM pg_stat_activity "
        "WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%",
        pattern, "%'"));
  }
  // Waits until a debit of this database is blocked on the ledger row lock (a leader).
  bool WaitForBlockedLeader() {
    return WaitFor([&] {
      return Sql("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND "
                 "wait_event_type = 'Lock' AND query LIKE '%FOR UPDATE OF l%'") == "1";
    });
  }

  // One thread per entry of *results, each debiting 1 for alice with request id "m<i>" through
  // its own BudgetLedger (so they queue behind whatever leader holds the dataset's batcher).
  std::vector<std::thread> QueueDebits(int64_t ds,
                                       std::vector<absl::StatusOr<DebitResult>>* results) {
    std::vector<std::thread> threads;
    for (size_t i = 0; i < results->size(); ++i) {
      threads.emplace_back([this, ds, results, i] {
        BudgetLedger ledger(db());
        (*results)[i] = ledger.Debit(ds, Alloc(alice_, absl::StrCat("m", i), 1));
      });
    }
    return threads;
  }

  struct Outcome {
    std::string request_id;
    int64_t principal_id = 0;
    int64_t epsilon_units = 0, delta_units = 0;
    absl::StatusCode code = absl::StatusCode::kUnknown;
    std::string message;
    bool replayed = false;
    int64_t seq = 0;
    std::string hash;
    BudgetState budget;
  };
  static Outcome Record(const Allocation& a, const absl::StatusOr<DebitResult>& r) {
    Outcome o;
    o.request_id = a.request_id;
    o.principal_id = a.principal_id;
    o.epsilon_units = a.epsilon_units;
    o.delta_units = a.delta_units;
    o.code = r.status().code();
    o.message = std::string(r.status().message());
    if (r.ok()) {
      o.replayed = r->replayed;
      o.seq = r->allocation.seq;
      o.hash = r->allocation.hash;
      o.budget = r->budget;
    }
    return o;
  }

  // Every OK (not replayed) outcome has exactly one audit row, with its seq, hash and charge; every
  // refused one has none; ledger spent == the rows' sums; the chain and spent verify.
  void ExpectConsistent(int64_t ds, const std::vector<Outcome>& outcomes) {
    ASSERT_OK_AND_ASSIGN(std::vector<Allocation> rows, ledger_->ListAllocations(ds));
    std::map<std::string, const Allocation*> by_id;
    int64_t eps_sum = 0, delta_sum = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
      EXPECT_EQ(rows[i].seq, static_cast<int64_t>(i) + 1);
      EXPECT_TRUE(by_id.emplace(rows[i].request_id, &rows[i]).second)
          << "two rows for " << rows[i].request_id;
      eps_sum += rows[i].epsilon_units;
      delta_sum += rows[i].delta_units;
    }
    int fresh = 0;
    for (const Outcome& o : outcomes) {
      auto it = by_id.find(o.request_id);
      if (o.code == absl::StatusCode::kOk) {
        ASSERT_NE(it, by_id.end()) << o.request_id << " returned OK without an audit row";
        EXPECT_EQ(it->second->seq, o.seq) << o.request_id;
        EXPECT_EQ(it->second->hash, o.hash) << o.request_id;
        if (!o.replayed) {
          ++fresh;
          EXPECT_EQ(it->second->epsilon_units, o.epsilon_units);
          EXPECT_EQ(it->second->delta_units, o.delta_units);
        }
      } else if (o.code == absl::StatusCode::kResourceExhausted) {
        EXPECT_EQ(it, by_id.end()) << o.request_id << " was refused but has an audit row";
      }
    }
    EXPECT_EQ(fresh, static_cast<int>(rows.size()));
    ASSERT_OK_AND_ASSIGN(BudgetState b, ledger_->Get(ds));
    if (b.accountant == dp::accounting::AccountantKind::kBasic) {
      EXPECT_EQ(b.epsilon_spent_units, eps_sum);
      EXPECT_EQ(b.delta_spent_units, delta_sum);
    }
    EXPECT_LE(b.epsilon_spent_units, b.epsilon_total_units);
    EXPECT_LE(b.delta_spent_units, b.delta_total_units);
    ASSERT_OK_AND_ASSIGN(BudgetLedger::Verification v, ledger_->Verify(ds));
    EXPECT_TRUE(v.ok) << v.reason;
    EXPECT_EQ(v.entries, static_cast<int64_t>(rows.size()));
  }

  // Runs `threads` threads, thread t making `per_thread` debits make(t, i), until all are done.
  std::vector<Outcome> Burst(int64_t ds, int threads, int per_thread,
                             const std::function<Allocation(int, int)>& make) {
    std::vector<std::vector<Outcome>> per(threads);
    std::vector<std::thread> pool;
    std::atomic<bool> go{false};
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        BudgetLedger ledger(db());  // one per thread, as the engine's callers would
        while (!go.load()) std::this_thread::yield();
        for (int i = 0; i < per_thread; ++i) {
          const Allocation a = make(t, i);
          per[t].push_back(Record(a, ledger.Debit(ds, a)));
        }
      });
    }
    go.store(true);
    for (auto& th : pool) th.join();
    std::vector<Outcome> all;
    for (auto& v : per) all.insert(all.end(), v.begin(), v.end());
    return all;
  }

  Principal alice_, bob_;
  std::unique_ptr<BudgetLedger> ledger_;
};

TEST_F(DebitGroupCommitTest, SixtyFourThreadsSpendTheBudgetExactlyWithOneAuditRowPerOk) {
  constexpr int kThreads = 64, kPerThread = 25;
  // Demand about 1600 * 0.055 = 88 against a budget of 20: it runs out about a quarter of the way.
  const int64_t ds = NewDataset("hot", 20, 1e-5);
  const DebitBatcher::Stats before = DebitBatcher::Shared().stats();
  const std::vector<Outcome> outcomes = Burst(ds, kThreads, kPerThread, [&](int t, int i) {
    std::mt19937_64 gen(1000 * t + i);
    const double eps = std::uniform_real_distribution<double>(0.01, 0.1)(gen);
    const bool gaussian = std::bernoulli_distribution(0.25)(gen);
    return Alloc(alice_, absl::StrCat("t", t, "-", i), eps, gaussian ? 1e-7 : 0);
  });
  const DebitBatcher::Stats after = DebitBatcher::Shared().stats();
  ExpectConsistent(ds, outcomes);

  ASSERT_OK_AND_ASSIGN(BudgetState b, ledger_->Get(ds));
  int ok = 0, refused = 0;
  for (const Outcome& o : outcomes) {
    if (o.code == absl::StatusCode::kOk) {
      ++ok;
      EXPECT_FALSE(o.replayed);
      EXPECT_LE(o.budget.epsilon_spent_units, b.epsilon_total_units);
    } else {
      ASSERT_EQ(o.code, absl::StatusCode::kResourceExhausted) << o.request_id << ": " << o.message;
      ++refused;
      // Spent only grows: a refused charge does not fit the final state either (none spurious).
      EXPECT_TRUE(b.epsilon_spent_units + o.epsilon_units > b.epsilon_total_units ||
                  b.delta_spent_units + o.delta_units > b.delta_total_units)
          << o.request_id;
    }
  }
  EXPECT_GT(ok, 100);
  EXPECT_GT(refused, 500);
  // Grouping happened: fewer transactions than debits, in the batcher and in the database.
  EXPECT_LT(after.groups - before.groups, after.debits - before.debits);
  EXPECT_GT(after.largest_group, 1);
  EXPECT_LT(AuditTransactions(ds), AuditRows(ds));
}

// Debits that queue while their leader waits for the ledger lock join its group (it is formed once
// the lock is held): all are decided and committed as ONE transaction, and none is answered before
// that commit.
TEST_F(DebitGroupCommitTest, DebitsQueuedBehindABlockedLeaderCommitAsOneTransaction) {
  constexpr int kQueued = 16;
  const int64_t ds = NewDataset("queued", 100, 0);
  const DebitBatcher::Stats before = DebitBatcher::Shared().stats();
  std::thread holder = HoldLedgerLock(ds, 3);
  std::vector<absl::StatusOr<DebitResult>> results(kQueued + 1, absl::UnknownError("not run"));
  std::atomic<int> answered{0};
  std::vector<std::thread> threads;
  threads.emplace_back([&] {
    results[0] = ledger_->Debit(ds, Alloc(alice_, "leader", 1));
    answered.fetch_add(1);
  });
  ASSERT_TRUE(WaitForBlockedLeader());
  for (int i = 1; i <= kQueued; ++i) {
    threads.emplace_back([&, i] {
      BudgetLedger ledger(db());
      results[i] = ledger.Debit(ds, Alloc(alice_, absl::StrCat("q", i), 1));
      answered.fetch_add(1);
    });
  }
  // The blocked leader's own debit is still pending too: the group is taken after the lock.
  const bool all_queued =
      WaitFor([&] { return DebitBatcher::Shared().Pending(db(), ds) == kQueued + 1; });
  EXPECT_EQ(answered.load(), 0) << "an answer was released before its group committed";
  holder.join();
  for (auto& t : threads) t.join();
  ASSERT_TRUE(all_queued);
  for (const auto& r : results) ASSERT_THAT(r, IsOk());
  const DebitBatcher::Stats after = DebitBatcher::Shared().stats();
  EXPECT_EQ(after.groups - before.groups, 1);
  EXPECT_EQ(after.debits - before.debits, kQueued + 1);
  EXPECT_EQ(AuditRows(ds), kQueued + 1);
  EXPECT_EQ(AuditTransactions(ds), 1);
  EXPECT_EQ(results[0]->allocation.seq, 1);  // arrival order
  ASSERT_OK_AND_ASSIGN(BudgetState b, ledger_->Get(ds));
  EXPECT_EQ(b.epsilon_spent_units, EpsU(kQueued + 1));
  // Each member's budget is the state right after its own debit, in seq order.
  for (const auto& r : results)
    EXPECT_EQ(r->budget.epsilon_spent_units, EpsU(static_cast<double>(r->allocation.seq)));
  std::vector<Outcome> outcomes;
  for (int i = 0; i <= kQueued; ++i) {
    outcomes.push_back(
        Record(Alloc(alice_, i == 0 ? "leader" : absl::StrCat("q", i), 1), results[i]));
  }
  ExpectConsistent(ds, outcomes);
}

// One request id several times in one group: charged once. Same fingerprint as the first arrival:
// a replay of it; another fingerprint: ALREADY_EXISTS. Ids committed before the group replay or
// conflict as usual, and a refusal in the group does not stop the others.
TEST_F(DebitGroupCommitTest, DuplicateRequestIdsInsideOneGroupAreChargedOnce) {
  const int64_t ds = NewDataset("dups", 10, 0);
  ASSERT_OK_AND_ASSIGN(DebitResult old, ledger_->Debit(ds, Alloc(alice_, "old", 1)));
  std::thread holder = HoldLedgerLock(ds, 3);
  absl::StatusOr<DebitResult> lead = absl::UnknownError("not run");
  std::thread leader([&] { lead = ledger_->Debit(ds, Alloc(alice_, "leader", 1)); });
  ASSERT_TRUE(WaitForBlockedLeader());

  struct Job {
    Allocation a;
    absl::StatusOr<DebitResult> r = absl::UnknownError("not run");
  };
  std::vector<Job> jobs;
  for (int i = 0; i < 4; ++i) jobs.push_back({Alloc(alice_, "dup", 0.5, 0, "fp-A")});
  for (int i = 0; i < 3; ++i) jobs.push_back({Alloc(alice_, "dup", 0.5, 0, "fp-B")});
  jobs.push_back({Alloc(alice_, "old", 1)});                 // replay of a committed row
  jobs.push_back({Alloc(alice_, "old", 1, 0, "fp-other")});  // conflicts with it
  jobs.push_back({Alloc(alice_, "huge", 100)});              // refused, alone
  jobs.push_back({Alloc(alice_, "fine", 0.25)});
  // Quotes, backslashes, commas, braces and the word NULL survive the request-id array.
  const std::string weird = "we\"ird\\,{id} NULL";
  jobs.push_back({Alloc(alice_, weird, 0.125)});
  jobs.push_back({Alloc(alice_, weird, 0.125)});
  std::vector<std::thread> threads;
  for (Job& j : jobs) {
    threads.emplace_back([&] {
      BudgetLedger ledger(db());
      j.r = ledger.Debit(ds, j.a);
    });
  }
  EXPECT_TRUE(WaitFor([&] { return DebitBatcher::Shared().Pending(db(), ds) == jobs.size() + 1; }));
  holder.join();
  leader.join();
  for (auto& t : threads) t.join();

  ASSERT_OK_AND_ASSIGN(auto stored, ledger_->FindAllocation(ds, "dup"));
  ASSERT_TRUE(stored.has_value());
  const std::string winner = stored->fingerprint;
  int fresh = 0;
  for (const Job& j : jobs) {
    if (j.a.request_id == "dup") {
      if (j.a.fingerprint == winner) {
        ASSERT_THAT(j.r, IsOk());
        EXPECT_EQ(j.r->allocation.seq, stored->seq);
        EXPECT_EQ(j.r->allocation.hash, stored->hash);
        EXPECT_EQ(j.r->allocation.created_at, stored->created_at);
        if (!j.r->replayed) ++fresh;
      } else {
        EXPECT_THAT(j.r, StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("dup")));
      }
    }
  }
  EXPECT_EQ(fresh, 1);
  ASSERT_THAT(jobs[7].r, IsOk());
  EXPECT_TRUE(jobs[7].r->replayed);
  EXPECT_EQ(jobs[7].r->allocation.hash, old.allocation.hash);
  EXPECT_THAT(jobs[8].r, StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_THAT(jobs[9].r, StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("exhausted")));
  ASSERT_THAT(jobs[10].r, IsOk());
  EXPECT_FALSE(jobs[10].r->replayed);
  ASSERT_THAT(jobs[11].r, IsOk());
  ASSERT_THAT(jobs[12].r, IsOk());
  EXPECT_NE(jobs[11].r->replayed, jobs[12].r->replayed);
  EXPECT_EQ(jobs[11].r->allocation.seq, jobs[12].r->allocation.seq);
  ASSERT_OK_AND_ASSIGN(auto weird_row, ledger_->FindAllocation(ds, weird));
  ASSERT_TRUE(weird_row.has_value());
  EXPECT_EQ(weird_row->seq, jobs[11].r->allocation.seq);
  ASSERT_THAT(lead, IsOk());

  // old, leader, dup, fine, weird: 1 + 1 + 0.5 + 0.25 + 0.125, in two transactions (old; the rest).
  EXPECT_EQ(AuditRows(ds), 5);
  EXPECT_EQ(AuditTransactions(ds), 2);
  ASSERT_OK_AND_ASSIGN(BudgetState b, ledger_->Get(ds));
  EXPECT_EQ(b.epsilon_spent_units, EpsU(2.875));
  std::vector<Outcome> outcomes = {Record(Alloc(alice_, "old", 1), old),
                                   Record(Alloc(alice_, "leader", 1), lead)};
  for (const Job& j : jobs) outcomes.push_back(Record(j.a, j.r));
  ExpectConsistent(ds, outcomes);
}

// An id the engine marks fresh (drawn by the server, 128 random bits) is not looked up under the
// lock. Were it ever to collide with a committed row, the group fails on the audit table's unique
// key and charges nothing; it never hands back the committed row. The same id, not marked fresh,
// is looked up and replayed (the engine then refuses another analyst's replay).
TEST_F(DebitGroupCommitTest, AFreshRequestIdIsNotLookedUpAndACollisionChargesNothing) {
  const int64_t ds = NewDataset("fresh", 10, 0);
  ASSERT_OK_AND_ASSIGN(DebitResult first, ledger_->Debit(ds, Alloc(alice_, "q-same", 1)));

  Allocation fresh = Alloc(bob_, "q-same", 1);
  fresh.request_id_is_fresh = true;
  EXPECT_THAT(ledger_->Debit(ds, fresh),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("unique")));
  EXPECT_EQ(AuditRows(ds), 1);
  ASSERT_OK_AND_ASSIGN(BudgetState after_collision, ledger_->Get(ds));
  EXPECT_EQ(after_collision.epsilon_spent_units, EpsU(1));

  ASSERT_OK_AND_ASSIGN(DebitResult looked_up, ledger_->Debit(ds, Alloc(bob_, "q-same", 1)));
  EXPECT_TRUE(looked_up.replayed);
  EXPECT_EQ(looked_up.allocation.seq, first.allocation.seq);
  EXPECT_EQ(AuditRows(ds), 1);

  // A fresh id that does not collide is charged as any other.
  Allocation unique = Alloc(bob_, "q-other", 2);
  unique.request_id_is_fresh = true;
  ASSERT_OK_AND_ASSIGN(DebitResult charged, ledger_->Debit(ds, unique));
  EXPECT_FALSE(charged.replayed);
  EXPECT_EQ(charged.allocation.seq, first.allocation.seq + 1);
  ASSERT_OK_AND_ASSIGN(BudgetState b, ledger_->Get(ds));
  EXPECT_EQ(b.epsilon_spent_units, EpsU(3));
}

// Two analysts, one capped: the cap and the dataset budget both hold exactly under concurrency,
// and each grant's spent equals the sum of that analyst's audit rows.
TEST_F(DebitGroupCommitTest, CapsHoldUnderConcurrencyAlongsideTheDatasetBudget) {
  const int64_t ds = NewDataset("capped", 6, 0);
  PrincipalStore principals(db());
  ASSERT_THAT(principals.Grant("alice", "capped", EpsU(2)), IsOk());
  ASSERT_THAT(principals.Grant("bob", "capped"), IsOk());
  const std::vector<Outcome> outcomes = Burst(ds, 64, 20, [&](int t, int i) {
    std::mt19937_64 gen(77 * t + i);
    const double eps = std::uniform_real_distribution<double>(0.01, 0.1)(gen);
    return Alloc(t % 2 == 0 ? alice_ : bob_, absl::StrCat("c", t, "-", i), eps);
  });
  ExpectConsistent(ds, outcomes);

  auto grant_spent = [&](const Principal& p) {
    return Count(
        absl::StrCat("SELECT epsilon_spent_units FROM population_caps WHERE population_id = ", ds,
                     " AND principal_id = ", p.id));
  };
  auto rows_sum = [&](const Principal& p) {
    return Count(
        absl::StrCat("SELECT coalesce(sum(epsilon_units), 0) FROM audit WHERE population_id = ", ds,
                     " AND principal_id = ", p.id));
  };
  const int64_t alice_spent = grant_spent(alice_), bob_spent = grant_spent(bob_);
  EXPECT_EQ(alice_spent, rows_sum(alice_));
  EXPECT_EQ(bob_spent, rows_sum(bob_));
  EXPECT_LE(alice_spent, EpsU(2));
  ASSERT_OK_AND_ASSIGN(BudgetState b, ledger_->Get(ds));
  EXPECT_EQ(b.epsilon_spent_units, alice_spent + bob_spent);
  int cap_refusals = 0, budget_refusals = 0;
  for (const Outcome& o : outcomes) {
    if (o.code == absl::StatusCode::kOk) continue;
    ASSERT_EQ(o.code, absl::StatusCode::kResourceExhausted) << o.message;
    if (o.message.find("alice's cap") != std::string::npos) {
      ++cap_refusals;
      EXPECT_EQ(o.principal_id, alice_.id);
      EXPECT_GT(alice_spent + o.epsilon_units, EpsU(2)) << o.request_id;  // not spurious
    } else {
      EXPECT_THAT(o.message, HasSubstr("privacy budget"));
      ++budget_refusals;
      EXPECT_GT(b.epsilon_spent_units + o.epsilon_units, b.epsilon_total_units) << o.request_id;
    }
  }
  EXPECT_GT(cap_refusals, 0);
  EXPECT_GT(budget_refusals, 0);
}

// Non-basic ledgers: each debit of a group composes onto the state the previous one produced, so
// the ledger's state is exactly the composition of its rows (Verify recomputes it), and a burst
// admits exactly as many identical releases as one-by-one debits do.
TEST_F(DebitGroupCommitTest, RdpAndPldLedgersComposeExactlyUnderConcurrency) {
  for (const std::string accountant : {"rdp", "pld"}) {
    SCOPED_TRACE(accountant);
    const int64_t burst = NewDataset(absl::StrCat(accountant, "_burst"), 3, 1e-6, accountant);
    const int64_t serial = NewDataset(absl::StrCat(accountant, "_serial"), 3, 1e-6, accountant);
    int serial_ok = 0;
    for (int i = 0; i < 100; ++i) {
      auto r = ledger_->Debit(serial, Gaussian(absl::StrCat("s", i)));
      if (!r.ok()) {
        EXPECT_THAT(r, StatusIs(absl::StatusCode::kResourceExhausted));
        break;
      }
      ++serial_ok;
    }
    ASSERT_GT(serial_ok, 6);  // more than basic composition would allow

    const DebitBatcher::Stats before = DebitBatcher::Shared().stats();
    const std::vector<Outcome> outcomes =
        Burst(burst, 32, 3, [&](int t, int i) { return Gaussian(absl::StrCat("b", t, "-", i)); });
    const DebitBatcher::Stats after = DebitBatcher::Shared().stats();
    ExpectConsistent(burst, outcomes);
    int ok = 0;
    for (const Outcome& o : outcomes) {
      if (o.code == absl::StatusCode::kOk) {
        ++ok;
      } else {
        EXPECT_EQ(o.code, absl::StatusCode::kResourceExhausted) << o.message;
      }
    }
    EXPECT_EQ(ok, serial_ok);
    ASSERT_OK_AND_ASSIGN(BudgetState bb, ledger_->Get(burst));
    ASSERT_OK_AND_ASSIGN(BudgetState sb, ledger_->Get(serial));
    EXPECT_EQ(bb.epsilon_spent_units, sb.epsilon_spent_units);
    EXPECT_EQ(bb.delta_spent_units, sb.delta_spent_units);
    EXPECT_EQ(
        Sql(absl::StrCat("SELECT accountant_state FROM ledgers WHERE population_id = ", burst)),
        Sql(absl::StrCat("SELECT accountant_state FROM ledgers WHERE population_id = ", serial)));
    EXPECT_LT(after.groups - before.groups, after.debits - before.debits);
  }
}

// A leader that fails before it formed its group (killed while waiting for the ledger lock) fails
// alone: the debits queued behind it are tried by the next leader.
TEST_F(DebitGroupCommitTest, ALeaderFailingBeforeItFormsItsGroupFailsAlone) {
  constexpr int kQueued = 4;
  const int64_t ds = NewDataset("lost_leader", 100, 0);
  std::thread holder = HoldLedgerLock(ds, 3);
  absl::StatusOr<DebitResult> first = absl::UnknownError("not run");
  std::thread leader([&] { first = ledger_->Debit(ds, Alloc(alice_, "first", 1)); });
  ASSERT_TRUE(WaitForBlockedLeader());
  std::vector<absl::StatusOr<DebitResult>> queued(kQueued, absl::UnknownError("not run"));
  std::vector<std::thread> threads = QueueDebits(ds, &queued);
  ASSERT_TRUE(WaitFor([&] { return DebitBatcher::Shared().Pending(db(), ds) == kQueued + 1; }));
  EXPECT_EQ(KillBlocked("FOR UPDATE OF l"), "t");
  leader.join();
  EXPECT_THAT(first, StatusIs(absl::StatusCode::kUnavailable));
  for (auto& t : threads) t.join();  // the next leader waits for the holder, then commits them
  holder.join();
  for (const auto& r : queued) EXPECT_THAT(r, IsOk());
  EXPECT_EQ(AuditRows(ds), kQueued);
  EXPECT_EQ(AuditTransactions(ds), 1);
  ASSERT_OK_AND_ASSIGN(BudgetLedger::Verification v, ledger_->Verify(ds));
  EXPECT_TRUE(v.ok) << v.reason;
}

// A group whose transaction fails after the group was formed (here: killed while waiting for a
// grant row lock) gives that error to every member and writes nothing; the same request ids then
// succeed, each charged once. The leader's own grant row is locked with the ledger row, before the
// group forms, so the group waits on another analyst's grant: bob's, held by another session.
TEST_F(DebitGroupCommitTest, AFailedGroupTransactionFailsEveryMemberAndWritesNothing) {
  constexpr int kQueued = 6;
  const int64_t ds = NewDataset("lost_group", 100, 0);
  PrincipalStore principals(db());
  ASSERT_THAT(principals.Grant("alice", "lost_group"), IsOk());
  ASSERT_THAT(principals.Grant("bob", "lost_group"), IsOk());
  ASSERT_OK_AND_ASSIGN(DebitResult before, ledger_->Debit(ds, Alloc(alice_, "before", 1)));
  std::thread holder([&] {
    (void)TrySql(absl::StrCat("SELECT 1 FROM population_caps WHERE population_id = ", ds,
                              " AND principal_id = ", bob_.id, " FOR UPDATE; SELECT pg_sleep(5)"));
  });
  ASSERT_TRUE(WaitFor([&] {
    return Sql("SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND datname = "
               "current_database()") == "1";
  }));
  auto blocked_on_grant = [&] {
    return Sql("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND "
               "wait_event_type = 'Lock' AND query LIKE '%FROM population_caps%FOR UPDATE%'") ==
           "1";
  };
  // Bob's debit leads and waits for his grant row inside its ledger lock, before taking a group.
  absl::StatusOr<DebitResult> first = absl::UnknownError("not run");
  std::thread leader([&] { first = ledger_->Debit(ds, Alloc(bob_, "first", 1)); });
  ASSERT_TRUE(WaitFor(blocked_on_grant));
  // The lock order: it holds the ledger row while it waits for the grant row.
  const absl::StatusOr<std::string> probe = TrySql(
      absl::StrCat("SELECT 1 FROM ledgers WHERE population_id = ", ds, " FOR UPDATE NOWAIT"));
  ASSERT_FALSE(probe.ok()) << "the ledger row was free while the debit waited for a grant row";
  EXPECT_THAT(std::string(probe.status().message()), HasSubstr("could not obtain lock"));
  // Queued behind it: alice's m0 first (the next leader), then bob's and alice's by turns.
  std::vector<absl::StatusOr<DebitResult>> queued(kQueued, absl::UnknownError("not run"));
  auto member_principal = [&](int i) { return i % 2 == 0 ? alice_ : bob_; };
  std::vector<std::thread> threads;
  for (int i = 0; i < kQueued; ++i) {
    threads.emplace_back([this, ds, &queued, &member_principal, i] {
      BudgetLedger ledger(db());
      queued[static_cast<size_t>(i)] =
          ledger.Debit(ds, Alloc(member_principal(i), absl::StrCat("m", i), 1));
    });
    ASSERT_TRUE(WaitFor([&] { return DebitBatcher::Shared().Pending(db(), ds) == i + 2; }));
  }
  // Kill the first leader (alone: it took no group); the next, alice's, locks the ledger and her
  // grant, forms a group of all kQueued, then waits for bob's grant row, and is killed too.
  EXPECT_EQ(KillBlocked("FROM population_caps%FOR UPDATE"), "t");
  leader.join();
  EXPECT_THAT(first, StatusIs(absl::StatusCode::kUnavailable));
  ASSERT_TRUE(
      WaitFor([&] { return DebitBatcher::Shared().Pending(db(), ds) == 0 && blocked_on_grant(); }));
  EXPECT_EQ(KillBlocked("FROM population_caps%FOR UPDATE"), "t");
  for (auto& t : threads) t.join();
  holder.join();
  for (const auto& r : queued) EXPECT_THAT(r, StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_EQ(AuditRows(ds), 1);
  ASSERT_OK_AND_ASSIGN(BudgetState b, ledger_->Get(ds));
  EXPECT_EQ(b.epsilon_spent_units, EpsU(1));
  EXPECT_EQ(Count(absl::StrCat("SELECT sum(epsilon_spent_units) FROM population_caps "
                               "WHERE population_id = ",
                               ds)),
            EpsU(1));

  // Retries charge each id exactly once.
  std::vector<Outcome> outcomes = {Record(Alloc(alice_, "before", 1), before)};
  for (int i = 0; i < kQueued; ++i) {
    const Allocation a = Alloc(member_principal(i), absl::StrCat("m", i), 1);
    auto r = ledger_->Debit(ds, a);
    ASSERT_THAT(r, IsOk());
    EXPECT_FALSE(r->replayed);
    outcomes.push_back(Record(a, r));
  }
  EXPECT_EQ(AuditRows(ds), kQueued + 1);
  ExpectConsistent(ds, outcomes);
}

// The request-id lookups probe the unique (population_id, request_id) index instead of scanning the
// dataset's history through another index that leads with population_id (audit_cache_lookup,
// (population_id, seq)), which PostgreSQL's plans pick whenever they think the dataset is tiny: on a
// young table, or a dataset grown since the last ANALYZE. Measured through the index statistics of
// a fresh database: with `request_id = ANY($2)` planned per call, 3000 debits read ~n^2/2 = 4.5M
// index tuples; generic plans re-made as the history doubles read a few per debit.
TEST_F(DebitGroupCommitTest, DebitsOnAYoungDatasetDoNotScanItsHistory) {
  constexpr int kDebits = 3000;
  const int64_t ds = NewDataset("young", 1e6, 0);
  {
    // Its own connections, closed before reading the statistics (a backend reports them on exit).
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Database> own, Database::Open(url(), 1));
    BudgetLedger ledger(own.get());
    for (int i = 0; i < kDebits; ++i) {
      ASSERT_THAT(ledger.Debit(ds, Alloc(alice_, absl::StrCat("x", i), 0.001)), IsOk());
    }
  }
  auto stat = [&](const std::string& index, const std::string& column) {
    return Count(absl::StrCat("SELECT ", column,
                              " FROM pg_stat_user_indexes WHERE indexrelname = '", index, "'"));
  };
  ASSERT_TRUE(WaitFor([&] {
    return Count("SELECT sum(idx_scan) FROM pg_stat_user_indexes WHERE relname = 'audit'") >=
           kDebits;
  })) << "the debits' statistics never arrived";
  const int64_t scanned =
      stat("audit_cache_lookup", "idx_tup_read") + stat("audit_dataset_id_seq_key", "idx_tup_read");
  EXPECT_LT(scanned, 20 * kDebits) << "request-id lookups scan the dataset's history";
  EXPECT_EQ(Count("SELECT seq_tup_read FROM pg_stat_user_tables WHERE relname = 'audit'"), 0);
}

}  // namespace
}  // namespace dpq::store
