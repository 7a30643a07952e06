#include "server/store/debit_admission.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/base/status_macros.h"
#include "server/query/calendar.h"
#include "server/store/audit_chain.h"
#include "server/store/ledger_accounting.h"

namespace dpq::store {
namespace {

using dp::accounting::AccountantKind;

// A dataset the charge read, to name in the `dpqctl grant` that raises the cap (a cap is the
// population's, set through any of its datasets).
std::string GrantTarget(const Allocation& a) {
  const std::string first = a.datasets.substr(0, a.datasets.find(','));
  return first.empty() ? std::string("DATASET") : first;
}

// What an analyst's cap covers and what was already charged against it: the population, or one
// time block of a per-block population.
struct CapScope {
  int64_t epsilon_spent_units = 0, delta_spent_units = 0;
  absl::optional<int64_t> block;  // first day of the block; nullopt: the whole population
};

// RESOURCE_EXHAUSTED when `a`'s nominal charge does not fit the analyst's cap `g` with `scope`'s
// spend already charged (caps compose basically; decisions.md). Compared as "charge <= cap -
// spent", which cannot overflow.
absl::Status CheckCap(const GrantCap& g, const CapScope& scope, const std::string& population,
                      const Allocation& a) {
  const bool over_epsilon =
      g.epsilon_cap_units && a.epsilon_units > *g.epsilon_cap_units - scope.epsilon_spent_units;
  const bool over_delta =
      g.delta_cap_units && a.delta_units > *g.delta_cap_units - scope.delta_spent_units;
  if (!over_epsilon && !over_delta) return absl::OkStatus();
  const std::string where = scope.block
                                ? absl::StrCat("time block ", query::FormatDate(*scope.block),
                                               " of population ", population)
                                : absl::StrCat("population ", population);
  return absl::ResourceExhaustedError(absl::StrFormat(
      "analyst %s's cap on %s exhausted: requested epsilon=%.12g delta=%.12g, cap remaining "
      "epsilon=%s delta=%s; %sask for less, or ask an admin to raise the cap (`dpqctl grant %s %s "
      "--epsilon-cap E`; the cap covers every dataset of population %s%s)",
      a.analyst, where, query::EpsilonFromUnits(a.epsilon_units),
      query::DeltaFromUnits(a.delta_units),
      g.epsilon_cap_units
          ? absl::StrFormat(
                "%.12g", query::EpsilonFromUnits(*g.epsilon_cap_units - scope.epsilon_spent_units))
          : std::string("unlimited"),
      g.delta_cap_units ? absl::StrFormat("%.12g", query::DeltaFromUnits(*g.delta_cap_units -
                                                                         scope.delta_spent_units))
                        : std::string("unlimited"),
      scope.block ? "ask about other blocks (a narrower range of the block column in WHERE), " : "",
      a.analyst, GrantTarget(a), population, scope.block ? ", in each of its time blocks" : ""));
}

// Decides member `i` when its request id is already taken, by a committed row (`prior`) or by a
// member admitted earlier in the group: a replay with the same fingerprint, ALREADY_EXISTS with
// another. False when the id is new.
bool DecideTakenRequestId(size_t i, absl::Span<const Allocation* const> group,
                          const std::map<std::string, Allocation>& prior,
                          const std::map<std::string, size_t>& admitted_by_id,
                          DebitAdmission& out) {
  const Allocation& in = *group[i];
  if (auto p = prior.find(in.request_id); p != prior.end()) {
    if (p->second.fingerprint != in.fingerprint) {
      out.decided[i] = RequestIdTaken(in.request_id);
    } else {
      out.decided[i] = DebitResult{p->second, out.ledger.budget, /*replayed=*/true};
    }
    return true;
  }
  if (auto t = admitted_by_id.find(in.request_id); t != admitted_by_id.end()) {
    if (group[t->second]->fingerprint != in.fingerprint) {
      out.decided[i] = RequestIdTaken(in.request_id);
    } else {
      out.decided[i] = DebitResult{Allocation(), out.ledger.budget, /*replayed=*/true};
      out.replay_of[i] = static_cast<std::ptrdiff_t>(t->second);
    }
    return true;
  }
  return false;
}

// The ledger's spent budget and accountant state after charging `in`, or why it does not fit.
// Exact integer arithmetic (privacy_units.h): a basic charge fits iff it is at most what remains;
// other accountants compose its events onto the state the previous admitted debit produced.
absl::StatusOr<LedgerState> ChargeLedger(const LedgerState& ledger, const Allocation& in) {
  if (in.epsilon_units <= 0 || in.delta_units < 0) {
    return absl::InvalidArgumentError("a charge needs epsilon > 0 and delta >= 0");
  }
  const BudgetState& budget = ledger.budget;
  LedgerState after = ledger;
  if (budget.accountant == AccountantKind::kBasic) {
    if (in.epsilon_units > budget.epsilon_remaining_units() ||
        in.delta_units > budget.delta_remaining_units()) {
      return BudgetExhausted(budget, in.epsilon_units, in.delta_units);
    }
    after.budget.epsilon_spent_units += in.epsilon_units;
    after.budget.delta_spent_units += in.delta_units;
    return after;
  }
  absl::StatusOr<ComposedState> composed =
      ComposeCharge(budget, ledger.accountant_state, in.events);
  if (!composed.ok()) return composed.status();
  after.budget.epsilon_spent_units = composed->epsilon_spent_units;
  after.budget.delta_spent_units = composed->delta_spent_units;
  after.accountant_state = std::move(composed->state);
  return after;
}

// RESOURCE_EXHAUSTED naming the block of `budget`'s population that a charge does not fit.
absl::Status BlockExhausted(const BudgetState& cell, int64_t block_start, int64_t epsilon_units,
                            int64_t delta_units) {
  const std::string block = query::FormatDate(block_start);
  return absl::ResourceExhaustedError(absl::StrFormat(
      "privacy budget of time block %s of population %s exhausted: requested epsilon=%.12g "
      "delta=%.12g, the block has epsilon=%.12g delta=%.12g left; ask about other blocks (a "
      "narrower range of the block column in WHERE), ask for less, or ask an admin to raise the "
      "block's budget (`dpqctl budget set %s --epsilon E --block %s`)",
      block, cell.population, query::EpsilonFromUnits(epsilon_units),
      query::DeltaFromUnits(delta_units), cell.epsilon_remaining(), cell.delta_remaining(),
      cell.population, block));
}

// A per-block ledger's charge of `in`: every cell of its blocks, each against its own totals and
// accountant state (ChargeLedger on the cell), or the first one it does not fit. Only when all fit
// are the cells changed. The ledger's own spent adds the nominal charge (it limits nothing).
absl::StatusOr<LedgerState> ChargeBlocks(const LedgerState& ledger, const Allocation& in,
                                         std::map<int64_t, BlockCell>& cells) {
  if (in.blocks.empty() != in.block_starts.empty() || !ledger.budget.per_block ||
      in.blocks.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the budget of population ", ledger.budget.population,
        " changed between planning this query and charging it (per block or not); send it "
        "again"));
  }
  if (in.epsilon_units <= 0 || in.delta_units < 0) {
    return absl::InvalidArgumentError("a charge needs epsilon > 0 and delta >= 0");
  }
  std::map<int64_t, BlockCell> after;
  for (const int64_t start : in.block_starts) {
    auto cell = cells.find(start);
    if (cell == cells.end()) return absl::InternalError("debit: a block's cell was not locked");
    LedgerState state = ledger;
    BudgetState& b = state.budget;
    b.epsilon_total_units = cell->second.epsilon_total_units.value_or(b.epsilon_total_units);
    b.delta_total_units = cell->second.delta_total_units.value_or(b.delta_total_units);
    b.epsilon_spent_units = cell->second.epsilon_spent_units;
    b.delta_spent_units = cell->second.delta_spent_units;
    state.accountant_state = cell->second.accountant_state;
    absl::StatusOr<LedgerState> charged = ChargeLedger(state, in);
    if (!charged.ok()) {
      if (charged.status().code() != absl::StatusCode::kResourceExhausted) return charged.status();
      return BlockExhausted(b, start, in.epsilon_units, in.delta_units);
    }
    BlockCell next = cell->second;
    next.epsilon_spent_units = charged->budget.epsilon_spent_units;
    next.delta_spent_units = charged->budget.delta_spent_units;
    next.accountant_state = std::move(charged->accountant_state);
    next.charged = true;
    after.emplace(start, std::move(next));
  }
  for (auto& [start, cell] : after) cells[start] = std::move(cell);
  LedgerState out = ledger;
  out.budget.epsilon_spent_units += in.epsilon_units;
  out.budget.delta_spent_units += in.delta_units;
  return out;
}

