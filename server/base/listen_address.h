// Listen addresses: whether one only accepts local connections.
#ifndef DPQ_SERVER_BASE_LISTEN_ADDRESS_H_
#define DPQ_SERVER_BASE_LISTEN_ADDRESS_H_

#include "absl/strings/string_view.h"

namespace dpq {

// True for host:port addresses reachable only from this machine: 127.0.0.0/8, [::1], localhost,
// and unix: sockets. False for 0.0.0.0, [::], any other host, and anything unparsable (the safe
// answer when the question is "may plaintext be fine here?").
bool IsLoopbackAddress(absl::string_view address);

}  // namespace dpq

#endif  // DPQ_SERVER_BASE_LISTEN_ADDRESS_H_
