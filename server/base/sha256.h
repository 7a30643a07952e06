// SHA-256 (FIPS 180-4) through OpenSSL: token hashing and the audit hash chain.
#ifndef DPQ_SERVER_BASE_SHA256_H_
#define DPQ_SERVER_BASE_SHA256_H_

#include <string>

#include "absl/strings/string_view.h"

namespace dpq {

// The 32-byte binary digest of `data`.
std::string Sha256(absl::string_view data);
// Lower-case hex of `bytes`.
std::string ToHex(absl::string_view bytes);

}  // namespace dpq

#endif  // DPQ_SERVER_BASE_SHA256_H_
