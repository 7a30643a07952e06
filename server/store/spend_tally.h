// Committed charges per (population, analyst), for the metrics scrape, kept up to date incrementally.
//
// Why incremental is exact: the audit table is append-only (trigger audit_refuse_change, migration
// 0001) and a population's rows become visible in seq order — every debit appends under the ledger
// row's lock and commits before the next debit of that population can take it, so any snapshot holds a
// prefix of each population's chain. Refresh() therefore folds in only the rows past the last seq it
// saw per population, found through the UNIQUE (population_id, seq) index: a scrape costs O(new
// allocations), not O(history) as a GROUP BY over the whole audit table did.
//
// Populations are reported by name; a dropped population keeps its audit rows (and its populations row), so
// a later population of the same name is summed under the same labels, as before.
#ifndef DPQ_SERVER_STORE_SPEND_TALLY_H_
#define DPQ_SERVER_STORE_SPEND_TALLY_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/store/database.h"

namespace dpq::store {

struct AnalystSpend {
  std::string population, analyst;
  double epsilon = 0, delta = 0;
};

// A population's audit chain over time, for the metrics scrape and the status page.
struct PopulationHistory {
  std::string population;
  int64_t audit_rows = 0;
  // Nominal epsilon charged in each window ending at the database's clock of the last Refresh;
  // minute resolution: a minute that overlaps the window counts whole.
  std::vector<double> epsilon_recent;
};

class SpendTally {
 public:
  explicit SpendTally(Database* db) : db_(db) {}

  // Sums of the committed charges (nominal epsilon and delta of every audit row), ordered by
  // population name, then analyst. The tally only advances when the read succeeds.
  absl::StatusOr<std::vector<AnalystSpend>> Refresh();

  // Audit rows folded in so far (tests: the incremental reads).
  int64_t rows_folded() const;

  // As of the last successful Refresh, per population name (ordered): its audit rows and the nominal
  // epsilon of the rows created within each of `windows_seconds` (each at most kMaxWindowSeconds).
  // Kept incrementally like the sums: per population, epsilon units per minute of created_at over
  // the last kMaxWindowSeconds (at most 43,200 buckets per population).
  static constexpr int64_t kMaxWindowSeconds = 30 * 86400;
  std::vector<PopulationHistory> History(const std::vector<int64_t>& windows_seconds) const;

 private:
  struct Units {
    int64_t epsilon = 0, delta = 0;
  };
  // The audit rows past each population's last folded seq, read in one snapshot and summed.
  struct NewSpend {
    std::map<int64_t, std::string> names;                    // every population id -> name
    std::map<std::pair<int64_t, std::string>, Units> units;  // (population id, analyst) -> sums
    std::map<int64_t, int64_t> last_seq;                     // population id -> largest seq read
    std::map<int64_t, std::map<int64_t, int64_t>> minutes;   // id -> minute -> epsilon units
    std::map<int64_t, int64_t> audit_rows;                   // population id -> rows read
    int64_t now_seconds = 0;                                 // the database's clock
    int64_t rows = 0;                                        // rows read in all
  };
  // Refresh's steps: read what is new, fold it into the totals, report the totals by name.
  absl::StatusOr<NewSpend> ReadNewSpend() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Fold(const NewSpend& fresh) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::vector<AnalystSpend> ByName() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Database* db_;
  mutable absl::Mutex mu_;
  std::map<int64_t, int64_t> last_seq_ ABSL_GUARDED_BY(mu_);  // population id -> last seq folded in
  std::map<std::pair<int64_t, std::string>, Units> units_ ABSL_GUARDED_BY(mu_);
  int64_t rows_folded_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<int64_t, std::string> names_ ABSL_GUARDED_BY(mu_);   // population id -> name
  std::map<int64_t, int64_t> audit_rows_ ABSL_GUARDED_BY(mu_);  // population id -> rows
  std::map<int64_t, std::map<int64_t, int64_t>> minutes_
      ABSL_GUARDED_BY(mu_);                       // id -> minute -> units
  int64_t now_seconds_ ABSL_GUARDED_BY(mu_) = 0;  // the database's clock at the last Refresh
};

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_SPEND_TALLY_H_
