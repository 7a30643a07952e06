#include "server/store/block_ledger.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/query/calendar.h"
#include "server/query/time_blocks/time_blocks.h"
#include "server/store/admin_log.h"
#include "server/store/array_literal.h"
#include "server/store/ledger_rows.h"

namespace dpq::store {
namespace {

using dp::accounting::AccountantKind;

// Why a population cannot take a per-block budget: it has no dataset, or one without time blocks.
absl::Status CheckEveryDatasetBlocked(pqxx::transaction_base& tx, const BudgetState& b) {
  const pqxx::row r = tx.exec_params1(
      "SELECT count(*), count(*) FILTER (WHERE block_column IS NULL), "
      "min(name) FILTER (WHERE block_column IS NULL) FROM datasets "
      "WHERE population_id = $1 AND dropped_at IS NULL",
      b.population_id);
  if (r[0].as<int64_t>() == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("population ", b.population,
                     " has no dataset: create one with time blocks (--block-by COLUMN "
                     "--block-width day|week|month) before a per-block budget"));
  }
  if (r[1].as<int64_t>() > 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "dataset ", r[2].as<std::string>(), " of population ", b.population,
        " has no time blocks, so its rows are in no block: a per-block budget needs every "
        "dataset of the population created with --block-by COLUMN --block-width W"));
  }
  return absl::OkStatus();
}

BlockBudget BlockFromRow(const pqxx::row& r, const BudgetState& ledger) {
  BlockBudget b;
  b.start = r[0].as<int64_t>();
  b.own_budget = !r[1].is_null();
  b.epsilon_total_units = r[1].is_null() ? ledger.epsilon_total_units : r[1].as<int64_t>();
  b.delta_total_units = r[2].is_null() ? ledger.delta_total_units : r[2].as<int64_t>();
  b.epsilon_spent_units = r[3].as<int64_t>();
  b.delta_spent_units = r[4].as<int64_t>();
  return b;
}

constexpr char kCellColumns[] =
    "block_start - date '1970-01-01', epsilon_total_units, delta_total_units, "
    "epsilon_spent_units, delta_spent_units";

// The first block of a dataset whose block column `column` of `type` declares `lower_text` as its
// lower bound (the canonical text Create stored, so it parses): through FirstBlockStart, the one
// definition of where a dataset's blocks begin.
int64_t FirstBlockOfColumn(const std::string& column, const std::string& type,
                           const std::string& lower_text, query::CalendarBucket width) {
  query::DatasetSchema schema;
  query::ColumnSchema c;
  c.name = column;
  c.type = query::ParseColumnType(type).value_or(query::ColumnType::kDate);
  c.calendar_lower = query::ParseCalendarValue(c.type, lower_text);
  schema.columns.push_back(std::move(c));
  schema.time_blocks = query::TimeBlocking{column, width};
  return query::FirstBlockStart(schema);
}

// A block with no cell: the ledger's per-block budget, nothing spent.
BlockBudget FreshBlock(int64_t start, int64_t epsilon_total_units, int64_t delta_total_units) {
  BlockBudget b;
  b.start = start;
  b.epsilon_total_units = epsilon_total_units;
  b.delta_total_units = delta_total_units;
  return b;
}

