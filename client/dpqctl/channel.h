// The gRPC channel and per-call context for dpqctl: insecure by default, TLS with a given root
// certificate (--tls-ca), the bearer token as `authorization: Bearer <token>` metadata (see the
// authentication note in proto/dpq/v1/dpq.proto), and a deadline on every call.
#ifndef DPQ_CLIENT_DPQCTL_CHANNEL_H_
#define DPQ_CLIENT_DPQCTL_CHANNEL_H_

#include <chrono>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "client/dpqctl/global_options.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"

namespace dpqctl {

class Connection {
 public:
  // `default_timeout_seconds` applies when options.timeout_seconds is 0. INVALID_ARGUMENT when
  // the --tls-ca file cannot be read or is empty, the server address is empty, or the timeout is
  // not a finite positive number. Opening does not connect: errors reaching the server surface on
  // the first call (UNAVAILABLE).
  static absl::StatusOr<Connection> Open(const GlobalOptions& options,
                                         double default_timeout_seconds);

  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }

  // Sets the deadline (now + timeout) and the authorization metadata (when a token is set) on a
  // context that has not been used yet.
  void Prepare(grpc::ClientContext* context) const;

 private:
  Connection(std::shared_ptr<grpc::Channel> channel, std::string token,
             std::chrono::duration<double> timeout)
      : channel_(std::move(channel)), token_(std::move(token)), timeout_(timeout) {}

  std::shared_ptr<grpc::Channel> channel_;
  std::string token_;
  std::chrono::duration<double> timeout_;
};

}  // namespace dpqctl

#endif  // DPQ_CLIENT_DPQCTL_CHANNEL_H_
