// Time blocks: which blocks of a population's per-block budget a query pays, decided from the query
// text, the declared schema and the calendar alone, before any row is read; and the restriction
// that keeps the scan inside exactly those blocks.
//
// Block composition (Lécuyer, Spahn, Vodrahalli, Geambasu, Hsu, "Privacy Accounting and Quality
// Control in the Sage Differentially Private ML Platform", SOSP 2019, Section 4.2 and Theorem 4.3):
// rows are partitioned into blocks by a public attribute (here the calendar bucket of a date
// column), each block has a budget of its own, and a query whose answer depends only on the rows of
// blocks B is charged to every block of B. A person whose rows all lie in one block is then
// protected by that block's budget, and one whose rows span k blocks by the sum of theirs. Two
// conditions make it sound, and both are kept here:
//   - the partition is public and data-independent: a row's block is the bucket of its block
//     column clamped into the declared bounds (the rows never choose the blocks that exist);
//   - the answer depends only on the paid blocks: the scan is restricted to them (RestrictToBlocks)
//     and never bounds contributions by the stored per-unit row rank, which is drawn over all of a
//     person's rows and would let rows of an unpaid block choose which paid rows count.
#ifndef DPQ_SERVER_QUERY_TIME_BLOCKS_TIME_BLOCKS_H_
#define DPQ_SERVER_QUERY_TIME_BLOCKS_TIME_BLOCKS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "server/query/dataset_schema.h"
#include "server/query/filter/ast.h"

namespace dpq::query {

// A run of consecutive blocks, named by their first days (days since 1970-01-01), first <= last.
struct BlockRange {
  int64_t first = 0;
  int64_t last = 0;
  bool operator==(const BlockRange& o) const { return first == o.first && last == o.last; }
};

// The most blocks one query may pay (every block is a ledger row the debit locks): 10 years of
// daily blocks; a wider range is refused naming the count, before any charge.
inline constexpr int64_t kMaxBlocksPerQuery = 3660;

// The first day of every block of `range`, in order.
std::vector<int64_t> BlockStarts(CalendarBucket width, const BlockRange& range);
int64_t BlockCount(CalendarBucket width, const BlockRange& range);
// 'WIDTH:YYYY-MM-DD:YYYY-MM-DD' (the width, then the first and last block's first days): how an
// audit row records the blocks it paid, enough to list them again. ParseBlockRange reads it back
// (nullopt for anything else).
struct PaidBlocks {
  CalendarBucket width = CalendarBucket::kDay;
  BlockRange range;
};
std::string FormatBlockRange(CalendarBucket width, const BlockRange& range);
absl::optional<PaidBlocks> ParseBlockRange(absl::string_view text);

// The first block of a blocked dataset: the one holding its block column's declared lower bound.
// `schema.time_blocks` must be set and name a calendar column with bounds.
int64_t FirstBlockStart(const DatasetSchema& schema);
// The block holding `today` (days since 1970-01-01): the last block that has started.
int64_t CurrentBlockStart(CalendarBucket width, int64_t today);

// The blocks a query of `schema` (per-block budget, time_blocks set) with `filter` (null: none)
// pays on `today`: the range the filter's top-level conjunction allows the block column
// (comparisons =, <, <=, >, >= and BETWEEN with literals; any other term, and any OR, narrows
// nothing), within the declared bounds (the column is read clamped into them), from the first block
// up to the block holding today. Only the text of the query and the declared schema decide it.
// INVALID_ARGUMENT when that leaves no block (a range before the bounds or entirely in blocks that
// have not started) or more than kMaxBlocksPerQuery blocks; the message says what to change.
absl::StatusOr<BlockRange> BlocksToPay(const DatasetSchema& schema,
                                       const filter::TypedFilter* filter, int64_t today);

// `filter` (absent: none) AND the block column, clamped as every read of it is, inside `range`:
// the filter a per-block scan runs with, so that it reads no row of a block it did not pay for
// (nor a row whose block column is NULL, which is in no block).
absl::StatusOr<filter::TypedFilter> RestrictToBlocks(
    const DatasetSchema& schema, const absl::optional<filter::TypedFilter>& filter,
    const BlockRange& range);

}  // namespace dpq::query

#endif  // DPQ_SERVER_QUERY_TIME_BLOCKS_TIME_BLOCKS_H_
