#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "client/dpqctl/command_table.h"
#include "client/dpqctl/commands.h"
#include "client/dpqctl/json_output.h"
#include "client/dpqctl/rpc_runner.h"
#include "client/dpqctl/text_output.h"
#include "dpq/v1/dpq.grpc.pb.h"

namespace dpqctl {
namespace {

// Calibration is a bisection of up to a few dozen full compositions; with the pld accountant each
// one convolves distributions, so the default deadline is longer than a plain call's.
constexpr double kCalibrateTimeoutSeconds = 120;

}  // namespace

int RunPrice(const GlobalOptions& options, const Output& output, const PriceArgs& args) {
  // The accountant's name, the delta range and the event spec syntax are the server's to judge
  // (the grammar lives in server/dp/accounting/privacy_event.h), with one message per field. Only
  // what cannot be a spec at all is refused here.
  if (args.events.empty()) return ReportUsageError(output, "--event is required (repeatable)");
  for (const std::string& event : args.events) {
    if (event.empty()) return ReportUsageError(output, "--event must not be empty");
  }
  dpq::v1::PriceRequest request;
  request.set_accountant(args.accountant);
  request.set_delta(args.delta);
  for (const std::string& event : args.events) request.add_events(event);
  return RunRpc<dpq::v1::PriceResponse>(
      options, output, kDefaultTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::PriceResponse* response) {
        return dpq::v1::AccountingService::NewStub(channel)->Price(context, request, response);
      },
      PriceResponseToJson, WritePriceText);
}

int RunCalibrate(const GlobalOptions& options, const Output& output, const CalibrateArgs& args) {
  dpq::v1::CalibrateRequest request;
  request.set_accountant(args.accountant);
  request.set_target_epsilon(args.target_epsilon);
  request.set_delta(args.delta);
  request.set_q(args.q);
  request.set_steps(args.steps);
  return RunRpc<dpq::v1::CalibrateResponse>(
      options, output, kCalibrateTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::CalibrateResponse* response) {
        return dpq::v1::AccountingService::NewStub(channel)->Calibrate(context, request, response);
      },
      CalibrateResponseToJson, WriteCalibrateText);
}

// --- command table: privacy arithmetic; no dataset, no ledger, nothing charged ------------------

namespace {

void AddPrice(CLI::App& app, CommandLine& command_line) {
  PriceArgs& price_args = command_line.Keep<PriceArgs>();
  CLI::App* price = app.add_subcommand(
      "price", "the (epsilon, delta) a list of events would cost, without spending anything");
  price->add_option("--accountant", price_args.accountant, "basic, advanced, rdp, zcdp or pld")
      ->required();
  price->add_option("--delta", price_args.delta, "target delta in (0, 1)")
      ->required()
      ->check(kFinite);
  price
      ->add_option(
          "--event", price_args.events,
          "an event (repeatable): laplace:scale=B[,sensitivity=S][,count=N], "
          "gaussian:sigma=S[,sensitivity=S][,count=N], "
          "subsampled-gaussian:q=Q,sigma=Z[,count=N], pure:epsilon=E[,count=N], "
          "approx:epsilon=E,delta=D[,count=N], "
          "discrete-laplace:scale=T,sensitivity=D[,count=N] (T, D in grid steps, D integer)")
      ->required()
      ->allow_extra_args(false);
  command_line.RunWhenParsed(price,
                             [&price_args](const GlobalOptions& options, const Output& output) {
                               return RunPrice(options, output, price_args);
                             });
}

void AddCalibrate(CLI::App& app, CommandLine& command_line) {
  CalibrateArgs& calibrate_args = command_line.Keep<CalibrateArgs>();
  CLI::App* calibrate = app.add_subcommand(
      "calibrate", "the smallest DP-SGD noise multiplier that meets a target epsilon");
  calibrate->add_option("--accountant", calibrate_args.accountant, "rdp, zcdp or pld")->required();
  calibrate->add_option("--target-epsilon", calibrate_args.target_epsilon, "epsilon to meet")
      ->required()
      ->check(kFinite);
  calibrate->add_option("--delta", calibrate_args.delta, "target delta in (0, 1)")
      ->required()
      ->check(kFinite);
  calibrate->add_option("--q", calibrate_args.q, "Poisson sampling rate in (0, 1] (batch / n)")
      ->required()
      ->check(kFinite);
  calibrate->add_option("--steps", calibrate_args.steps, "number of training steps")->required();
  command_line.RunWhenParsed(calibrate,
                             [&calibrate_args](const GlobalOptions& options, const Output& output) {
                               return RunCalibrate(options, output, calibrate_args);
                             });
}

}  // namespace

void RegisterAccountingCommands(CLI::App& app, CommandLine& command_line) {
  AddPrice(app, command_line);
  AddCalibrate(app, command_line);
}

}  // namespace dpqctl
