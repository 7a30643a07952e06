#include "server/engine/training_engine.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "server/base/database_failure.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"
#include "server/dp/accounting/accountant.h"
#include "server/query/privacy_units.h"
#include "server/store/debit_admission.h"
#include "server/store/ledger_accounting.h"
#include "server/training/step_pricing.h"

namespace dpq::engine {
namespace {

using dp::accounting::AccountantKind;

// The accountant z is calibrated with, so that ONE report of all the planned steps costs at most
// the target on this ledger: its own accountant for rdp/zcdp, PLD for the others (a report there is
// charged min(RDP, PLD) <= PLD; step_pricing.h).
AccountantKind CalibrationAccountant(AccountantKind ledger_accountant) {
  return training::LedgerComposesSteps(ledger_accountant) ? ledger_accountant
                                                          : AccountantKind::kPld;
}

// Whether a report of `charge` fits the ledger and the cap now (the Debit's own admission rule,
// without the lock: a figure for display; Debit decides).
absl::StatusOr<bool> ChargeFits(const store::ChargeContext& ctx,
                                const training::StepCharge& charge) {
  if (ctx.epsilon_cap_remaining_units && charge.epsilon_units > *ctx.epsilon_cap_remaining_units)
    return false;
  if (ctx.delta_cap_remaining_units && charge.delta_units > *ctx.delta_cap_remaining_units)
    return false;
  if (ctx.budget.accountant == AccountantKind::kBasic) {
    return charge.epsilon_units <= ctx.budget.epsilon_remaining_units() &&
           charge.delta_units <= ctx.budget.delta_remaining_units();
  }
  absl::StatusOr<store::ComposedState> composed =
      store::ComposeCharge(ctx.budget, ctx.accountant_state, charge.events);
  if (composed.ok()) return true;
  if (composed.status().code() == absl::StatusCode::kResourceExhausted) return false;
  return composed.status();
}

}  // namespace

training::RunSpec SpecOf(const store::TrainingRunRecord& run) {
  return training::RunSpec{run.sampling_rate, run.noise_multiplier,
                           query::DeltaFromUnits(run.delta_units)};
}

absl::StatusOr<TrainingRunStatus> TrainingEngine::StartRun(const store::Principal& principal,
                                                           const TrainingRunRequest& request,
                                                           absl::Time deadline) {
  // A public table has no people and no ledger: a run on it is refused as a query of it is.
  ASSIGN_OR_RETURN(query::DatasetSchema schema,
                   queries_->QueriedDataset(principal, request.dataset));
  RETURN_IF_ERROR(training::ValidateRunName(request.name));
  if (schema.per_block_budget) {
    // A training run's steps read every row, in no time block of their own: they cannot pay per
    // block (time_blocks.h).
    return absl::FailedPreconditionError(absl::StrCat(
        "population ", schema.population,
        " has a budget per time block; a training run reads every block and cannot be paid per "
        "block: train on a dataset of a population with one budget"));
  }
  ASSIGN_OR_RETURN(store::BudgetState budget, ledger_->Get(schema.population_id));
  store::TrainingRunRecord run;
  run.dataset_id = schema.id;
  run.name = request.name;
  run.principal_id = principal.id;
  run.analyst = principal.name;
  run.sampling_rate = request.sampling_rate;
  ASSIGN_OR_RETURN(run.delta_units, query::DeltaToUnits(request.delta, "delta"));
  if (request.noise_multiplier == 0 && (request.target_epsilon != 0 || request.steps != 0)) {
    if (!(request.target_epsilon > 0 && request.target_epsilon <= query::kMaxEpsilon)) {
      return absl::InvalidArgumentError(absl::StrCat("target_epsilon must be in (0, ",
                                                     query::kMaxEpsilon,
                                                     "] to calibrate the noise multiplier"));
    }
    RETURN_IF_ERROR(training::ValidateReportSteps(request.steps));
    // Validates q and delta before the search (z is a placeholder within range).
    RETURN_IF_ERROR(training::ValidateRunSpec({request.sampling_rate, 1.0, request.delta}));
    ASSIGN_OR_RETURN(
        run.noise_multiplier,
        dp::accounting::CalibrateNoiseMultiplier(
            CalibrationAccountant(budget.accountant), request.target_epsilon,
            query::MechanismDelta(run.delta_units), request.sampling_rate, request.steps));
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          "the call's deadline passed while calibrating the noise multiplier; nothing was "
          "registered: retry with a longer --timeout");
    }
    run.noise_multiplier = std::max(run.noise_multiplier, training::kMinNoiseMultiplier);
    run.target_epsilon = request.target_epsilon;
    run.planned_steps = request.steps;
  } else {
    if (request.target_epsilon != 0 || request.steps != 0) {
      return absl::InvalidArgumentError(
          "give either noise_multiplier, or target_epsilon and steps to calibrate it, not both");
    }
    run.noise_multiplier = request.noise_multiplier;
  }
  RETURN_IF_ERROR(training::ValidateRunSpec(SpecOf(run)));
  ASSIGN_OR_RETURN(run, runs_->Create(std::move(run)));
  // As in ReportSteps: the PLD search for steps_left is left to GetRun.
  return StatusOf(principal, schema, std::move(run),
                  training::LedgerComposesSteps(budget.accountant));
}

