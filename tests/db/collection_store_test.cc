// Local-DP collections against a real database (migration 0011): creation is admin-logged, the
// server refuses raw values, malformed reports and over-limit clients (under concurrency too, the
// limit holds), the tables hold reports only, dpq_scan cannot read them, and estimates come from
// the stored reports.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/collection/collections.h"
#include "server/dp/ldp/local_hashing.h"
#include "server/dp/testing/seeded_random.h"
#include "server/store/admin_log.h"
#include "server/store/collection_store.h"
#include "tests/db/store_test_env.h"

namespace dpq::collection {
namespace {

using dp::ldp::IndexReport;
using dp::ldp::LdpMechanism;
using dp::ldp::OlhReport;
using dp::ldp::UnaryReport;
using ::dpq::testing::IsOk;
using ::dpq::testing::StatusIs;
using ::testing::HasSubstr;

class CollectionStoreTest : public ::dpq::testing::StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    store_ = std::make_unique<store::CollectionStore>(db());
    collections_ = std::make_unique<Collections>(store_.get());
  }

  store::CollectionRecord Create(const std::string& name, LdpMechanism m, int64_t k,
                                 int32_t per_client = 1, double epsilon = 1) {
    store::CollectionSpec spec;
    spec.name = name;
    for (int64_t i = 0; i < k; ++i) spec.domain.push_back(absl::StrCat("v", i));
    spec.epsilon = epsilon;
    spec.mechanism = m;
    spec.reports_per_client = per_client;
    auto c = collections_->Create(spec);
    EXPECT_TRUE(c.ok()) << c.status();
    return *c;
  }
  int64_t Reports() { return std::stoll(Sql("SELECT count(*) FROM ldp_reports")); }

  std::unique_ptr<store::CollectionStore> store_;
  std::unique_ptr<Collections> collections_;
};

