// RecentCallers: which principals a Query call may be admitted on without a lookup, for how long,
// and that each comes back marked for confirmation.
#include "server/engine/recent_callers.h"

#include "gtest/gtest.h"
#include "server/engine/recent_schemas.h"

namespace dpq::engine {
namespace {

store::Principal Analyst(int64_t id, const std::string& name) {
  return store::Principal{id, name, store::Role::kAnalyst, ""};
}

TEST(RecentCallersTest, ARememberedAnalystComesBackWithItsTokenToConfirmUntilTheTtlEnds) {
  RecentCallers callers(absl::Seconds(30));
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  EXPECT_FALSE(callers.Find("h1", t0).has_value());
  callers.Remember("h1", Analyst(7, "ann"), t0);
  absl::optional<store::Principal> p = callers.Find("h1", t0 + absl::Seconds(29));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->id, 7);
  EXPECT_EQ(p->name, "ann");
  EXPECT_EQ(p->token_to_confirm, "h1");
  EXPECT_FALSE(callers.Find("h1", t0 + absl::Seconds(30)).has_value());
  EXPECT_FALSE(callers.Find("h1", t0 - absl::Seconds(1)).has_value());  // a clock stepped back
  EXPECT_FALSE(callers.Find("h2", t0).has_value());
}

TEST(RecentCallersTest, AdminsAreNeverRemembered) {
  RecentCallers callers;
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  callers.Remember("h", store::Principal{1, "root", store::Role::kAdmin, ""}, t0);
  EXPECT_FALSE(callers.Find("h", t0).has_value());
}

TEST(RecentCallersTest, AFullMapIsEmptiedBeforeTheNextEntry) {
  RecentCallers callers(absl::Seconds(30), /*capacity=*/2);
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  callers.Remember("a", Analyst(1, "a"), t0);
  callers.Remember("b", Analyst(2, "b"), t0);
  callers.Remember("c", Analyst(3, "c"), t0);
  EXPECT_FALSE(callers.Find("a", t0).has_value());
  EXPECT_FALSE(callers.Find("b", t0).has_value());
  EXPECT_TRUE(callers.Find("c", t0).has_value());
}

TEST(RecentSchemasTest, TheLastSchemaPerNameIsKeptAndAFullMapIsEmptied) {
  RecentSchemas schemas(/*capacity=*/2);
  query::DatasetSchema a;
  a.name = "a";
  a.version = 1;
  EXPECT_EQ(schemas.Find("a"), nullptr);
  schemas.Remember(a);
  a.version = 2;
  schemas.Remember(a);
  ASSERT_NE(schemas.Find("a"), nullptr);
  EXPECT_EQ(schemas.Find("a")->version, 2);
  query::DatasetSchema b = a, c = a;
  b.name = "b";
  c.name = "c";
  schemas.Remember(b);
  schemas.Remember(c);
  EXPECT_EQ(schemas.Find("a"), nullptr);
  EXPECT_NE(schemas.Find("c"), nullptr);
}

}  // namespace
}  // namespace dpq::engine