absl::StatusOr<TrainingEngine::OwnedRun> TrainingEngine::OwnRun(const store::Principal& principal,
                                                                const std::string& dataset,
                                                                const std::string& name) {
  RETURN_IF_ERROR(training::ValidateRunName(name));
  ASSIGN_OR_RETURN(store::TrainingRunRecord run, runs_->Find(name));
  if (!dataset.empty() && dataset != run.dataset) {
    return absl::NotFoundError(absl::StrCat("run ", name, " is not a run of dataset ", dataset,
                                            "; leave the dataset out or name the run's own"));
  }
  ASSIGN_OR_RETURN(query::DatasetSchema schema,
                   queries_->AuthorizedDataset(principal, run.dataset));
  if (principal.role != store::Role::kAdmin && run.principal_id != principal.id) {
    return absl::PermissionDeniedError(
        absl::StrCat("run ", name, " belongs to another analyst; start a run of your own"));
  }
  return OwnedRun{std::move(schema), std::move(run)};
}

absl::StatusOr<StepReportOutcome> TrainingEngine::ReportSteps(const store::Principal& principal,
                                                              const std::string& dataset,
                                                              const std::string& name,
                                                              int64_t steps, std::string request_id,
                                                              absl::Time deadline) {
  ASSIGN_OR_RETURN(OwnedRun owned, OwnRun(principal, dataset, name));
  const query::DatasetSchema& schema = owned.schema;
  store::TrainingRunRecord& run = owned.run;
  RETURN_IF_ERROR(training::ValidateReportSteps(steps));
  RETURN_IF_ERROR(ValidateRequestId(request_id));
  if (request_id.empty()) {
    request_id = absl::StrFormat("t-%016x%016x", rng_->NextUint64(), rng_->NextUint64());
  }
  // The charge needs the ledger's accountant, a public setting that changes only while nothing is
  // spent (BudgetLedger::Set). Should it change between this read and the Debit's lock, the charge
  // is still valid: basic reads the nominal (epsilon, delta) of the K steps, the others compose
  // either the steps or an (epsilon, delta) event, each a valid bound for the report.
  ASSIGN_OR_RETURN(store::BudgetState before, ledger_->Get(schema.population_id));
  ASSIGN_OR_RETURN(training::StepCharge charge,
                   training::PriceStepReport(before.accountant, SpecOf(run), steps));
  store::Allocation a;
  a.request_id = request_id;
  a.principal_id = principal.id;
  a.analyst = principal.name;
  a.fingerprint = store::TrainingReportFingerprint(run.id, steps);
  a.aggregate = "training";
  a.column = run.name;
  a.mechanism = absl::StrCat("dp-sgd/", charge.method);
  a.epsilon_units = charge.epsilon_units;
  a.delta_units = charge.delta_units;
  a.sensitivity = run.sampling_rate;  // q: the audit row records the declared step parameters
  a.noise_scale = run.noise_multiplier;
  a.events = charge.events;
  a.dataset_version = schema.version;
  a.datasets = schema.name;
  if (absl::Now() >= deadline) {
    return absl::DeadlineExceededError(
        "the call's deadline passed while pricing the report; nothing was charged: retry (with the "
        "same request_id) and a longer --timeout");
  }
  absl::StatusOr<store::DebitResult> debited = ledger_->Debit(schema.population_id, std::move(a));
  // A debit in doubt (or lost) is resolved by a retry with this id: the caller must learn it,
  // also when the server drew it.
  if (!debited.ok()) debited = WithRequestId(debited.status(), request_id);
  if (debited.status().code() == absl::StatusCode::kResourceExhausted) {
    // The ledger's message speaks of queries; the trainer must learn that it has to stop.
    return absl::ResourceExhaustedError(
        absl::StrCat("step report refused, nothing charged: stop training run ", run.name, " (",
                     debited.status().message(), ")"));
  }
  ASSIGN_OR_RETURN(store::DebitResult debit, std::move(debited));
  if (debit.replayed && debit.allocation.principal_id != principal.id) {
    return store::RequestIdTaken(request_id);
  }
  StepReportOutcome out;
  out.allocation = std::move(debit.allocation);
  out.replayed = debit.replayed;
  // steps_left on pld/basic/advanced ledgers is a search over PLD prices (seconds): left to GetRun.
  ASSIGN_OR_RETURN(out.status, StatusOf(principal, schema, std::move(run),
                                        training::LedgerComposesSteps(before.accountant)));
  return out;
}

