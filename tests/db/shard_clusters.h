// Throwaway shard servers for the db tests of shards (shard_store_test, sharded_dataset_test):
// each its own cluster, whose user shard_user logs in with a password (scram-sha-256), as
// postgres_fdw requires for a role that is not a superuser (dpq_scan). Everyone else keeps the
// cluster's trust.
#ifndef DPQ_TESTS_DB_SHARD_CLUSTERS_H_
#define DPQ_TESTS_DB_SHARD_CLUSTERS_H_

#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "tests/support/test_postgres.h"

namespace dpq::testing {

inline constexpr char kShardPassword[] = "Sh4rd-pw-7731";

inline absl::StatusOr<std::unique_ptr<TestPostgres>> StartShardCluster() {
  ASSIGN_OR_RETURN(std::unique_ptr<TestPostgres> shard, TestPostgres::Start());
  RETURN_IF_ERROR(
      shard
          ->Query(absl::StrCat("CREATE ROLE shard_user LOGIN PASSWORD '", kShardPassword,
                               "'; GRANT CREATE ON DATABASE dpq TO shard_user"))
          .status());
  const std::string hba = shard->server().pg_data_dir() + "/pg_hba.conf";
  std::stringstream old;
  old << std::ifstream(hba).rdbuf();
  std::ofstream(hba) << "local all shard_user scram-sha-256\n" << old.str();
  RETURN_IF_ERROR(shard->Query("SELECT pg_reload_conf()").status());
  return shard;
}

// postgresql://user[:password]@/dpq?host=<socket dir>&port=5432 (shard_url.h).
inline std::string ShardClusterUrl(TestPostgres& shard, const std::string& user,
                                   const std::string& password) {
  return absl::StrCat("postgresql://", user, password.empty() ? "" : ":", password,
                      "@/dpq?host=", shard.server().socket_dir(), "&port=5432");
}

}  // namespace dpq::testing

#endif  // DPQ_TESTS_DB_SHARD_CLUSTERS_H_
