// Test helpers for dpqctl: run the whole CLI in-process and capture its output.
#ifndef DPQ_CLIENT_DPQCTL_TESTING_CLI_RUNNER_H_
#define DPQ_CLIENT_DPQCTL_TESTING_CLI_RUNNER_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <initializer_list>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"

#include "client/dpqctl/cli.h"
#include "nlohmann/json.hpp"

namespace dpqctl::testing {

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
  nlohmann::json JsonOut() const { return nlohmann::json::parse(out); }
  std::string ErrorMessage() const {
    return JsonOut().at("error").at("message").get<std::string>();
  }
};

// Runs `dpqctl ARGS...` through RunCli (argv[0] is added).
inline CliResult RunDpqctl(std::vector<std::string> args) {
  args.insert(args.begin(), "dpqctl");
  std::vector<const char*> argv;
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  std::ostringstream out, err;
  CliResult result;
  result.exit_code = RunCli(static_cast<int>(argv.size()), argv.data(), out, err);
  result.out = out.str();
  result.err = err.str();
  return result;
}

// Writes `contents` to a new file under /tmp and returns its path.
inline std::string WriteTempFile(const std::string& contents) {
  char path[] = "/tmp/dpqctl_test_XXXXXX";
  int fd = mkstemp(path);
  close(fd);
  std::ofstream(path, std::ios::binary) << contents;
  return path;
}

// A temp file removed at the end of the scope.
struct TempFile {
  explicit TempFile(const std::string& contents) : path(WriteTempFile(contents)) {}
  ~TempFile() { std::remove(path.c_str()); }
  std::string path;
};

// A loopback port nothing listens on: bind an ephemeral one, then release it.
inline std::string ClosedAddress() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  socklen_t length = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return "127.0.0.1:" + std::to_string(ntohs(address.sin_port));
}

// An in-process gRPC server on a free loopback port serving `services` (recording test doubles of
// dpqd's services, for checking what dpqctl sends; the e2e tests run the real dpqd). Shut down
// when destroyed. server() is null if it could not start.
class LoopbackServer {
 public:
  explicit LoopbackServer(std::initializer_list<grpc::Service*> services) {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    for (grpc::Service* service : services) builder.RegisterService(service);
    server_ = builder.BuildAndStart();
    address_ = "127.0.0.1:" + std::to_string(port);
  }
  ~LoopbackServer() {
    if (server_) server_->Shutdown();
  }
  grpc::Server* server() const { return server_.get(); }
  const std::string& address() const { return address_; }

 private:
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
};

}  // namespace dpqctl::testing

#endif  // DPQ_CLIENT_DPQCTL_TESTING_CLI_RUNNER_H_
