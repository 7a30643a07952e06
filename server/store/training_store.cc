#include "server/store/training_store.h"

#include <pqxx/pqxx>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "server/base/status_macros.h"
#include "server/store/ledger_rows.h"

namespace dpq::store {
namespace {

// Read from "training_runs r JOIN datasets d ON d.id = r.dataset_id".
constexpr char kRunColumns[] =
    "r.id, r.dataset_id, r.name, r.principal_id, r.analyst, r.sampling_rate, r.noise_multiplier, "
    "r.delta_units, r.target_epsilon, r.planned_steps, "
    "to_char(r.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), d.name";
constexpr char kRunTables[] = "training_runs r JOIN datasets d ON d.id = r.dataset_id";

TrainingRunRecord RunFromRow(const pqxx::row& r) {
  TrainingRunRecord run;
  run.id = r[0].as<int64_t>();
  run.dataset_id = r[1].as<int64_t>();
  run.name = r[2].as<std::string>();
  run.principal_id = r[3].as<int64_t>();
  run.analyst = r[4].as<std::string>();
  run.sampling_rate = r[5].as<double>();
  run.noise_multiplier = r[6].as<double>();
  run.delta_units = r[7].as<int64_t>();
  if (!r[8].is_null()) run.target_epsilon = r[8].as<double>();
  if (!r[9].is_null()) run.planned_steps = r[9].as<int64_t>();
  run.created_at = r[10].as<std::string>();
  run.dataset = r[11].as<std::string>();
  return run;
}

constexpr char kFingerprintPrefix[] = "training-v1|run=";

// The step count of a report's fingerprint; written only by TrainingReportFingerprint.
absl::StatusOr<int64_t> StepsOfFingerprint(const std::string& fingerprint) {
  const size_t at = fingerprint.rfind("|steps=");
  int64_t steps = 0;
  if (at == std::string::npos || !absl::SimpleAtoi(fingerprint.substr(at + 7), &steps) ||
      steps < 1) {
    return absl::InternalError("a training report's audit fingerprint has no step count");
  }
  return steps;
}

}  // namespace

std::string TrainingReportFingerprint(int64_t run_id, int64_t steps) {
  return absl::StrCat(kFingerprintPrefix, run_id, "|steps=", steps);
}

absl::StatusOr<TrainingRunRecord> TrainingStore::Create(TrainingRunRecord run) {
  RETURN_IF_ERROR(db_->Run("start training run", [&](pqxx::connection& c) -> absl::Status {
    pqxx::work tx(c);
    const pqxx::result r = tx.exec_params(
        absl::StrCat("INSERT INTO training_runs (dataset_id, name, principal_id, analyst, "
                     "sampling_rate, noise_multiplier, delta_units, target_epsilon, planned_steps) "
                     "VALUES ($1, $2, $3, $4, $5, $6, $7, NULLIF($8, '')::double precision, "
                     "NULLIF($9, '')::bigint) "
                     "ON CONFLICT (name) DO NOTHING RETURNING id"),
        run.dataset_id, run.name, run.principal_id, run.analyst, run.sampling_rate,
        run.noise_multiplier, run.delta_units,
        run.target_epsilon ? ExactDouble(*run.target_epsilon) : std::string(),
        run.planned_steps ? absl::StrCat(*run.planned_steps) : std::string());
    if (r.empty()) {
      return absl::AlreadyExistsError(
          absl::StrCat("run ", run.name, " already exists; choose another --run name"));
    }
    run = RunFromRow(tx.exec_params(
        absl::StrCat("SELECT ", kRunColumns, " FROM ", kRunTables, " WHERE r.id = $1"),
        r[0][0].as<int64_t>())[0]);
    tx.commit();
    return absl::OkStatus();
  }));
  return run;
}

absl::StatusOr<TrainingRunRecord> TrainingStore::Find(const std::string& name) {
  absl::optional<TrainingRunRecord> run;
  RETURN_IF_ERROR(db_->Run("find training run", [&](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    const pqxx::result r = tx.exec_params(
        absl::StrCat("SELECT ", kRunColumns, " FROM ", kRunTables, " WHERE r.name = $1"), name);
    if (!r.empty()) run = RunFromRow(r[0]);
    return absl::OkStatus();
  }));
  if (!run.has_value()) {
    return absl::NotFoundError(absl::StrCat("no training run ", name,
                                            "; start it with `dpqctl training start DATASET --run ",
                                            name, " ...`"));
  }
  return *run;
}

absl::StatusOr<std::vector<TrainingRunRecord>> TrainingStore::List(
    int64_t dataset_id, absl::optional<int64_t> principal_id) {
  std::vector<TrainingRunRecord> out;
  RETURN_IF_ERROR(db_->Run("list training runs", [&](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    const pqxx::result r =
        tx.exec_params(absl::StrCat("SELECT ", kRunColumns, " FROM ", kRunTables,
                                    " WHERE r.dataset_id = $1 "
                                    "AND ($2 = 0 OR r.principal_id = $2) ORDER BY r.name"),
                       dataset_id, principal_id.value_or(0));
    for (const pqxx::row& row : r) out.push_back(RunFromRow(row));
    return absl::OkStatus();
  }));
  return out;
}

absl::StatusOr<TrainingProgress> TrainingStore::Progress(const TrainingRunRecord& run) {
  TrainingProgress p;
  absl::Status parsed = absl::OkStatus();
  RETURN_IF_ERROR(db_->Run("read training progress", [&](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    // Rows of this run only: the name filter uses the index, the fingerprint pins the run id (a
    // dataset's run names are unique, but the id is what the report was charged for).
    const pqxx::result r = tx.exec_params(
        "SELECT fingerprint, epsilon_units, delta_units FROM audit WHERE population_id = "
        "(SELECT population_id FROM datasets WHERE id = $1) "
        "AND aggregate = 'training' AND column_name = $2 AND starts_with(fingerprint, $3)",
        run.dataset_id, run.name, absl::StrCat(kFingerprintPrefix, run.id, "|"));
    for (const pqxx::row& row : r) {
      absl::StatusOr<int64_t> steps = StepsOfFingerprint(row[0].as<std::string>());
      if (!steps.ok()) {
        parsed = steps.status();
        break;
      }
      p.steps += *steps;
      p.reports += 1;
      p.epsilon_units += row[1].as<int64_t>();
      p.delta_units += row[2].as<int64_t>();
    }
    return absl::OkStatus();
  }));
  RETURN_IF_ERROR(parsed);
  return p;
}

absl::StatusOr<ChargeContext> TrainingStore::ReadChargeContext(int64_t population_id,
                                                               int64_t principal_id) {
  absl::optional<ChargeContext> out;
  RETURN_IF_ERROR(db_->Run("read ledger for training", [&](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    const pqxx::result r = tx.exec_params(
        absl::StrCat("SELECT ", kBudgetColumns,
                     ", g.epsilon_cap_units - g.epsilon_spent_units, "
                     "g.delta_cap_units - g.delta_spent_units "
                     "FROM ledgers l JOIN populations p ON p.id = l.population_id "
                     "LEFT JOIN population_caps g ON g.population_id = l.population_id "
                     "AND g.principal_id = $2 WHERE l.population_id = $1"),
        population_id, principal_id);
    if (r.empty()) return absl::OkStatus();
    LedgerState ledger = LedgerFromRow(r[0]);
    ChargeContext ctx;
    ctx.budget = std::move(ledger.budget);
    ctx.accountant_state = std::move(ledger.accountant_state);
    const pqxx::field epsilon_cap_left = r[0][kLedgerColumnCount];
    const pqxx::field delta_cap_left = r[0][kLedgerColumnCount + 1];
    if (!epsilon_cap_left.is_null()) {
      ctx.epsilon_cap_remaining_units = epsilon_cap_left.as<int64_t>();
    }
    if (!delta_cap_left.is_null()) ctx.delta_cap_remaining_units = delta_cap_left.as<int64_t>();
    out = std::move(ctx);
    return absl::OkStatus();
  }));
  if (!out.has_value())
    return absl::NotFoundError(absl::StrCat("no ledger for population id ", population_id));
  return *out;
}

}  // namespace dpq::store
