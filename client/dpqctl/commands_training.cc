// dpqctl training start | step | show | list: DP-SGD runs charged to a dataset's ledger
// (proto/dpq/v1/training.proto). Epsilons print to 4 significant digits (the accountants agree with
// the references to ~1e-3 at best); --json carries the full doubles.
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "client/dpqctl/command_table.h"
#include "client/dpqctl/commands.h"
#include "client/dpqctl/json_output.h"
#include "client/dpqctl/rpc_runner.h"
#include "client/dpqctl/text_output.h"
#include "dpq/v1/training.grpc.pb.h"

namespace dpqctl {
namespace {

// A report on a pld or basic ledger prices its steps by PLD, and `steps left` is a search over
// such prices: longer than a plain call.
constexpr double kTrainingTimeoutSeconds = 120;

std::string Eps(double v) { return FormatSignificant(v, 4); }

nlohmann::json RunToJson(const dpq::v1::TrainingRun& r) {
  return {
      {"dataset", r.dataset()},
      {"run", r.run()},
      {"analyst", r.analyst()},
      {"sampling_rate", r.sampling_rate()},
      {"noise_multiplier", r.noise_multiplier()},
      {"delta", r.delta()},
      {"target_epsilon",
       r.target_epsilon() > 0 ? nlohmann::json(r.target_epsilon()) : nlohmann::json(nullptr)},
      {"planned_steps",
       r.planned_steps() > 0 ? nlohmann::json(r.planned_steps()) : nlohmann::json(nullptr)},
      {"created_at", r.created_at()},
      {"accountant", r.accountant()},
      {"steps", r.steps()},
      {"reports", r.reports()},
      {"epsilon", r.epsilon()},
      {"epsilon_charged", r.epsilon_charged()},
      {"delta_charged", r.delta_charged()},
      {"steps_left", r.steps_left()},
      {"budget_epsilon_remaining", r.budget_epsilon_remaining()},
      {"budget_delta_remaining", r.budget_delta_remaining()},
  };
}

void WriteRunText(std::ostream& out, const dpq::v1::TrainingRun& r) {
  std::vector<std::vector<std::string>> rows = {
      {"run", absl::StrCat(r.run(), " (dataset ", r.dataset(), ", analyst ", r.analyst(), ")")},
      {"sampling rate", FormatSignificant(r.sampling_rate(), 6)},
      {"noise multiplier",
       r.target_epsilon() > 0
           ? absl::StrCat(FormatSignificant(r.noise_multiplier(), 6), " (calibrated: epsilon ",
                          FormatNumber(r.target_epsilon()), " after ", r.planned_steps(), " steps)")
           : FormatSignificant(r.noise_multiplier(), 6)},
      {"delta", FormatNumber(r.delta())},
      {"ledger", absl::StrCat(r.accountant(), " accountant")},
      {"steps",
       absl::StrCat(r.steps(), " in ", r.reports(), r.reports() == 1 ? " report" : " reports")},
      {"epsilon so far", absl::StrCat(Eps(r.epsilon()), " at delta ", FormatNumber(r.delta()))},
      {"steps left",
       r.steps_left() < 0
           ? std::string("not computed here (see `dpqctl training show --run ") + r.run() + "`)"
           : absl::StrCat(r.steps_left() >= 1000000 ? "at least " : "", r.steps_left(),
                          " (in one report, within the budget and your cap)")},
      {"budget left", absl::StrCat("epsilon ", Eps(r.budget_epsilon_remaining()), ", delta ",
                                   FormatNumber(r.budget_delta_remaining()))},
  };
  for (const auto& row : rows) {
    out << row[0] << ':' << std::string(18 - row[0].size(), ' ') << row[1] << '\n';
  }
}

}  // namespace

int RunTrainingStart(const GlobalOptions& options, const Output& output,
                     const TrainingStartArgs& args) {
  if (args.noise_multiplier == 0 && (args.target_epsilon == 0 || args.steps == 0)) {
    return ReportUsageError(
        output, "give --noise-multiplier Z, or --target-epsilon E with --steps N to calibrate it");
  }
  dpq::v1::StartRunRequest request;
  request.set_dataset(args.dataset);
  request.set_run(args.run);
  request.set_sampling_rate(args.sampling_rate);
  request.set_noise_multiplier(args.noise_multiplier);
  request.set_delta(args.delta);
  request.set_target_epsilon(args.target_epsilon);
  request.set_steps(args.steps);
  return RunRpc<dpq::v1::TrainingRun>(
      options, output, kTrainingTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::TrainingRun* response) {
        return dpq::v1::TrainingService::NewStub(channel)->StartRun(context, request, response);
      },
      RunToJson, WriteRunText);
}

