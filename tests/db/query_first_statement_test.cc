// A query's first statement (engine/query_lookup.cc): the schema, the grant, a remembered caller's
// token and the result-cache probe in one round trip. A revoked or rotated token is refused there
// and charged nothing; the probe it makes answers a repeated query exactly as the separate probe
// would, and never across dataset versions.
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/base/sha256.h"
#include "server/engine/query_engine.h"
#include "server/query/join_source.h"
#include "tests/db/engine_test_env.h"
#include "tests/support/status_matchers.h"

namespace dpq::engine {
namespace {

using ::dpq::testing::IsOk;
using ::dpq::testing::StatusIs;
using ::testing::HasSubstr;

// The separate probe, counted: a query whose first statement probed never calls it.
class CountingCache : public store::ResultCache {
 public:
  using store::ResultCache::ResultCache;
  absl::StatusOr<absl::optional<store::CacheHit>> Probe(
      int64_t population_id, const std::string& fingerprint, int64_t dataset_version,
      int64_t principal_id, const std::string& own_request_id) override {
    ++probes;
    return store::ResultCache::Probe(population_id, fingerprint, dataset_version, principal_id,
                                     own_request_id);
  }
  int probes = 0;
};

class QueryFirstStatementTest : public ::dpq::testing::EngineTest {
 protected:
  QueryFirstStatementTest() : EngineTest(20261206) {}

  void SetUp() override {
    EngineTest::SetUp();
    if (HasFatalFailure()) return;
    counting_ = std::make_unique<CountingCache>(db());
    engine_ = std::make_unique<QueryEngine>(
        QueryEngine::Stores{datasets_.get(), principals_.get(), ledger_.get(), scanner_.get(),
                            counting_.get()},
        &rng_);
    ASSERT_OK_AND_ASSIGN(store::CreatedDataset ds, CreateTinyDataset("people", 20));
    schema_ = ds.schema;
    population_ = ds.schema.population_id;
    ASSERT_OK(ledger_->Set(population_, 1000000000000000, 1000000000000000));
    ASSERT_OK_AND_ASSIGN(ann_, CreatePrincipal("ann"));
    ASSERT_OK(principals_->Grant("ann", "people"));
    remembered_ann_ = ann_;
    remembered_ann_.token_to_confirm = Sha256("token-of-ann");  // CreatePrincipal's token
  }

  static query::QuerySpec Count(double epsilon, const std::string& dataset = "people") {
    query::QuerySpec s;
    s.dataset = dataset;
    s.aggregate = query::AggregateKind::kCount;
    s.epsilon = epsilon;
    return s;
  }

  int64_t AuditRows() {
    return std::stoll(
        Sql(absl::StrCat("SELECT count(*) FROM audit WHERE population_id = ", population_)));
  }

