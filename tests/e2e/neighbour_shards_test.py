#!/usr/bin/python3
"""The neighbour-differential suite (neighbour_test.py) on sharded datasets: D and its neighbours
D' = D + one adversarial person, each created with `--shards east,west` over two PostgreSQL
clusters started here (docs/scaling.md, section 6), through the real dpqd, dpqctl and gRPC. The
same grid of ~365 requests (flags, DP SQL, batches, plans, replays, per-unit queries) runs on each;
every observable but the noisy values must be the same, whether a request's scan is pushed down
through postgres_fdw or sent by dpqd to each shard.

Three neighbours, chosen for what sharding could change and bounded for CI's time: values near
DBL_MAX (the clamps on the shards' SQL), the NULL unit (hashed to one shard like any other id), and
2000 rows of 1e308 for one person (a per-person sum before its clamp, on whichever shard holds
them). neighbour_test.py runs all eleven on one server; the db test
NeighbouringShardedDatasetsDifferOnlyInTheNoisyValues runs every flag shape on sharded neighbours.
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import neighbour_test as suite  # noqa: E402  (a module name: its test classes are not rerun)
import pg_cluster  # noqa: E402

SHARDS = ("east", "west")
PASSWORD = "e2e-Neighbour-pw-7719"
VARIANTS = ("huge", "nullunit", "manyhuge")


@unittest.skipUnless(os.geteuid() == 0, "the shard clusters run as the postgres user: run as root")
class ShardedNeighbourTest(harness.DpqdTestCase):

    @classmethod
    def setUpClass(cls):
        cls.dpqd = cls.new_class_dpqd()
        for name in SHARDS:
            cluster = pg_cluster.start_shard_cluster(
                cls.make_class_temp_dir("dpq-shard-%s-" % name), "shard_user", PASSWORD)
            cls.addClassCleanup(cluster.stop)
            cls.dpqd.ctl("shard", "add", name, "--url",
                         "postgresql://shard_user:%s@/dpq?host=%s&port=%d"
                         % (PASSWORD, cluster.socket_dir, cluster.port))
        suite.load_and_run_grid(cls, ["nb_base"] + ["nb_" + v for v in VARIANTS],
                                ["--shards", ",".join(SHARDS)])

    compare_with_base = suite.NeighbourTest.compare_with_base

    def test_every_dataset_is_sharded(self):
        for name in self.loaded:
            self.assertEqual(self.dpqd.ctl("dataset", "show", name)["shards"], list(SHARDS))

    def test_sharded_neighbour_values_near_dbl_max_and_int64_limits(self):
        self.compare_with_base("huge")

    def test_sharded_neighbour_the_null_unit(self):
        self.compare_with_base("nullunit")

    def test_sharded_neighbour_2000_rows_of_1e308_for_one_unit(self):
        self.compare_with_base("manyhuge")


if __name__ == "__main__":
    unittest.main()
