// Contribution bounding in the push-down SQL (store/aggregate_scanner.cc): the expression that
// ranks each row within its privacy unit, of which the scan keeps the rows ranked <= K.
//
// Two ways to rank:
//  * Window (every dataset, every plan): row_number() over (partition by unit [, groups] order by
//    random()): K rows per unit (and group) chosen uniformly at random, at every query. On 10M rows
//    this sort costs about 10x the scan itself.
//  * Stored rank (datasets created since migration 0006, ungrouped plans without a `--where`
//    filter; NULLs or not): the hidden column `_dpq_rank`,
//    the row's position among its unit's rows in load order, assigned by dpqd while it streams the
//    COPY (store/row_ranker.h). Bounding is then the filter `_dpq_rank <= K`, which PostgreSQL
//    applies during the sequential scan.
//
// Why the stored rank keeps the query K-bounded and private:
//  * Within a unit the ranks are distinct and exactly 1..n (one counter per unit, incremented once
//    per row; appends continue from the stored maximum under the dataset's row lock), so
//    `_dpq_rank <= K` keeps at most K rows of every unit whatever the data: the per-unit
//    contribution bound, hence the sensitivities of planner.cc, hold exactly as with the window.
//  * A unit's ranks depend only on that unit's own rows (the counters are per unit; other units'
//    rows never move them). Adding or removing all rows of one unit therefore changes no other
//    unit's kept rows: neighbouring datasets (add/remove one unit, decisions.md) give kept
//    multisets that differ in that unit's at most K rows only, which is the whole argument the
//    random choice rests on too.
//  * The choice is deterministic (the first K rows in load order) instead of random. This affects
//    utility only (a unit's first rows may differ systematically from its later ones, and every
//    query sees the same K rows), never privacy: the DP guarantee is over neighbouring datasets and
//    comes from the noise, not from the randomness of the selection.
// NULL values are dropped inside the kept set: a unit keeps its non-NULL rows among its first K
// (still at most K, still a function of its own rows only). The choice of method must not depend on
// whether some row holds a NULL (it once did, and one person's NULL switched
// every other person's kept rows from their first K to a fresh random window per query, a privacy
// loss near 25 where 0.1 was charged). It depends on the table (ranks or not) and the request only.
// Why the window stays for the other plans: a `--where` filter drops rows BEFORE the choice on the
// window path, so a unit keeps up to K rows among those that qualify; ranks among all rows would
// still be private (the kept rows are a subset of the unit's first K) but would keep fewer rows.
// Grouped plans bound K rows per unit AND group; one rank per unit would keep K rows in total.
// Per-row expressions: a row condition is a filter like `--where` (the window, for the same
// reason). A value expression keeps the stored rank: its NULLs are dropped inside the kept set as
// a value column's are, and whether a row's expression is NULL is a function of that row alone,
// so a unit's kept rows still depend on its own rows only and the choice of method on the request
// only. Group expressions come with group columns, so they take the window.
#ifndef DPQ_SERVER_STORE_BOUNDING_SQL_H_
#define DPQ_SERVER_STORE_BOUNDING_SQL_H_

#include <string>
#include <vector>

#include "server/query/planner.h"

namespace dpq::store {

// The hidden rank column of every dataset table created since migration 0006 (integer, NOT NULL,
// placed before the first text column: see DatasetStore::Create). User columns may not start with "_dpq" (query::ValidateNewDataset).
inline constexpr char kRowRankColumn[] = "_dpq_rank";

// True when `plan` may be bounded by the stored rank (see above): plan.bound_by_row_rank (the
// table has ranks), no group columns, no filter (`has_filter`) nor row condition, and no count
// of units.
bool UsesStoredRank(const query::ScanPlan& plan, bool has_filter);

// The select-list item "<rank> AS rn" of the scan's inner query: the stored rank when
// UsesStoredRank, else the random window over `partition_by` (quoted column names).
std::string RowRankSelect(const query::ScanPlan& plan, bool has_filter,
                          const std::vector<std::string>& partition_by);

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_BOUNDING_SQL_H_
