#!/usr/bin/python3
"""DP SQL conformance on sharded datasets: the cases of sql_conformance.json that read slid, slidc
or colon, with those three created over two PostgreSQL clusters (east and west, started by this
test; docs/scaling.md, section 6), through the real dpqd and dpqctl. Every answer must equal the
unsharded truth PostgreSQL computes, as in sql_conformance_test.py, whether its scan is pushed
down through postgres_fdw or sent by dpqd to each shard; every refusal must be the same and charge
nothing. Cases on the trial population (its joins) do not read a sharded table and are left to
sql_conformance_test.py.
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pg_cluster  # noqa: E402
import sql_conformance_test as conformance  # noqa: E402  (a module name: its class is not rerun)
import sql_support  # noqa: E402


@sql_support.needs_psql
@unittest.skipUnless(os.geteuid() == 0, "the shard clusters run as the postgres user: run as root")
class ShardedSqlConformanceTest(conformance.SqlConformanceTest):
    SHARDS = ("east", "west")
    PASSWORD = "e2e-Conformance-pw-3310"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.shard_clusters = []
        for name in cls.SHARDS:
            cluster = pg_cluster.start_shard_cluster(
                cls.make_class_temp_dir("dpq-shard-%s-" % name), "shard_user", cls.PASSWORD)
            cls.addClassCleanup(cluster.stop)
            cls.shard_clusters.append(cluster)

    def add_shards(self):
        for name, cluster in zip(self.SHARDS, self.shard_clusters):
            # A fresh coordinator numbers its datasets from 1 again: clear the shard's tables.
            cluster.psql("DROP SCHEMA IF EXISTS dpq_shard CASCADE")
            self.dpqd.ctl("shard", "add", name, "--url",
                          "postgresql://shard_user:%s@/dpq?host=%s&port=%d"
                          % (self.PASSWORD, cluster.socket_dir, cluster.port))

    def selected_cases(self):
        cases = [c for c in self.document["cases"]
                 if " JOIN " not in c["sql"].upper() and reads_sharded_table(c)]
        self.assertGreaterEqual(sum(1 for c in cases if "error" not in c), 200)
        return cases


def reads_sharded_table(case):
    try:
        return conformance.ledger_of(case) in ("slid", "slidc", "colon")
    except AssertionError:  # a case naming no dataset (a refusal)
        return False


if __name__ == "__main__":
    unittest.main()
