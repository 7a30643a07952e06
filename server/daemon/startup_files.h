// The files dpqd reads at start-up besides its database: the TLS certificate, key and client CA,
// and the bootstrap admin token.
#ifndef DPQ_SERVER_DAEMON_STARTUP_FILES_H_
#define DPQ_SERVER_DAEMON_STARTUP_FILES_H_

#include <memory>
#include <string>

#include <grpcpp/security/server_credentials.h>

#include "absl/status/statusor.h"

namespace dpq::daemon {

// PEM files; all empty: plaintext. The messages name the flags that set them (--tls-cert, ...).
struct TlsFiles {
  std::string cert;       // certificate chain; goes with `key`
  std::string key;        // private key of `cert`
  std::string client_ca;  // CA certificate(s) every client's certificate must be signed by
};

// Plaintext credentials without files, else TLS ones read from them (mutual TLS with a client
// CA). INVALID_ARGUMENT for a cert without a key or the reverse, or a client CA without both;
// NOT_FOUND for a file that cannot be read. The contents are not checked here
// (base/tls_files.h does that for --check-config).
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentialsFromFiles(
    const TlsFiles& files);

// The bootstrap admin token: the contents of `token_file` when it is given, else `token_from_env`
// ($DPQ_ADMIN_TOKEN), trimmed; empty when neither is set. INVALID_ARGUMENT when shorter than 16
// characters, NOT_FOUND when the file cannot be read.
absl::StatusOr<std::string> BootstrapAdminToken(const std::string& token_file,
                                                const std::string& token_from_env);

}  // namespace dpq::daemon

#endif  // DPQ_SERVER_DAEMON_STARTUP_FILES_H_
