#include "server/store/ledger_rows.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/dp/accounting/accountant_kind.h"

namespace dpq::store {

LedgerState LedgerFromRow(const pqxx::row& r) {
  LedgerState ledger;
  BudgetState& b = ledger.budget;
  b.population_id = r[kLedgerPopulationId].as<int64_t>();
  b.population = r[kLedgerPopulationName].as<std::string>();
  absl::StatusOr<dp::accounting::AccountantKind> accountant =
      dp::accounting::ParseAccountantKind(r[kLedgerAccountant].as<std::string>());
  if (!accountant.ok()) throw pqxx::conversion_error(std::string(accountant.status().message()));
  b.accountant = *accountant;
  b.epsilon_total_units = r[kLedgerEpsilonTotal].as<int64_t>();
  b.delta_total_units = r[kLedgerDeltaTotal].as<int64_t>();
  b.epsilon_spent_units = r[kLedgerEpsilonSpent].as<int64_t>();
  b.delta_spent_units = r[kLedgerDeltaSpent].as<int64_t>();
  b.max_query_epsilon_units = r[kLedgerMaxQueryEpsilon].as<int64_t>();
  b.epsilon_preset = r[kLedgerEpsilonPreset].as<std::string>();
  b.per_block = r[kLedgerPerBlock].as<bool>();
  ledger.head_seq = r[kLedgerAuditHeadSeq].as<int64_t>();
  ledger.head_hash = Bytes(r[kLedgerAuditHeadHash]);
  ledger.accountant_state = r[kLedgerAccountantState].as<std::string>();
  return ledger;
}

BudgetState BudgetFromRow(const pqxx::row& r) { return LedgerFromRow(r).budget; }

std::string Bytes(const pqxx::field& f) {
  pqxx::binarystring b(f);
  return b.str();
}

Allocation::Release ReleaseFromRow(const pqxx::row& r, pqxx::row::size_type first) {
  Allocation::Release release;
  release.value = r[first].as<double>();
  release.ci_lower = r[first + 1].as<double>();
  release.ci_upper = r[first + 2].as<double>();
  release.result = r[first + 3].as<std::string>();
  release.hash = Bytes(r[first + 4]);
  return release;
}

Allocation AllocationFromRow(const pqxx::row& r) {
  Allocation a;
  a.seq = r[0].as<int64_t>();
  a.request_id = r[1].as<std::string>();
  a.principal_id = r[2].as<int64_t>();
  a.analyst = r[3].as<std::string>();
  a.created_at = r[4].as<std::string>();
  a.fingerprint = r[5].as<std::string>();
  a.aggregate = r[6].as<std::string>();
  a.column = r[7].as<std::string>();
  a.mechanism = r[8].as<std::string>();
  a.epsilon_units = r[9].as<int64_t>();
  a.delta_units = r[10].as<int64_t>();
  a.sensitivity = r[11].as<double>();
  a.noise_scale = r[12].as<double>();
  a.count_noise_scale = r[13].as<double>();
  a.value = r[14].as<double>();
  a.confidence = r[15].as<double>();
  a.ci_lower = r[16].as<double>();
  a.ci_upper = r[17].as<double>();
  if (!r[18].is_null()) a.clamp_lower = r[18].as<double>();
  if (!r[19].is_null()) a.clamp_upper = r[19].as<double>();
  a.max_contributions = r[20].as<int>();
  a.prev_hash = Bytes(r[21]);
  a.hash = Bytes(r[22]);
  a.events = r[23].as<std::string>();
  a.dataset_version = r[24].as<int64_t>();
  a.result = r[25].as<std::string>();
  a.release_deferred = r[26].as<bool>();
  a.datasets = r[27].as<std::string>();
  a.blocks = r[28].as<std::string>();
  if (r.size() > 29 && !r[29].is_null()) a.release = ReleaseFromRow(r, 29);
  return a;
}

absl::StatusOr<pqxx::row> ReadLedger(pqxx::transaction_base& tx, int64_t population_id, bool lock) {
  pqxx::result r = tx.exec_params(
      absl::StrCat(
          "SELECT ", kBudgetColumns,
          " FROM ledgers l JOIN populations p ON p.id = l.population_id WHERE l.population_id = $1",
          lock ? " FOR UPDATE OF l" : ""),
      population_id);
  if (r.empty())
    return absl::NotFoundError(absl::StrCat("no ledger for dataset id ", population_id));
  return r[0];
}

}  // namespace dpq::store