absl::StatusOr<TrainingRunStatus> TrainingEngine::GetRun(const store::Principal& principal,
                                                         const std::string& dataset,
                                                         const std::string& name,
                                                         absl::Time deadline) {
  ASSIGN_OR_RETURN(OwnedRun owned, OwnRun(principal, dataset, name));
  return StatusOf(principal, owned.schema, std::move(owned.run), /*with_steps_left=*/true,
                  deadline);
}

absl::StatusOr<std::vector<TrainingRunStatus>> TrainingEngine::ListRuns(
    const store::Principal& principal, const std::string& dataset) {
  ASSIGN_OR_RETURN(query::DatasetSchema schema, queries_->AuthorizedDataset(principal, dataset));
  ASSIGN_OR_RETURN(std::vector<store::TrainingRunRecord> runs,
                   runs_->List(schema.id, principal.role == store::Role::kAdmin
                                              ? absl::nullopt
                                              : absl::optional<int64_t>(principal.id)));
  std::vector<TrainingRunStatus> out;
  for (store::TrainingRunRecord& run : runs) {
    ASSIGN_OR_RETURN(TrainingRunStatus s, StatusOf(principal, schema, std::move(run), false));
    out.push_back(std::move(s));
  }
  return out;
}

absl::StatusOr<TrainingRunStatus> TrainingEngine::StatusOf(const store::Principal& principal,
                                                           const query::DatasetSchema& schema,
                                                           store::TrainingRunRecord run,
                                                           bool with_steps_left,
                                                           absl::Time deadline) {
  TrainingRunStatus s;
  s.dataset = schema.name;
  ASSIGN_OR_RETURN(s.progress, runs_->Progress(run));
  ASSIGN_OR_RETURN(store::ChargeContext ctx,
                   runs_->ReadChargeContext(schema.population_id, principal.id));
  s.accountant = ctx.budget.accountant;
  s.budget = ctx.budget;
  const training::RunSpec spec = SpecOf(run);
  if (training::LedgerComposesSteps(s.accountant)) {
    // The ledger composed the steps themselves: the run's epsilon is that of all its steps.
    ASSIGN_OR_RETURN(s.epsilon, training::RunEpsilon(s.accountant, spec, s.progress.steps));
  } else {
    // Each report was one (epsilon, delta) event, composed basically: their sum is the run's cost.
    s.epsilon = query::EpsilonFromUnits(s.progress.epsilon_units);
  }
  if (with_steps_left) {
    ASSIGN_OR_RETURN(s.steps_left, training::StepsLeft(
                                       s.accountant, spec,
                                       [&](const training::StepCharge& c) -> absl::StatusOr<bool> {
                                         if (absl::Now() >= deadline) {
                                           return absl::DeadlineExceededError(
                                               "the call's deadline passed while searching the "
                                               "steps left; retry with a longer --timeout");
                                         }
                                         return ChargeFits(ctx, c);
                                       }));
  } else {
    s.steps_left = -1;
  }
  s.run = std::move(run);
  return s;
}

}  // namespace dpq::engine
