#include "server/dp/secure_random.h"

#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace dpq::dp {
namespace {

TEST(SecureRandomTest, DrawsDoNotRepeat) {
  std::set<uint64_t> seen;
  for (int i = 0; i < 10000; ++i) seen.insert(SecureRandom().NextUint64());
  EXPECT_EQ(seen.size(), 10000u);  // a 64-bit collision has probability ~3e-12
}

TEST(SecureRandomTest, ThreadsGetDistinctStreams) {
  std::vector<std::vector<uint64_t>> out(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&out, t] {
      for (int i = 0; i < 1000; ++i) out[t].push_back(SecureRandom().NextUint64());
    });
  }
  for (auto& th : threads) th.join();
  std::set<uint64_t> all;
  for (const auto& v : out) all.insert(v.begin(), v.end());
  EXPECT_EQ(all.size(), 4000u);
}

TEST(SecureRandomTest, BitsAreBalanced) {
  int ones = 0;
  const int words = 20000;
  for (int i = 0; i < words; ++i) ones += __builtin_popcountll(SecureRandom().NextUint64());
  // 1,280,000 fair bits: standard deviation 566; 6 sigma.
  EXPECT_NEAR(ones, words * 32, 6 * 566);
}

}  // namespace
}  // namespace dpq::dp
