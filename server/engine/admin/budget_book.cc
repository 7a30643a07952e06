#include "server/engine/admin/budget_book.h"

#include <set>

#include "absl/strings/str_format.h"
#include "server/base/status_macros.h"
#include "server/engine/admin/admin_action.h"
#include "server/query/calendar.h"
#include "server/query/epsilon_guidance.h"
#include "server/query/privacy_units.h"
#include "server/query/time_blocks/time_blocks.h"

namespace dpq::engine {
namespace {

// The limits of a budget change in ledger units, each INVALID_ARGUMENT naming its field.
struct BudgetUnits {
  int64_t epsilon = 0;
  int64_t delta = 0;
  absl::optional<int64_t> max_query_epsilon;  // 0: no per-query limit; unset: kept
};

absl::StatusOr<BudgetUnits> UnitsOf(const BudgetChange& change) {
  double epsilon = change.epsilon;
  if (!change.preset.empty()) {
    ASSIGN_OR_RETURN(query::EpsilonPreset preset, query::FindEpsilonPreset(change.preset));
    if (epsilon == 0) epsilon = preset.upper;  // the largest total the domain usually accepts
  }
  BudgetUnits units;
  ASSIGN_OR_RETURN(units.epsilon,
                   query::EpsilonToUnits(epsilon, "epsilon", query::kMaxEpsilonBudget));
  ASSIGN_OR_RETURN(units.delta, query::DeltaToUnits(change.delta, "delta"));
  if (change.max_query_epsilon.has_value()) {
    units.max_query_epsilon = 0;
    if (*change.max_query_epsilon != 0) {
      ASSIGN_OR_RETURN(units.max_query_epsilon,
                       query::EpsilonToUnits(*change.max_query_epsilon, "max_query_epsilon",
                                             query::kMaxEpsilonBudget));
    }
  }
  return units;
}

// The admin-log details of a budget change: the new values, "(kept)" for the ones left as they are.
std::string BudgetSetDetails(const BudgetChange& change, const BudgetUnits& units) {
  return absl::StrFormat(
      "epsilon=%.12g delta=%.12g accountant=%s preset=%s max_query_epsilon=%s%s",
      query::EpsilonFromUnits(units.epsilon), query::DeltaFromUnits(units.delta),
      change.accountant.empty() ? "(kept)" : change.accountant,
      change.preset.empty() ? "(kept)" : change.preset,
      !units.max_query_epsilon.has_value() ? "(kept)"
      : *units.max_query_epsilon == 0
          ? "none"
          : absl::StrFormat("%.12g", query::EpsilonFromUnits(*units.max_query_epsilon)),
      !change.block.empty() ? absl::StrCat(" block=", change.block)
      : change.per_block    ? std::string(" per_block")
                            : std::string());
}

// A ledger as the admin surface shows it: with its preset and, when the request named a dataset
// rather than its population, that dataset.
DatasetBudget BudgetAsRead(store::BudgetState budget, std::string via_dataset) {
  DatasetBudget read;
  read.budget = std::move(budget);
  read.preset = read.budget.epsilon_preset;
  read.via_dataset = std::move(via_dataset);
  return read;
}

}  // namespace

absl::StatusOr<DatasetBudget> BudgetBook::Get(const store::Principal& principal,
                                              const std::string& dataset, bool blocks,
                                              int64_t last_blocks) {
  DatasetBudget read;
  if (principal.role == store::Role::kAdmin) {
    // An admin names a population, or a dataset of it (dropped ones too: budgets outlive rows).
    ASSIGN_OR_RETURN(store::ResolvedPopulation target, stores_.populations->Resolve(dataset));
    ASSIGN_OR_RETURN(store::BudgetState budget, stores_.ledger->Get(target.population.id));
    read = BudgetAsRead(std::move(budget), target.via_dataset);
  } else {
    ASSIGN_OR_RETURN(query::DatasetSchema schema, engine_->AuthorizedDataset(principal, dataset));
    ASSIGN_OR_RETURN(store::BudgetState budget, stores_.ledger->Get(schema.population_id));
    std::string via_dataset = budget.population != schema.name ? schema.name : "";
    read = BudgetAsRead(std::move(budget), std::move(via_dataset));
  }
  if (blocks) RETURN_IF_ERROR(AddBlocks(read, last_blocks));
  return read;
}

absl::StatusOr<query::DatasetSchema> BudgetBook::BlockedDataset(int64_t population_id,
                                                                const std::string& population) {
  ASSIGN_OR_RETURN(std::vector<query::DatasetSchema> datasets,
                   stores_.datasets->List(absl::nullopt));
  absl::optional<query::DatasetSchema> earliest;
  for (query::DatasetSchema& d : datasets) {
    if (d.population_id != population_id || !d.time_blocks.has_value()) continue;
    if (!earliest || query::FirstBlockStart(d) < query::FirstBlockStart(*earliest)) {
      earliest = std::move(d);
    }
  }
  if (earliest) return *std::move(earliest);
  return absl::FailedPreconditionError(
      absl::StrCat("population ", population,
                   " has no dataset with time blocks (`dpqctl dataset create ... --block-by "
                   "COLUMN --block-width day|week|month`)"));
}

absl::Status BudgetBook::AddBlocks(DatasetBudget& read, int64_t last_blocks) {
  if (last_blocks < 0) {
    return absl::InvalidArgumentError(absl::StrCat("last_blocks: ", last_blocks,
                                                   " is negative; give a count of blocks, or 0 for "
                                                   "every block from the first"));
  }
  const store::BudgetState& b = read.budget;
  if (!b.per_block) {
    return absl::FailedPreconditionError(absl::StrCat(
        "population ", b.population,
        " has one budget for all time, not one per time block (`dpqctl ", "budget set ",
        b.population, " --epsilon E --per-block` before its first query)"));
  }
  ASSIGN_OR_RETURN(const query::DatasetSchema schema,
                   BlockedDataset(b.population_id, b.population));
  const query::CalendarBucket width = schema.time_blocks->width;
  const int64_t first = query::FirstBlockStart(schema);
  const int64_t current = query::CurrentBlockStart(width, engine_->Today());
  if (current < first) return absl::OkStatus();  // no block has started yet
  std::vector<int64_t> starts = query::BlockStarts(width, {first, current});
  if (last_blocks > 0 && static_cast<size_t>(last_blocks) < starts.size()) {
    starts.erase(starts.begin(), starts.end() - last_blocks);
  }
  ASSIGN_OR_RETURN(std::vector<store::BlockBudget> cells,
                   stores_.blocks->ListCells(b.population_id, starts.front(), current));
  auto cell = cells.begin();
  for (const int64_t start : starts) {
    if (cell != cells.end() && cell->start == start) {
      read.blocks.push_back(*cell++);
      continue;
    }
    store::BlockBudget fresh;
    fresh.start = start;
    fresh.epsilon_total_units = b.epsilon_total_units;
    fresh.delta_total_units = b.delta_total_units;
    read.blocks.push_back(fresh);
  }
  return absl::OkStatus();
}

absl::StatusOr<DatasetBudget> BudgetBook::SetBlocks(const store::AdminAction& log,
                                                    const store::ResolvedPopulation& target,
                                                    const BudgetChange& change,
                                                    int64_t epsilon_units, int64_t delta_units) {
  const store::Population& population = target.population;
  if (!change.accountant.empty() && change.accountant != "basic") {
    return absl::InvalidArgumentError(
        "accountant: a per-block budget composes each block basically; leave --accountant out");
  }
  if (change.block.empty()) {
    ASSIGN_OR_RETURN(store::BudgetState budget,
                     stores_.blocks->SetPerBlock(population.id, epsilon_units, delta_units, &log));
    return BudgetAsRead(std::move(budget), target.via_dataset);
  }
  const absl::optional<int64_t> day = query::ParseDate(change.block);
  if (!day.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("block: ", change.block, " is not a day 'YYYY-MM-DD'"));
  }
  ASSIGN_OR_RETURN(const query::DatasetSchema schema,
                   BlockedDataset(population.id, population.name));
  const query::CalendarBucket width = schema.time_blocks->width;
  if (query::BucketStart(width, *day) != *day || *day < query::FirstBlockStart(schema)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "block: ", change.block, " does not start a time block of population ", population.name,
        " (blocks of one ", query::CalendarBucketName(width), " from ",
        query::FormatDate(query::FirstBlockStart(schema)), "; the block holding it starts on ",
        query::FormatDate(query::BucketStart(width, *day)), ")"));
  }
  ASSIGN_OR_RETURN(store::BlockBudget block,
                   stores_.blocks->SetBlock(population.id, *day, epsilon_units, delta_units, &log));
  ASSIGN_OR_RETURN(store::BudgetState budget, stores_.ledger->Get(population.id));
  DatasetBudget set = BudgetAsRead(std::move(budget), target.via_dataset);
  set.blocks.push_back(block);
  return set;
}

