#include "server/base/listen_address.h"

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace dpq {

bool IsLoopbackAddress(absl::string_view address) {
  if (absl::StartsWith(address, "unix:")) return true;
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos) return false;
  const absl::string_view host = address.substr(0, colon);
  if (host == "localhost" || host == "[::1]") return true;
  // 127.x.y.z: four decimal octets, the first 127.
  std::vector<absl::string_view> octets = absl::StrSplit(host, '.');
  if (octets.size() != 4) return false;
  for (absl::string_view o : octets) {
    int v = 0;
    if (o.empty() || o.size() > 3 || !absl::SimpleAtoi(o, &v) || v < 0 || v > 255) return false;
  }
  return octets[0] == "127";
}

}  // namespace dpq
