#include "server/daemon/startup_files.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "server/base/status_macros.h"

namespace dpq::daemon {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentialsFromFiles(
    const TlsFiles& files) {
  const std::string& cert = files.cert;
  const std::string& key = files.key;
  if (cert.empty() != key.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together");
  }
  const std::string& client_ca = files.client_ca;
  if (!client_ca.empty() && cert.empty()) {
    return absl::InvalidArgumentError("--tls-client-ca needs --tls-cert and --tls-key");
  }
  if (cert.empty()) return grpc::InsecureServerCredentials();
  // With TLS configured the one listening port speaks only TLS: a plaintext client fails the
  // handshake and never reaches a handler.
  grpc::SslServerCredentialsOptions options(
      client_ca.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                        : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  ASSIGN_OR_RETURN(std::string cert_pem, ReadFile(cert));
  ASSIGN_OR_RETURN(std::string key_pem, ReadFile(key));
  options.pem_key_cert_pairs.push_back({key_pem, cert_pem});
  if (!client_ca.empty()) {
    ASSIGN_OR_RETURN(options.pem_root_certs, ReadFile(client_ca));
  }
  return grpc::SslServerCredentials(options);
}

absl::StatusOr<std::string> BootstrapAdminToken(const std::string& token_file,
                                                const std::string& token_from_env) {
  std::string token;
  if (!token_file.empty()) {
    ASSIGN_OR_RETURN(token, ReadFile(token_file));
  } else {
    token = token_from_env;
  }
  token = std::string(absl::StripAsciiWhitespace(token));
  if (!token.empty() && token.size() < 16) {
    return absl::InvalidArgumentError("the admin token must be at least 16 characters");
  }
  return token;
}

}  // namespace dpq::daemon
