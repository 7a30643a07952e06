// The debit in one round trip: what this process last saw of a population's ledger row and its
// analysts' grant rows, so that the next group can be decided before any lock is taken and then
// written by one autocommitted statement that first checks, under the row locks, that every row
// it was decided on is still exactly as remembered (debit_write.h). Pure: no SQL, no I/O.
//
// Why it is sound. A group's outcome (who is admitted, every audit row with its hash link, the new
// ledger and grant figures) is a function of the group and of the rows the locked path reads: the
// ledger row, the group's analysts' grant rows and, for request ids a caller chose, their committed
// rows. The one-trip path runs only for groups whose ids the server drew (no committed row can
// hold them: debit_group.h), and the write's statement locks the ledger row and those grant rows
// in the locked path's order, compares each with the image remembered here (the whole row as
// PostgreSQL prints it: equal text, equal values) and writes nothing unless all are equal, a grant
// row that appeared or vanished included. Equal rows under the lock give the locked path's
// decision, so the outcome is the one the locked path would have committed. When anything differs
// (another dpqd, an admin's `budget set` or `grant`, a failed commit), nothing is written and the
// group runs the locked path, which refreshes what is remembered.
//
// Memory: one entry per population this process debited (the ledger state, one grant image per
// analyst seen), never evicted; populations are few and an entry is at most a few kilobytes
// (an accountant's state).
#ifndef DPQ_SERVER_STORE_KNOWN_LEDGERS_H_
#define DPQ_SERVER_STORE_KNOWN_LEDGERS_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/optional.h"
#include "absl/types/span.h"
#include "server/store/allocation.h"
#include "server/store/debit_admission.h"

namespace dpq::store {

// An analyst's grant row as last seen: its figures and its image.
struct KnownGrant {
  GrantCap cap;
  std::string image;
};

// The rows a group's write expects to find unchanged, as the write statement takes them.
struct ExpectedRows {
  std::string ledger_image;
  std::vector<int64_t> principals;        // every principal of the group, ascending, distinct
  std::vector<std::string> grant_images;  // the grant rows among them (none: no row expected)
};

// What the write left behind: the ledger row's new image and those of the grant rows it charged.
struct WrittenImages {
  std::string ledger_image;
  std::map<int64_t, std::string> grant_images;
};

// A population's ledger row and grant rows as this process last saw them committed.
struct KnownLedger {
  LedgerState ledger;
  std::string image;
  // By principal: its grant row, or nullopt when it has none (an admin).
  std::map<int64_t, absl::optional<KnownGrant>> grants;

  // Whether a debit can be decided from this alone: a population without time blocks, a request id
  // the server drew, no blocks named, and the analyst's grant row (or its absence) known.
  bool Decides(const Allocation& debit) const;
  // The grant rows of the group's principals, as AdmitDebits takes them.
  std::map<int64_t, GrantCap> CapsFor(absl::Span<const Allocation* const> group) const;
  // What the group's write must find: this ledger image and the group's grant rows.
  ExpectedRows ExpectFor(absl::Span<const Allocation* const> group) const;
  // This, after `admission` was written and left `written`: the new ledger state and image, the
  // charged grants' new figures and images.
  KnownLedger After(const DebitAdmission& admission, const WrittenImages& written) const;
};

// The process-wide map of KnownLedger, keyed as the debit batcher's queues are (the Database and
// the population), so only a group's leader uses an entry, one leader at a time.
class KnownLedgers {
 public:
  static KnownLedgers& Shared();

  // Removes and returns the entry (nullopt when there is none): a leader takes it, and puts back
  // what it committed; a leader that fails puts nothing back, so a doubtful entry is never used.
  absl::optional<KnownLedger> Take(const void* owner, int64_t population_id);
  void Put(const void* owner, int64_t population_id, KnownLedger known);

  // Groups written in one trip, and groups that tried and found a row changed, since start.
  struct Stats {
    int64_t one_trip = 0;
    int64_t changed = 0;
  };
  void Count(bool written_in_one_trip);
  Stats stats() const;

 private:
  using Key = std::pair<const void*, int64_t>;
  mutable absl::Mutex mu_;
  std::map<Key, KnownLedger> known_ ABSL_GUARDED_BY(mu_);
  Stats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_KNOWN_LEDGERS_H_