// Charges `in` to its analyst's grant row, if there is one; nothing changes when it does not fit.
// On a per-block ledger the cap limits each block `in` pays (the block spends of the row, locked
// by the group), and the row's population-wide spend only adds up.
absl::Status ChargeCap(const LedgerState& ledger, const Allocation& in,
                       std::map<int64_t, GrantCap>& grants) {
  auto grant = grants.find(in.principal_id);
  if (grant == grants.end()) return absl::OkStatus();
  GrantCap& g = grant->second;
  const std::string& population = ledger.budget.population;
  if (!ledger.budget.per_block) {
    RETURN_IF_ERROR(CheckCap(g, CapScope{g.epsilon_spent_units, g.delta_spent_units, absl::nullopt},
                             population, in));
  } else {
    for (const int64_t start : in.block_starts) {
      auto spent = g.blocks.find(start);
      if (spent == g.blocks.end())
        return absl::InternalError("debit: a block's cap was not locked");
      RETURN_IF_ERROR(CheckCap(
          g, CapScope{spent->second.epsilon_spent_units, spent->second.delta_spent_units, start},
          population, in));
    }
    for (const int64_t start : in.block_starts) {
      BlockSpend& spent = g.blocks[start];
      spent.epsilon_spent_units += in.epsilon_units;
      spent.delta_spent_units += in.delta_units;
      spent.charged = true;
    }
  }
  g.epsilon_spent_units += in.epsilon_units;
  g.delta_spent_units += in.delta_units;
  g.charged = true;
  return absl::OkStatus();
}

}  // namespace