// Every per-block population with a block that has started on `today`, its current and previous
// blocks without their cells (FreshBlock), from its ledger row and its blocked datasets.
std::vector<RecentBlocks> RecentBlockShells(pqxx::transaction_base& tx, int64_t today) {
  struct Population {
    RecentBlocks shell;
    int64_t first = 0;  // the earliest first block of its datasets
    int64_t epsilon_total_units = 0, delta_total_units = 0;
  };
  std::map<std::string, Population> found;  // by name: the order of the result
  for (const pqxx::row& r :
       tx.exec("SELECT l.population_id, p.name, l.epsilon_total_units, l.delta_total_units, "
               "d.block_width, d.block_column, c.type, c.lower_text "
               "FROM ledgers l JOIN populations p ON p.id = l.population_id "
               "JOIN datasets d ON d.population_id = l.population_id AND d.dropped_at IS NULL "
               "AND d.block_column IS NOT NULL "
               "JOIN dataset_columns c ON c.dataset_id = d.id AND c.name = d.block_column "
               "WHERE l.per_block")) {
    // The CHECK of migration 0016 admits only bucket names; every dataset of a per-block
    // population has the same width (population_store.h).
    const query::CalendarBucket width =
        query::ParseCalendarBucket(r[4].as<std::string>()).value_or(query::CalendarBucket::kDay);
    const int64_t first = FirstBlockOfColumn(r[5].as<std::string>(), r[6].as<std::string>(),
                                             r[7].as<std::string>(), width);
    const std::string name = r[1].as<std::string>();
    auto [it, inserted] = found.try_emplace(name);
    Population& p = it->second;
    if (inserted) {
      p.shell.population_id = r[0].as<int64_t>();
      p.shell.population = name;
      p.shell.width = width;
      p.first = first;
      p.epsilon_total_units = r[2].as<int64_t>();
      p.delta_total_units = r[3].as<int64_t>();
    }
    p.first = std::min(p.first, first);
  }
  std::vector<RecentBlocks> out;
  for (auto& [name, p] : found) {
    const int64_t current = query::CurrentBlockStart(p.shell.width, today);
    if (current < p.first) continue;  // no block has started yet
    p.shell.current = FreshBlock(current, p.epsilon_total_units, p.delta_total_units);
    const int64_t previous = query::BucketStart(p.shell.width, current - 1);
    if (previous >= p.first) {
      p.shell.previous = FreshBlock(previous, p.epsilon_total_units, p.delta_total_units);
    }
    out.push_back(std::move(p.shell));
  }
  return out;
}

}  // namespace

absl::StatusOr<BudgetState> BlockLedger::SetPerBlock(int64_t population_id,
                                                     int64_t epsilon_total_units,
                                                     int64_t delta_total_units,
                                                     const AdminAction* log) {
  BudgetState b;
  RETURN_IF_ERROR(db_->Run("set per-block budget", [&](pqxx::connection& c) -> absl::Status {
    pqxx::work tx(c);
    ASSIGN_OR_RETURN(pqxx::row locked, ReadLedger(tx, population_id, /*lock=*/true));
    const LedgerState ledger = LedgerFromRow(locked);
    b = ledger.budget;
    if (!b.per_block && ledger.head_seq > 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "population ", b.population,
          " already spent from its population-wide budget: a budget becomes per block only "
          "before its first charge (what was spent covers every block)"));
    }
    if (b.accountant != AccountantKind::kBasic) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the accountant of population ", b.population, " is ", AccountantName(b.accountant),
          ": a per-block budget composes each block basically; set `--accountant basic`"));
    }
    RETURN_IF_ERROR(CheckEveryDatasetBlocked(tx, b));
    const pqxx::row most = tx.exec_params1(
        "SELECT coalesce(max(epsilon_spent_units), 0), coalesce(max(delta_spent_units), 0) "
        "FROM ledger_blocks WHERE population_id = $1 AND epsilon_total_units IS NULL",
        population_id);
    if (epsilon_total_units < most[0].as<int64_t>() || delta_total_units < most[1].as<int64_t>()) {
      return absl::FailedPreconditionError(
          absl::StrCat("a block of population ", b.population,
                       " already spent epsilon=", query::EpsilonFromUnits(most[0].as<int64_t>()),
                       " delta=", query::DeltaFromUnits(most[1].as<int64_t>()),
                       ": the per-block budget cannot go below it"));
    }
    tx.exec_params0(
        "UPDATE ledgers SET per_block = true, epsilon_total_units = $2, delta_total_units = $3, "
        "updated_at = now() WHERE population_id = $1",
        population_id, epsilon_total_units, delta_total_units);
    if (log != nullptr) AppendAdminAction(tx, *log);
    tx.commit();
    b.per_block = true;
    b.epsilon_total_units = epsilon_total_units;
    b.delta_total_units = delta_total_units;
    return absl::OkStatus();
  }));
  return b;
}

