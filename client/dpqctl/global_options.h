// What every dpqctl command receives: the global flags and where to write.
#ifndef DPQ_CLIENT_DPQCTL_GLOBAL_OPTIONS_H_
#define DPQ_CLIENT_DPQCTL_GLOBAL_OPTIONS_H_

#include <ostream>
#include <string>

namespace dpqctl {

// Exit codes: 0 success, 1 the server (or the transport) refused the call, 2 the command line or
// a local input (CSV file, --tls-ca file) is wrong and nothing was sent.
inline constexpr int kExitOk = 0;
inline constexpr int kExitRpcError = 1;
inline constexpr int kExitUsageError = 2;

// Deadlines in seconds when --timeout is not given.
inline constexpr double kDefaultTimeoutSeconds = 30;
inline constexpr double kDatasetCreateTimeoutSeconds = 600;

struct GlobalOptions {
  std::string server = "127.0.0.1:7777";  // HOST:PORT (--server, env DPQ_SERVER)
  std::string token;                      // bearer token (--token, env DPQ_TOKEN); empty: none sent
  bool json = false;                      // --json: exactly one JSON document on stdout
  double timeout_seconds = 0;             // --timeout; 0: the command's default
  std::string tls_ca_file;                // --tls-ca PEM file; empty: insecure channel
  std::string tls_cert_file;              // --tls-cert: client certificate (mutual TLS)
  std::string tls_key_file;               // --tls-key: its private key
};

struct Output {
  std::ostream& out;  // results (the JSON document with --json)
  std::ostream& err;  // diagnostics
  bool json = false;
  // True only when `err` is the process's stderr and that is a terminal: progress lines are
  // drawn for a person watching, never into a pipe, a file or a test's buffer.
  bool err_is_terminal = false;
};

}  // namespace dpqctl

#endif  // DPQ_CLIENT_DPQCTL_GLOBAL_OPTIONS_H_
