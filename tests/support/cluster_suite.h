// A gtest fixture whose suite shares one throwaway PostgreSQL cluster: started before the suite's
// first test, stopped after its last. Each test usually works in a database of its own
// (TestPostgres::CreateDatabase), so tests stay independent without a cluster each (~1.5 s).
#ifndef DPQ_TESTS_SUPPORT_CLUSTER_SUITE_H_
#define DPQ_TESTS_SUPPORT_CLUSTER_SUITE_H_

#include <utility>

#include "gtest/gtest.h"
#include "tests/support/test_postgres.h"

namespace dpq::testing {

class ClusterSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto pg = TestPostgres::Start();
    ASSERT_TRUE(pg.ok()) << pg.status();
    pg_ = std::move(pg).value().release();
  }
  static void TearDownTestSuite() {
    delete pg_;
    pg_ = nullptr;
  }

  // Null when the cluster did not start (SetUpTestSuite reported why).
  static inline TestPostgres* pg_ = nullptr;
};

}  // namespace dpq::testing

#endif  // DPQ_TESTS_SUPPORT_CLUSTER_SUITE_H_