absl::StatusOr<DatasetBudget> BudgetBook::Set(const store::Principal& admin,
                                              const BudgetChange& change) {
  ASSIGN_OR_RETURN(BudgetUnits units, UnitsOf(change));
  ASSIGN_OR_RETURN(store::ResolvedPopulation target, stores_.populations->Resolve(change.dataset));
  const store::Population& population = target.population;
  if (population.dropped) {
    return absl::FailedPreconditionError(
        absl::StrCat("population ", population.name, " is dropped: its budget can only be read"));
  }
  const store::AdminAction log =
      Logged(admin, "budget.set", population.name, BudgetSetDetails(change, units));
  if (change.per_block || !change.block.empty()) {
    if (change.max_query_epsilon.has_value() || !change.preset.empty()) {
      return absl::InvalidArgumentError(
          "per_block: set max_query_epsilon and the preset in a budget set of their own");
    }
    return SetBlocks(log, target, change, units.epsilon, units.delta);
  }
  ASSIGN_OR_RETURN(store::BudgetState budget,
                   stores_.ledger->Set(population.id, units.epsilon, units.delta, change.accountant,
                                       units.max_query_epsilon, &log));
  DatasetBudget set = BudgetAsRead(std::move(budget), target.via_dataset);
  if (!change.preset.empty()) {
    set.preset = change.preset;
    RETURN_IF_ERROR(stores_.datasets->SetEpsilonPreset(population.id, set.preset));
  }
  set.warnings = query::BudgetWarnings(set.budget.epsilon_total(), set.preset);
  return set;
}

absl::StatusOr<ServerOverview> BudgetBook::Overview() {
  ServerOverview overview;
  absl::StatusOr<int64_t> version = stores_.principals->SchemaVersion();
  absl::StatusOr<std::vector<query::DatasetSchema>> datasets =
      version.ok() ? stores_.datasets->List(absl::nullopt) : version.status();
  if (!datasets.ok()) {
    overview.database_error = std::string(datasets.status().message());
    return overview;
  }
  overview.database_reachable = true;
  overview.schema_version = *version;
  // One query for every ledger (the one the metrics read), not one per population; the ledgers
  // of populations without a live dataset (dropped, or not yet given one) are left out.
  ASSIGN_OR_RETURN(std::vector<store::BudgetState> budgets, stores_.ledger->ListBudgets());
  std::set<int64_t> live;
  for (const query::DatasetSchema& d : *datasets) live.insert(d.population_id);
  for (const store::BudgetState& b : budgets) {
    if (live.count(b.population_id) != 0) overview.budgets.push_back({b, b.epsilon_preset, "", {}});
  }
  return overview;
}

}  // namespace dpq::engine