absl::StatusOr<BlockBudget> BlockLedger::SetBlock(int64_t population_id, int64_t block_start,
                                                  int64_t epsilon_total_units,
                                                  int64_t delta_total_units,
                                                  const AdminAction* log) {
  BlockBudget out;
  RETURN_IF_ERROR(db_->Run("set block budget", [&](pqxx::connection& c) -> absl::Status {
    pqxx::work tx(c);
    ASSIGN_OR_RETURN(pqxx::row locked, ReadLedger(tx, population_id, /*lock=*/true));
    const BudgetState b = LedgerFromRow(locked).budget;
    if (!b.per_block) {
      return absl::FailedPreconditionError(absl::StrCat(
          "population ", b.population, " has no per-block budget: set one first (`dpqctl budget ",
          "set ", b.population, " --epsilon E --per-block`)"));
    }
    const std::string day = query::FormatDate(block_start);
    const pqxx::row r = tx.exec_params1(
        absl::StrCat("INSERT INTO ledger_blocks (population_id, block_start) VALUES ($1, $2) "
                     "ON CONFLICT (population_id, block_start) DO UPDATE SET block_start = "
                     "EXCLUDED.block_start RETURNING ",
                     kCellColumns),
        population_id, day);
    out = BlockFromRow(r, b);
    if (epsilon_total_units < out.epsilon_spent_units ||
        delta_total_units < out.delta_spent_units) {
      return absl::FailedPreconditionError(absl::StrCat(
          "time block ", day, " of population ", b.population,
          " already spent epsilon=", query::EpsilonFromUnits(out.epsilon_spent_units), " delta=",
          query::DeltaFromUnits(out.delta_spent_units), ": its budget cannot go below it"));
    }
    tx.exec_params0(
        "UPDATE ledger_blocks SET epsilon_total_units = $3, delta_total_units = $4 "
        "WHERE population_id = $1 AND block_start = $2",
        population_id, day, epsilon_total_units, delta_total_units);
    if (log != nullptr) AppendAdminAction(tx, *log);
    tx.commit();
    out.own_budget = true;
    out.epsilon_total_units = epsilon_total_units;
    out.delta_total_units = delta_total_units;
    return absl::OkStatus();
  }));
  return out;
}

absl::StatusOr<std::vector<BlockBudget>> BlockLedger::ListCells(int64_t population_id,
                                                                int64_t first, int64_t last) {
  std::vector<BlockBudget> cells;
  RETURN_IF_ERROR(db_->Run("read block budgets", [&](pqxx::connection& c) -> absl::Status {
    cells.clear();
    pqxx::read_transaction tx(c);
    ASSIGN_OR_RETURN(pqxx::row ledger, ReadLedger(tx, population_id, /*lock=*/false));
    const BudgetState b = BudgetFromRow(ledger);
    for (const pqxx::row& r : tx.exec_params(
             absl::StrCat("SELECT ", kCellColumns,
                          " FROM ledger_blocks WHERE population_id = $1 AND block_start BETWEEN "
                          "$2::date AND $3::date ORDER BY block_start"),
             population_id, query::FormatDate(first), query::FormatDate(last))) {
      cells.push_back(BlockFromRow(r, b));
    }
    return absl::OkStatus();
  }));
  return cells;
}

absl::StatusOr<std::vector<RecentBlocks>> BlockLedger::ListRecentBlocks(int64_t today) {
  std::vector<RecentBlocks> out;
  RETURN_IF_ERROR(db_->Run("read recent blocks", [&](pqxx::connection& c) -> absl::Status {
    pqxx::read_transaction tx(c);
    out = RecentBlockShells(tx, today);
    // The cells of those blocks, all populations at once: at most two rows each.
    ArrayLiteral ids, starts;
    std::map<std::pair<int64_t, int64_t>, BlockBudget*> wanted;
    for (RecentBlocks& p : out) {
      for (BlockBudget* b : {&p.current, p.previous ? &*p.previous : nullptr}) {
        if (b == nullptr) continue;
        ids.AddInt(p.population_id);
        starts.AddText(query::FormatDate(b->start));
        wanted[{p.population_id, b->start}] = b;
      }
    }
    if (wanted.empty()) return absl::OkStatus();
    for (const pqxx::row& r :
         tx.exec_params(absl::StrCat("SELECT ", kCellColumns,
                                     ", population_id FROM ledger_blocks JOIN unnest($1::bigint[], "
                                     "$2::date[]) AS w(population_id, block_start) "
                                     "USING (population_id, block_start)"),
                        ids.str(), starts.str())) {
      BlockBudget* b = wanted.at({r[5].as<int64_t>(), r[0].as<int64_t>()});
      BudgetState ledger;  // BlockFromRow resolves a NULL total to the ledger's, already in *b
      ledger.epsilon_total_units = b->epsilon_total_units;
      ledger.delta_total_units = b->delta_total_units;
      *b = BlockFromRow(r, ledger);
    }
    return absl::OkStatus();
  }));
  return out;
}

}  // namespace dpq::store
