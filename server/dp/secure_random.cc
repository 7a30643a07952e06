#include "server/dp/secure_random.h"

#include <pthread.h>

#include <array>
#include <atomic>
#include <cstdint>

#include <openssl/rand.h>

#include "absl/base/internal/raw_logging.h"

namespace dpq::dp {
namespace {

// Bumped in every forked child so that thread-local buffers copied from the parent are refilled
// instead of replaying bits the parent also uses.
std::atomic<uint64_t> fork_generation{0};

void OnForkChild() { fork_generation.fetch_add(1, std::memory_order_relaxed); }

// 512 words (4 KiB) per RAND_bytes call amortises the DRBG call overhead while keeping
// little unused randomness in memory.
constexpr int kBufferWords = 512;

struct ThreadBuffer {
  std::array<uint64_t, kBufferWords> words;
  int next = kBufferWords;  // empty
  uint64_t generation = 0;
};

class OpenSslRandom final : public RandomSource {
 public:
  OpenSslRandom() { pthread_atfork(nullptr, nullptr, &OnForkChild); }

  uint64_t NextUint64() override {
    thread_local ThreadBuffer buffer;
    const uint64_t generation = fork_generation.load(std::memory_order_relaxed);
    if (buffer.next == kBufferWords || buffer.generation != generation) {
      if (RAND_bytes(reinterpret_cast<unsigned char*>(buffer.words.data()), sizeof(buffer.words)) !=
          1) {
        ABSL_RAW_LOG(FATAL, "RAND_bytes failed; refusing to continue without secure randomness");
      }
      buffer.next = 0;
      buffer.generation = generation;
    }
    const uint64_t value = buffer.words[buffer.next];
    buffer.words[buffer.next] = 0;  // do not keep used noise bits around
    ++buffer.next;
    return value;
  }
};

}  // namespace

RandomSource& SecureRandom() {
  static OpenSslRandom* const instance = new OpenSslRandom();
  return *instance;
}

}  // namespace dpq::dp
