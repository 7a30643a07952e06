// The client side of local-DP collections: turns a true value into a randomized report in the
// wire format of dpq.v1.LdpReport (proto/dpq/v1/collection.proto), so that the true value never
// leaves the client. The randomizers are server/dp's exact samplers (pure math, no I/O; shared with
// the server's validation so both follow one definition); randomness from the OS CSPRNG.
#ifndef DPQ_CLIENT_LDP_LDP_RANDOMIZER_H_
#define DPQ_CLIENT_LDP_LDP_RANDOMIZER_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "dpq/v1/collection.pb.h"
#include "server/dp/random_source.h"

namespace dpq::ldp_client {

// A report of `value` (one of collection.domain()) under the collection's mechanism and epsilon.
// INVALID_ARGUMENT when `value` is not in the domain (the message lists the values) or the
// collection's parameters are unusable. `rng`: the CSPRNG by default; tests pass a seeded one.
absl::StatusOr<v1::LdpReport> RandomizeReport(const v1::Collection& collection,
                                              absl::string_view value);
absl::StatusOr<v1::LdpReport> RandomizeReport(const v1::Collection& collection,
                                              absl::string_view value, dp::RandomSource& rng);

}  // namespace dpq::ldp_client

#endif  // DPQ_CLIENT_LDP_LDP_RANDOMIZER_H_
