// Production randomness: a CSPRNG backed by OpenSSL RAND_bytes (the OpenSSL 3 default DRBG,
// reseeded from the OS), buffered per thread.
//
// Thread-safe: every thread draws from its own buffer. Fork-safe: a child process discards the
// buffer inherited from its parent (pthread_atfork), so parent and child never share bits.
// If RAND_bytes fails the process aborts: releasing a value without secure noise is never an option.
#ifndef DPQ_SERVER_DP_SECURE_RANDOM_H_
#define DPQ_SERVER_DP_SECURE_RANDOM_H_

#include "server/dp/random_source.h"

namespace dpq::dp {

// The process-wide CSPRNG. The returned object is stateless (all state is thread-local) and lives
// for the whole process.
RandomSource& SecureRandom();

}  // namespace dpq::dp

#endif  // DPQ_SERVER_DP_SECURE_RANDOM_H_
