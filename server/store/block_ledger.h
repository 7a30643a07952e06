// The time-block cells of a population's per-block budget (migration 0016; block composition,
// server/query/time_blocks/time_blocks.h): choosing a per-block budget, a block's own budget, and
// reading the cells. The debit charges them (debit_group.cc, debit_admission.h).
#ifndef DPQ_SERVER_STORE_BLOCK_LEDGER_H_
#define DPQ_SERVER_STORE_BLOCK_LEDGER_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/optional.h"
#include "server/query/dataset_schema.h"
#include "server/store/allocation.h"
#include "server/store/audit_chain.h"
#include "server/store/database.h"

namespace dpq::store {

// One block's budget as `budget show --blocks` reads it.
struct BlockBudget {
  int64_t start = 0;  // first day, days since 1970-01-01
  int64_t epsilon_total_units = 0, delta_total_units = 0;
  int64_t epsilon_spent_units = 0, delta_spent_units = 0;
  bool own_budget = false;  // set for this block alone (else the ledger's per-block budget)

  // What is left, never below 0 (exact units, as BudgetState computes it).
  int64_t epsilon_remaining_units() const {
    return std::max<int64_t>(0, epsilon_total_units - epsilon_spent_units);
  }
  int64_t delta_remaining_units() const {
    return std::max<int64_t>(0, delta_total_units - delta_spent_units);
  }
};

// A per-block population's two latest blocks, what the metrics export (bounded: two per population).
struct RecentBlocks {
  int64_t population_id = 0;
  std::string population;
  query::CalendarBucket width = query::CalendarBucket::kDay;
  BlockBudget current;                   // the block holding today
  absl::optional<BlockBudget> previous;  // the block before it, unless current is the first
};

class BlockLedger {
 public:
  explicit BlockLedger(Database* db) : db_(db) {}

  // Makes (or keeps) the population's budget per block, with `epsilon_total_units` /
  // `delta_total_units` for every block without a budget of its own.
  //   FAILED_PRECONDITION: switching a population-wide budget once anything was charged; a
  //     population with no dataset, or one without time blocks; a non-basic accountant (blocks
  //     compose basically); a total below what a block already spent.
  absl::StatusOr<BudgetState> SetPerBlock(int64_t population_id, int64_t epsilon_total_units,
                                          int64_t delta_total_units, const AdminAction* log);

  // Gives the block starting on `block_start` a budget of its own (it must be a per-block
  // population and the day a block's first day). FAILED_PRECONDITION below what it spent.
  absl::StatusOr<BlockBudget> SetBlock(int64_t population_id, int64_t block_start,
                                       int64_t epsilon_total_units, int64_t delta_total_units,
                                       const AdminAction* log);

  // The cells of the population's blocks from `first` to `last` (block first days, inclusive) that
  // exist, in order, their totals resolved (own or the ledger's). Blocks without a cell have the
  // ledger's per-block budget and spent nothing.
  absl::StatusOr<std::vector<BlockBudget>> ListCells(int64_t population_id, int64_t first,
                                                     int64_t last);

  // For every per-block population with a block that has started on `today` (days since
  // 1970-01-01; the engine's QueryEngine::Today(), so both agree on the current block): its current
  // and previous block, totals resolved and spent 0 where no cell exists, ordered by population
  // name. The blocks are those `budget show --blocks` lists last: calendar buckets of the
  // population's width from the first block of its datasets (the earliest declared lower bound of
  // their block columns). Two statements in one read transaction, whatever the population count.
  absl::StatusOr<std::vector<RecentBlocks>> ListRecentBlocks(int64_t today);

 private:
  Database* db_;
};

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_BLOCK_LEDGER_H_
