#include "client/dpqctl/channel.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"

namespace dpqctl {
namespace internal {
namespace {

// An audit trail grows without bound; the 4 MiB default would cut `dpqctl audit` off at roughly
// 40 000 entries.
constexpr int kMaxReceiveMessageBytes = 256 * 1024 * 1024;

absl::StatusOr<std::string> ReadPemFile(const std::string& path, absl::string_view flag) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": cannot open '", path, "'"));
  }
  std::ostringstream contents;
  contents << file.rdbuf();
  if (file.bad() || contents.str().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": '", path, "' is empty or unreadable"));
  }
  return contents.str();
}

}  // namespace
}  // namespace internal

absl::StatusOr<Connection> Connection::Open(const GlobalOptions& options,
                                            double default_timeout_seconds) {
  if (options.server.empty()) {
    return absl::InvalidArgumentError("--server: the address is empty (expected HOST:PORT)");
  }
  const double timeout =
      options.timeout_seconds == 0 ? default_timeout_seconds : options.timeout_seconds;
  if (!std::isfinite(timeout) || timeout <= 0) {
    return absl::InvalidArgumentError("--timeout: must be a finite number of seconds > 0");
  }

  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together");
  }
  if (!options.tls_cert_file.empty() && options.tls_ca_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls-cert needs --tls-ca (a client certificate is for TLS)");
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (options.tls_ca_file.empty()) {
    credentials = grpc::InsecureChannelCredentials();
  } else {
    absl::StatusOr<std::string> pem = internal::ReadPemFile(options.tls_ca_file, "--tls-ca");
    if (!pem.ok()) return pem.status();
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = *std::move(pem);
    if (!options.tls_cert_file.empty()) {
      absl::StatusOr<std::string> cert = internal::ReadPemFile(options.tls_cert_file, "--tls-cert");
      if (!cert.ok()) return cert.status();
      absl::StatusOr<std::string> key = internal::ReadPemFile(options.tls_key_file, "--tls-key");
      if (!key.ok()) return key.status();
      ssl.pem_cert_chain = *std::move(cert);
      ssl.pem_private_key = *std::move(key);
    }
    credentials = grpc::SslCredentials(ssl);
  }
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(internal::kMaxReceiveMessageBytes);
  return Connection(grpc::CreateCustomChannel(options.server, credentials, arguments),
                    // A token pasted from a file often carries a trailing newline, which is not
                    // a legal metadata character.
                    std::string(absl::StripAsciiWhitespace(options.token)),
                    std::chrono::duration<double>(timeout));
}

void Connection::Prepare(grpc::ClientContext* context) const {
  context->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::duration_cast<std::chrono::system_clock::duration>(timeout_));
  if (!token_.empty()) context->AddMetadata("authorization", absl::StrCat("Bearer ", token_));
}

}  // namespace dpqctl
