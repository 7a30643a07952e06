#include "server/store/ledger_accounting.h"

#include <cmath>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "server/base/status_macros.h"
#include "server/dp/accounting/accountant.h"
#include "server/query/privacy_units.h"

namespace dpq::store {
namespace {

using dp::accounting::Accountant;
using dp::accounting::AccountantKind;

// The accountant whose state a ledger keeps: a pld ledger composes adaptive queries with the RDP
// filter (PLD composition is not a valid filter; accountant.h), and a declared batch reaches it as
// one ApproxDp event priced by PLD.
AccountantKind FilterAccountant(AccountantKind ledger_accountant) {
  return ledger_accountant == AccountantKind::kPld ? AccountantKind::kRdp : ledger_accountant;
}

absl::StatusOr<std::unique_ptr<Accountant>> Load(AccountantKind ledger_accountant,
                                                 const std::string& state) {
  const AccountantKind accountant = FilterAccountant(ledger_accountant);
  if (state.empty()) return dp::accounting::CreateAccountant(accountant);
  ASSIGN_OR_RETURN(auto loaded, Accountant::Deserialize(state));
  if (loaded->kind() != accountant) {
    return absl::InternalError(absl::StrCat("ledger state belongs to accountant ", loaded->name(),
                                            ", the ledger says ", AccountantName(accountant)));
  }
  return loaded;
}

// Units of a converted epsilon, rounded up so the ledger never shows less than the bound; +inf or
// anything beyond the largest budget maps to a value no budget admits.
int64_t CeilEpsilonUnits(double epsilon) {
  if (!(epsilon <= query::kMaxEpsilonBudget)) return INT64_MAX;
  return static_cast<int64_t>(std::ceil(static_cast<long double>(epsilon) * 1e12L));
}

absl::StatusOr<double> EpsilonAt(const Accountant& accountant, int64_t delta_total_units) {
  if (delta_total_units <= 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("the ", accountant.name(), " accountant needs a delta budget > 0"));
  }
  // The largest double not above the delta budget: a smaller delta only raises epsilon.
  return accountant.Epsilon(query::MechanismDelta(delta_total_units));
}

}  // namespace

absl::StatusOr<ComposedState> ComposeCharge(const BudgetState& budget, const std::string& state,
                                            const std::string& events) {
  ASSIGN_OR_RETURN(std::unique_ptr<Accountant> accountant, Load(budget.accountant, state));
  for (absl::string_view spec : absl::StrSplit(events, ';', absl::SkipEmpty())) {
    ASSIGN_OR_RETURN(dp::accounting::PrivacyEvent event, dp::accounting::ParsePrivacyEvent(spec));
    RETURN_IF_ERROR(accountant->Compose(event));
  }
  ASSIGN_OR_RETURN(double epsilon, EpsilonAt(*accountant, budget.delta_total_units));
  const int64_t units = std::max(CeilEpsilonUnits(epsilon), budget.epsilon_spent_units);
  if (units > budget.epsilon_total_units) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "privacy budget of population %s exhausted: with this query the %s accountant proves "
        "epsilon=%.12g at delta=%.3g, over the budget epsilon=%.12g; ask for less, or ask an admin "
        "to raise the total (`dpqctl budget set %s --epsilon E`)",
        budget.population, AccountantName(budget.accountant), epsilon, budget.delta_total(),
        budget.epsilon_total(), budget.population));
  }
  return ComposedState{accountant->SerializeState(), units, budget.delta_total_units};
}

absl::StatusOr<int64_t> SpentEpsilonUnits(AccountantKind accountant, const std::string& state,
                                          int64_t delta_total_units) {
  if (state.empty()) return 0;
  ASSIGN_OR_RETURN(std::unique_ptr<Accountant> loaded, Load(accountant, state));
  ASSIGN_OR_RETURN(double epsilon, EpsilonAt(*loaded, delta_total_units));
  return CeilEpsilonUnits(epsilon);
}

}  // namespace dpq::store
