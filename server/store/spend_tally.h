// Committed charges per (dataset, analyst), for the metrics scrape, kept up to date incrementally.
//
// Why incremental is exact: the audit table is append-only (trigger audit_refuse_change, migration
// 0001) and a dataset's rows become visible in seq order — every debit appends under the ledger
// row's lock and commits before the next debit of that dataset can take it, so any snapshot holds a
// prefix of each dataset's chain. Refresh() therefore folds in only the rows past the last seq it
// saw per dataset, found through the UNIQUE (dataset_id, seq) index: a scrape costs O(new
// allocations), not O(history) as a GROUP BY over the whole audit table did.
//
// Datasets are reported by name; a dropped dataset keeps its audit rows (and its datasets row), so
// a later dataset of the same name is summed under the same labels, as before.
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
  std::string dataset, analyst;
  double epsilon = 0, delta = 0;
};

class SpendTally {
 public:
  explicit SpendTally(Database* db) : db_(db) {}

  // Sums of the committed charges (nominal epsilon and delta of every audit row), ordered by
  // dataset name, then analyst. The tally only advances when the read succeeds.
  absl::StatusOr<std::vector<AnalystSpend>> Refresh();

  // Audit rows folded in so far (tests: the incremental reads).
  int64_t rows_folded() const;

 private:
  struct Units {
    int64_t epsilon = 0, delta = 0;
  };
  Database* db_;
  mutable absl::Mutex mu_;
  std::map<int64_t, int64_t> last_seq_ ABSL_GUARDED_BY(mu_);  // dataset id -> last seq folded in
  std::map<std::pair<int64_t, std::string>, Units> units_ ABSL_GUARDED_BY(mu_);
  int64_t rows_folded_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_SPEND_TALLY_H_