TEST_F(CollectionStoreTest, CreateIsAdminLoggedAndNamesAreUnique) {
  store::CollectionSpec spec{"survey", {"yes", "no"}, 1.5, LdpMechanism::kRr, 2};
  const store::AdminAction log{"root", "collection.create", "survey", "mechanism=rr"};
  ASSERT_OK_AND_ASSIGN(store::CollectionRecord c, collections_->Create(spec, &log));
  EXPECT_EQ(c.spec.domain, (std::vector<std::string>{"yes", "no"}));
  EXPECT_EQ(c.spec.epsilon, 1.5);
  EXPECT_EQ(c.spec.mechanism, LdpMechanism::kRr);
  EXPECT_EQ(c.spec.reports_per_client, 2);
  EXPECT_EQ(c.reports, 0);
  store::AdminLog admin_log(db());
  ASSERT_OK_AND_ASSIGN(std::vector<store::AdminLogEntry> entries, admin_log.List());
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].action.action, "collection.create");
  EXPECT_THAT(collections_->Create(spec, &log), StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_EQ(admin_log.List()->size(), 1u);  // the refused create wrote no row
  ASSERT_OK_AND_ASSIGN(std::vector<store::CollectionRecord> all, collections_->List());
  EXPECT_EQ(all.size(), 1u);
  EXPECT_THAT(collections_->Get("nope"), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(CollectionStoreTest, RefusesBadDefinitionsNamingTheField) {
  const auto refusal = [&](store::CollectionSpec spec) {
    return std::string(collections_->Create(spec).status().message());
  };
  EXPECT_THAT(refusal({"Bad Name", {"a", "b"}, 1, LdpMechanism::kKrr, 1}), HasSubstr("name"));
  EXPECT_THAT(refusal({"s", {"a", "b", "c"}, 1, LdpMechanism::kRr, 1}), HasSubstr("domain"));
  EXPECT_THAT(refusal({"s", {"a", "a"}, 1, LdpMechanism::kKrr, 1}), HasSubstr("domain[1]"));
  EXPECT_THAT(refusal({"s", {"a", ""}, 1, LdpMechanism::kKrr, 1}), HasSubstr("domain[1]"));
  EXPECT_THAT(refusal({"s", {"a", "b"}, 0, LdpMechanism::kKrr, 1}), HasSubstr("epsilon"));
  EXPECT_THAT(refusal({"s", {"a", "b"}, 25, LdpMechanism::kOlh, 1}), HasSubstr("epsilon"));
  EXPECT_THAT(refusal({"s", {"a", "b"}, 1, LdpMechanism::kKrr, 0}),
              HasSubstr("reports_per_client"));
  EXPECT_EQ(Sql("SELECT count(*) FROM ldp_collections"), "0");
}

TEST_F(CollectionStoreTest, RefusesRawValuesAndMalformedReportsStoringNothing) {
  Create("k", LdpMechanism::kKrr, 5);
  Create("u", LdpMechanism::kOue, 10);
  Create("h", LdpMechanism::kOlh, 10);  // g = 4
  const auto code = [&](const std::string& name, const dp::ldp::LdpReport& r,
                        const std::string& client = "c1") {
    return collections_->Submit(name, client, r).code();
  };
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_EQ(code("k", dp::ldp::LdpReport()), kInvalid);                 // no report at all
  EXPECT_EQ(code("u", IndexReport{3}), kInvalid);                       // a raw value index for OUE
  EXPECT_EQ(code("h", IndexReport{3}), kInvalid);                       // ... and for OLH
  EXPECT_EQ(code("k", IndexReport{5}), kInvalid);                       // out of the domain
  EXPECT_EQ(code("u", UnaryReport{std::string(1, '\x01')}), kInvalid);  // too short
  EXPECT_EQ(code("u", UnaryReport{std::string("\x00\x04", 2)}), kInvalid);  // padding bit set
  EXPECT_EQ(code("h", OlhReport{7, 4}), kInvalid);                          // hash out of [0, g)
  EXPECT_EQ(code("k", IndexReport{1}, ""), kInvalid);                       // no client id
  EXPECT_EQ(code("k", IndexReport{1}, "has space"), kInvalid);
  EXPECT_EQ(code("nope", IndexReport{1}), absl::StatusCode::kNotFound);
  EXPECT_EQ(Reports(), 0);
  EXPECT_EQ(Sql("SELECT count(*) FROM ldp_clients"), "0");  // refusals count nothing either
}

TEST_F(CollectionStoreTest, StoresTheReportOnlyExactlyAsSent) {
  Create("u", LdpMechanism::kOue, 10);
  Create("h", LdpMechanism::kOlh, 10);
  Create("k", LdpMechanism::kKrr, 3);
  ASSERT_THAT(collections_->Submit("u", "a", UnaryReport{std::string("\x81\x02", 2)}), IsOk());
  ASSERT_THAT(collections_->Submit("h", "a", OlhReport{~uint64_t{0} - 5, 3}), IsOk());
  ASSERT_THAT(collections_->Submit("k", "a", IndexReport{2}), IsOk());
  EXPECT_EQ(Sql("SELECT encode(unary_bits, 'hex') FROM ldp_reports WHERE unary_bits IS NOT NULL"),
            "8102");
  EXPECT_EQ(Sql("SELECT olh_seed || ',' || olh_hashed FROM ldp_reports WHERE olh_seed IS NOT NULL"),
            "-6,3");
  EXPECT_EQ(Sql("SELECT report_index FROM ldp_reports WHERE report_index IS NOT NULL"), "2");
  // Nothing but the report, who sent it and when: no column could hold a true value.
  EXPECT_EQ(Sql("SELECT string_agg(column_name, ',' ORDER BY ordinal_position) "
                "FROM information_schema.columns WHERE table_name = 'ldp_reports'"),
            "id,collection_id,client_id,report_index,unary_bits,olh_seed,olh_hashed,received_at");
  ASSERT_OK_AND_ASSIGN(store::CollectionRecord h, collections_->Get("h"));
  std::vector<dp::ldp::LdpReport> read;
  ASSERT_OK_AND_ASSIGN(int64_t n, store_->ForEachReport(h.id, [&](const dp::ldp::LdpReport& r) {
    read.push_back(r);
  }));
  ASSERT_EQ(n, 1);
  ASSERT_TRUE(absl::holds_alternative<OlhReport>(read[0]));
  EXPECT_EQ(absl::get<OlhReport>(read[0]).seed, ~uint64_t{0} - 5);
  EXPECT_EQ(h.reports, 1);
}

TEST_F(CollectionStoreTest, ConcurrentSubmissionsOfOneClientNeverPassItsLimit) {
  Create("k", LdpMechanism::kKrr, 3, /*per_client=*/3);
  constexpr int kThreads = 8, kEach = 4;
  std::atomic<int> ok{0}, exhausted{0}, other{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        // Every thread submits for the same client, and for a client of its own.
        for (const std::string& client : {std::string("shared"), absl::StrCat("own", t)}) {
          const absl::Status s = collections_->Submit("k", client, IndexReport{1});
          if (s.ok()) {
            ++ok;
          } else if (s.code() == absl::StatusCode::kResourceExhausted) {
            ++exhausted;
          } else {
            ++other;
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(other.load(), 0);
  EXPECT_EQ(ok.load(), 3 + 3 * kThreads);  // the shared client 3, each own client 3
  EXPECT_EQ(exhausted.load(), 2 * kThreads * kEach - ok.load());
  EXPECT_EQ(Sql("SELECT count(*) FROM ldp_reports WHERE client_id = 'shared'"), "3");
  EXPECT_EQ(Sql("SELECT max(reports) FROM ldp_clients"), "3");
  EXPECT_THAT(collections_->Submit("k", "shared", IndexReport{0}),
              StatusIs(absl::StatusCode::kResourceExhausted));
}

TEST_F(CollectionStoreTest, TheScanRoleCannotReadCollections) {
  Create("k", LdpMechanism::kKrr, 3);
  ASSERT_THAT(collections_->Submit("k", "a", IndexReport{0}), IsOk());
  for (const char* table : {"ldp_reports", "ldp_clients", "ldp_collections"}) {
    absl::StatusOr<std::string> r =
        TrySql(absl::StrCat("SET ROLE dpq_scan; SELECT * FROM ", table));
    ASSERT_FALSE(r.ok()) << table;
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("permission denied")) << table;
  }
}

TEST_F(CollectionStoreTest, EstimatesComeFromTheStoredReports) {
  // epsilon 20: krr reports the truth (e^-20 chance otherwise), so the estimate is the count.
  Create("k", LdpMechanism::kKrr, 3, /*per_client=*/1, /*epsilon=*/20);
  dp::SeededRandom rng(11);
  ASSERT_OK_AND_ASSIGN(store::CollectionRecord k, collections_->Get("k"));
  ASSERT_OK_AND_ASSIGN(dp::ldp::FrequencyOracle oracle, OracleOf(k.spec));
  const int counts[3] = {5, 0, 12};
  int client = 0;
  for (int v = 0; v < 3; ++v) {
    for (int i = 0; i < counts[v]; ++i) {
      ASSERT_OK_AND_ASSIGN(dp::ldp::LdpReport r, oracle.Randomize(v, rng));
      ASSERT_THAT(collections_->Submit("k", absl::StrCat("c", client++), r), IsOk());
    }
  }
  ASSERT_OK_AND_ASSIGN(CollectionEstimate e, collections_->Estimate("k", 0.9));
  EXPECT_EQ(e.reports, 17);
  ASSERT_EQ(e.estimates.size(), 3u);
  for (int v = 0; v < 3; ++v) {
    EXPECT_NEAR(e.estimates[v].count, counts[v], 1e-3);
    EXPECT_LE(e.estimates[v].lower, counts[v]);
    EXPECT_GE(e.estimates[v].upper, counts[v]);
  }
  EXPECT_THAT(collections_->Estimate("k", 1.0).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(collections_->Estimate("k", 0.9, absl::InfinitePast()).status(),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
}

}  // namespace
}  // namespace dpq::collection