DebitAdmission AdmitDebits(const LedgerState& ledger,
                           const std::map<std::string, Allocation>& prior,
                           std::map<int64_t, GrantCap> grants,
                           absl::Span<const Allocation* const> group,
                           std::map<int64_t, BlockCell> blocks) {
  DebitAdmission out;
  out.blocks = std::move(blocks);
  out.decided.assign(group.size(), absl::InternalError("debit not decided"));
  out.replay_of.assign(group.size(), -1);
  out.ledger = ledger;
  out.grants = std::move(grants);
  std::map<std::string, size_t> admitted_by_id;
  for (size_t i = 0; i < group.size(); ++i) {
    const Allocation& in = *group[i];
    if (DecideTakenRequestId(i, group, prior, admitted_by_id, out)) continue;
    // A per-block ledger's cells are charged on a copy, kept only once the cap fits too: a
    // refused member changes nothing.
    std::map<int64_t, BlockCell> cells_after;
    absl::StatusOr<LedgerState> after = absl::InternalError("not charged");
    if (ledger.budget.per_block || !in.blocks.empty()) {
      cells_after = out.blocks;
      after = ChargeBlocks(out.ledger, in, cells_after);
    } else {
      after = ChargeLedger(out.ledger, in);
    }
    if (!after.ok()) {
      out.decided[i] = after.status();
      continue;
    }
    if (absl::Status cap = ChargeCap(ledger, in, out.grants); !cap.ok()) {
      out.decided[i] = std::move(cap);
      continue;
    }
    if (ledger.budget.per_block) out.blocks = std::move(cells_after);
    Allocation a = in;
    a.seq = out.ledger.head_seq + 1;
    a.prev_hash = out.ledger.head_hash;
    a.hash = ChainHash(a.prev_hash, ledger.budget.population_id, a);
    after->head_seq = a.seq;
    after->head_hash = a.hash;
    out.ledger = *std::move(after);
    admitted_by_id.emplace(in.request_id, i);
    out.admitted.push_back(i);
    out.decided[i] = DebitResult{std::move(a), out.ledger.budget, /*replayed=*/false};
  }
  return out;
}

absl::Status RequestIdTaken(const std::string& request_id) {
  return absl::AlreadyExistsError(absl::StrCat(
      "request_id ", request_id,
      " is already taken by a different query or analyst; use a new id (a query that pays time "
      "blocks up to today is a different query once the date has changed)"));
}

absl::Status BudgetExhausted(const BudgetState& budget, int64_t epsilon_units,
                             int64_t delta_units) {
  // Every message says what to do next: how to get budget, or how to ask for less.
  if (budget.epsilon_total() == 0) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "population %s has no privacy budget yet: ask an admin to run `dpqctl budget set %s "
        "--epsilon E [--delta D]`",
        budget.population, budget.population));
  }
  return absl::ResourceExhaustedError(absl::StrFormat(
      "privacy budget of population %s exhausted: requested epsilon=%.12g delta=%.12g, remaining "
      "epsilon=%.12g delta=%.12g; ask for less (a smaller --epsilon or --delta) or ask an admin "
      "to raise the total (`dpqctl budget set %s --epsilon E`)",
      budget.population, query::EpsilonFromUnits(epsilon_units), query::DeltaFromUnits(delta_units),
      budget.epsilon_remaining(), budget.delta_remaining(), budget.population));
}

}  // namespace dpq::store