int RunTrainingStep(const GlobalOptions& options, const Output& output,
                    const TrainingStepArgs& args) {
  dpq::v1::ReportStepsRequest request;
  request.set_dataset(args.dataset);
  request.set_run(args.run);
  request.set_steps(args.steps);
  request.set_request_id(args.request_id);
  return RunRpc<dpq::v1::ReportStepsResponse>(
      options, output, kTrainingTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::ReportStepsResponse* response) {
        return dpq::v1::TrainingService::NewStub(channel)->ReportSteps(context, request, response);
      },
      [](const dpq::v1::ReportStepsResponse& r) -> nlohmann::json {
        return {{"run", RunToJson(r.run())}, {"request_id", r.request_id()}, {"seq", r.seq()},
                {"epsilon", r.epsilon()},    {"delta", r.delta()},           {"method", r.method()},
                {"replayed", r.replayed()}};
      },
      [&](std::ostream& out, const dpq::v1::ReportStepsResponse& r) {
        out << "charged:           epsilon " << Eps(r.epsilon()) << ", delta "
            << FormatNumber(r.delta()) << " for " << args.steps << " steps (" << r.method()
            << ", audit row " << r.seq() << ", request " << r.request_id() << ')'
            << (r.replayed() ? "; replayed: nothing charged now" : "") << '\n';
        WriteRunText(out, r.run());
      });
}

int RunTrainingShow(const GlobalOptions& options, const Output& output, const std::string& dataset,
                    const std::string& run) {
  dpq::v1::GetRunRequest request;
  request.set_dataset(dataset);
  request.set_run(run);
  return RunRpc<dpq::v1::TrainingRun>(
      options, output, kTrainingTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::TrainingRun* response) {
        return dpq::v1::TrainingService::NewStub(channel)->GetRun(context, request, response);
      },
      RunToJson, WriteRunText);
}

int RunTrainingList(const GlobalOptions& options, const Output& output,
                    const std::string& dataset) {
  dpq::v1::ListRunsRequest request;
  request.set_dataset(dataset);
  return RunRpc<dpq::v1::ListRunsResponse>(
      options, output, kDefaultTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::ListRunsResponse* response) {
        return dpq::v1::TrainingService::NewStub(channel)->ListRuns(context, request, response);
      },
      [](const dpq::v1::ListRunsResponse& r) -> nlohmann::json {
        nlohmann::json runs = nlohmann::json::array();
        for (const auto& run : r.runs()) runs.push_back(RunToJson(run));
        return {{"runs", runs}};
      },
      [](std::ostream& out, const dpq::v1::ListRunsResponse& r) {
        if (r.runs().empty()) {
          out << "no training runs\n";
          return;
        }
        std::vector<std::vector<std::string>> rows;
        for (const auto& run : r.runs()) {
          rows.push_back({run.run(), run.analyst(), FormatSignificant(run.sampling_rate(), 4),
                          FormatSignificant(run.noise_multiplier(), 4), FormatNumber(run.delta()),
                          absl::StrCat(run.steps()), Eps(run.epsilon())});
        }
        WriteTable(out, {"RUN", "ANALYST", "Q", "Z", "DELTA", "STEPS", "EPSILON"}, rows);
      });
}

