#include <memory>
#include <string>

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

}  // namespace dpqctl
