// Invariant checks for the fuzz targets: a failed check prints what broke and aborts, which
// libFuzzer (and the corpus replay) reports as a crash with the input that caused it.
#ifndef DPQ_TESTS_FUZZ_FUZZ_CHECK_H_
#define DPQ_TESTS_FUZZ_FUZZ_CHECK_H_

#include <cstdio>
#include <cstdlib>

#define DPQ_FUZZ_CHECK(cond, ...)                                                       \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      std::fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                                \
      std::fprintf(stderr, "\n");                                                       \
      std::abort();                                                                     \
    }                                                                                   \
  } while (0)

#endif  // DPQ_TESTS_FUZZ_FUZZ_CHECK_H_