// --- command table: DP-SGD runs charged to a dataset's ledger -----------------------------------

namespace {

void AddTrainingStart(CLI::App* training, CommandLine& command_line) {
  TrainingStartArgs& start_args = command_line.Keep<TrainingStartArgs>();
  CLI::App* start = training->add_subcommand(
      "start", "declare a run (sampling rate, noise multiplier, delta); charges nothing");
  start->add_option("dataset", start_args.dataset, "dataset the model trains on")->required();
  start->add_option("--run", start_args.run, "run name (unique)")->required();
  start
      ->add_option("--sampling-rate", start_args.sampling_rate,
                   "Poisson sampling rate q in (0, 1] (expected batch size / units)")
      ->required()
      ->check(kFinite);
  CLI::Option* noise_multiplier_option =
      start
          ->add_option("--noise-multiplier", start_args.noise_multiplier,
                       "noise multiplier z (noise std / clipping norm)")
          ->check(kFinite);
  start->add_option("--delta", start_args.delta, "delta the run's epsilon is reported at")
      ->required()
      ->check(kFinite);
  CLI::Option* target_epsilon_option =
      start
          ->add_option("--target-epsilon", start_args.target_epsilon,
                       "calibrate z so that --steps steps cost at most this epsilon")
          ->check(kFinite)
          ->excludes(noise_multiplier_option);
  start->add_option("--steps", start_args.steps, "planned steps (with --target-epsilon)")
      ->needs(target_epsilon_option);
  command_line.RunWhenParsed(start,
                             [&start_args](const GlobalOptions& options, const Output& output) {
                               return RunTrainingStart(options, output, start_args);
                             });
}

void AddTrainingStep(CLI::App* training, CommandLine& command_line) {
  TrainingStepArgs& step_args = command_line.Keep<TrainingStepArgs>();
  CLI::App* step = training->add_subcommand(
      "step", "report (and pay for) steps; refused with nothing charged when over budget: stop");
  step->add_option("dataset", step_args.dataset, "the run's dataset (optional)");
  step->add_option("--run", step_args.run, "run name")->required();
  step->add_option("--steps", step_args.steps, "steps to charge (1..1000000)")->required();
  step->add_option("--request-id", step_args.request_id,
                   "idempotency key: a retried report with the same id is charged once");
  command_line.RunWhenParsed(step,
                             [&step_args](const GlobalOptions& options, const Output& output) {
                               return RunTrainingStep(options, output, step_args);
                             });
}

void AddTrainingShowAndList(CLI::App* training, CommandLine& command_line) {
  struct ShowFlags {
    std::string dataset, run;
  };
  ShowFlags& show_flags = command_line.Keep<ShowFlags>();
  CLI::App* show = training->add_subcommand(
      "show", "a run's steps, epsilon so far and the steps left in the budget");
  show->add_option("dataset", show_flags.dataset, "the run's dataset (optional)");
  show->add_option("--run", show_flags.run, "run name")->required();
  command_line.RunWhenParsed(
      show, [&show_flags](const GlobalOptions& options, const Output& output) {
        return RunTrainingShow(options, output, show_flags.dataset, show_flags.run);
      });
  std::string& list_dataset = command_line.Keep<std::string>();
  CLI::App* list = training->add_subcommand("list", "your runs on a dataset (admin: every run)");
  list->add_option("dataset", list_dataset, "dataset name")->required();
  command_line.RunWhenParsed(list,
                             [&list_dataset](const GlobalOptions& options, const Output& output) {
                               return RunTrainingList(options, output, list_dataset);
                             });
}

}  // namespace

void RegisterTrainingCommands(CLI::App& app, CommandLine& command_line) {
  CLI::App* training =
      app.add_subcommand("training", "DP-SGD training runs charged to a dataset's budget");
  training->require_subcommand(1);
  AddTrainingStart(training, command_line);
  AddTrainingStep(training, command_line);
  AddTrainingShowAndList(training, command_line);
}

}  // namespace dpqctl