  std::unique_ptr<CountingCache> counting_;
  query::DatasetSchema schema_;
  int64_t population_ = 0;
  store::Principal ann_, remembered_ann_;
};

TEST_F(QueryFirstStatementTest, ARevokedRememberedCallerIsRefusedAndChargedNothing) {
  ASSERT_THAT(engine_->Run(remembered_ann_, Count(1), ""), IsOk());
  ASSERT_EQ(AuditRows(), 1);
  const int64_t spent = ledger_->Get(population_)->epsilon_spent();

  ASSERT_OK(principals_->Revoke("ann"));
  EXPECT_THAT(engine_->Run(remembered_ann_, Count(2), ""),
              StatusIs(absl::StatusCode::kUnauthenticated, HasSubstr("unknown or revoked token")));
  EXPECT_THAT(engine_->Run(remembered_ann_, Count(1), ""),  // a cache hit is an answer too
              StatusIs(absl::StatusCode::kUnauthenticated));
  // The token is refused before the dataset is known not to exist.
  EXPECT_THAT(engine_->Run(remembered_ann_, Count(1, "missing"), ""),
              StatusIs(absl::StatusCode::kUnauthenticated));
  // A join confirms the token before it reads any table (the unknown one comes first here).
  query::QuerySpec joined = Count(1);
  query::JoinRequest join;
  join.tables = {{"missing", "m"}, {"people", "p"}};
  join.on = {{0, "uid", 1, "uid"}};
  joined.join = std::make_shared<query::JoinRequest>(join);
  EXPECT_THAT(engine_->Run(remembered_ann_, joined, ""),
              StatusIs(absl::StatusCode::kUnauthenticated));
  EXPECT_EQ(AuditRows(), 1);
  EXPECT_EQ(ledger_->Get(population_)->epsilon_spent(), spent);
  // For a remembered analyst whose token is live, the same two requests are NOT_FOUND.
  ASSERT_OK_AND_ASSIGN(store::Principal bob, CreatePrincipal("bob"));
  store::Principal remembered_bob = bob;
  remembered_bob.token_to_confirm = Sha256("token-of-bob");
  EXPECT_THAT(engine_->Run(remembered_bob, Count(1, "missing"), ""),
              StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(engine_->Run(remembered_bob, joined, ""), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(QueryFirstStatementTest, ARotatedTokenIsRefusedOnTheNextQuery) {
  ASSERT_THAT(engine_->Run(remembered_ann_, Count(1), ""), IsOk());
  ASSERT_OK(principals_->RotateToken("ann", Sha256("new token")).status());
  EXPECT_THAT(engine_->Run(remembered_ann_, Count(2), ""),
              StatusIs(absl::StatusCode::kUnauthenticated));
  EXPECT_EQ(AuditRows(), 1);
  store::Principal rotated = ann_;
  rotated.token_to_confirm = Sha256("new token");
  EXPECT_THAT(engine_->Run(rotated, Count(2), ""), IsOk());
}

TEST_F(QueryFirstStatementTest, TheFirstStatementsProbeAnswersARepeatedQueryButNotAcrossVersions) {
  // No schema remembered yet: the fingerprint is unknown before the schema, so the first query
  // probes on its own.
  ASSERT_OK_AND_ASSIGN(QueryOutcome first, engine_->Run(remembered_ann_, Count(1), ""));
  EXPECT_FALSE(first.cached);
  EXPECT_EQ(counting_->probes, 1);
  // The same question again: the first statement's probe finds the answer.
  ASSERT_OK_AND_ASSIGN(QueryOutcome again, engine_->Run(remembered_ann_, Count(1), ""));
  EXPECT_TRUE(again.cached);
  EXPECT_EQ(again.allocation.value, first.allocation.value);
  // Another question probes in the first statement too, and misses.
  ASSERT_OK_AND_ASSIGN(QueryOutcome other, engine_->Run(remembered_ann_, Count(2), ""));
  EXPECT_FALSE(other.cached);
  EXPECT_EQ(counting_->probes, 1);
  EXPECT_EQ(AuditRows(), 2);

  // New rows: the version the statement reads is the new one, so the old answer is no hit.
  ASSERT_OK(AppendFromCsv(schema_, "uid,x\n99,1.5\n").status());
  ASSERT_OK_AND_ASSIGN(QueryOutcome after, engine_->Run(remembered_ann_, Count(1), ""));
  EXPECT_FALSE(after.cached);
  ASSERT_OK_AND_ASSIGN(QueryOutcome after_again, engine_->Run(remembered_ann_, Count(1), ""));
  EXPECT_TRUE(after_again.cached);
  EXPECT_EQ(after_again.allocation.value, after.allocation.value);
  EXPECT_EQ(AuditRows(), 3);

  // A caller's own request id is looked up first, then probed on its own, as before.
  ASSERT_OK_AND_ASSIGN(QueryOutcome own, engine_->Run(ann_, Count(1), "my-id"));
  EXPECT_TRUE(own.cached);
  EXPECT_GT(counting_->probes, 1);
}

}  // namespace
}  // namespace dpq::engine
