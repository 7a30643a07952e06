// Checks of TLS files before dpqd serves (`dpqd --check-config`): gRPC reads them only when the
// first client connects, so a wrong key would otherwise show as handshake failures at run time.
#ifndef DPQ_SERVER_BASE_TLS_FILES_H_
#define DPQ_SERVER_BASE_TLS_FILES_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace dpq {

// OK when `cert_path` holds a PEM certificate (chain) and `key_path` the private key of its first
// certificate; INVALID_ARGUMENT saying which file is wrong otherwise (NOT_FOUND if unreadable).
absl::Status CheckCertificateAndKey(const std::string& cert_path, const std::string& key_path);
// OK when `path` holds at least one PEM certificate; `flag` names the flag in the message.
absl::Status CheckCertificateFile(const std::string& path, absl::string_view flag);

}  // namespace dpq

#endif  // DPQ_SERVER_BASE_TLS_FILES_H_
