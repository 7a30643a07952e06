#!/usr/bin/python3
"""End-to-end: the shard registry (docs/scaling.md, "Shard servers").

The real dpqd (embedded PostgreSQL: the coordinator) and a second PostgreSQL cluster run by this
test (tests/e2e/pg_cluster.py) as the shard, whose user logs in with a password. Through the real
dpqctl: `shard add` (URL from a file), `shard list` (aligned text and --json), `status`, the
metrics (dpq_shard_up 1, then 0 once the shard is stopped), the status page, `shard remove`; an
analyst is refused every shard command; the password shows in no output and no log line. And a
dataset sharded over two shard clusters, created, queried and dropped through dpqctl.
"""

import os
import sys
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import pg_cluster  # noqa: E402

PASSWORD = "e2e-Shard-pw-5521"
PROBE_WAIT_S = 30  # the background probe runs every 5 s; each probe takes at most ~2 s


@unittest.skipUnless(os.geteuid() == 0, "the shard cluster runs as the postgres user: run as root")
class ShardTest(harness.DpqdTestCase):

    def setUp(self):
        self.shard = self.start_shard_cluster()
        self.dpqd = self.new_dpqd()

    def start_shard_cluster(self):
        shard = pg_cluster.start_shard_cluster(self.make_temp_dir("dpq-shard-"), "shard_user",
                                               PASSWORD)
        self.addCleanup(shard.stop)
        return shard

    def url(self, password=PASSWORD, shard=None):
        shard = shard or self.shard
        return "postgresql://shard_user:%s@/dpq?host=%s&port=%d" % (
            password, shard.socket_dir, shard.port)

    def url_file(self, password=PASSWORD):
        path = os.path.join(self.make_temp_dir(), "shard.url")
        with open(path, "w") as f:
            f.write(self.url(password) + "\n")
        return path

    def shard_up_values(self):
        return harness.metric_values(self.dpqd.metrics(), "dpq_shard_up", shard="east")

    def test_add_list_status_metrics_down_and_remove(self):
        added = self.dpqd.ctl("shard", "add", "east", "--url-file", self.url_file())
        self.assertEqual(added["name"], "east")
        self.assertEqual(added["host"], self.shard.socket_dir)
        self.assertEqual(added["user"], "shard_user")
        self.assertTrue(added["up"], added["probe_error"])
        self.assertTrue(added["server_version"].startswith("15."), added["server_version"])

        text = self.dpqd.ctl_text("shard", "list")
        self.assertTrue(text.endswith("\n"))
        lines = text.splitlines()
        self.assertEqual(len(lines), 2, text)
        self.assertEqual(lines[0].split(), ["SHARD", "ADDRESS", "DATABASE", "VERSION", "STATE",
                                            "PROBE"])
        self.assertEqual(lines[1].split()[:5], ["east", "%s:%d" % (self.shard.socket_dir,
                                                                   self.shard.port),
                                                "dpq", added["server_version"], "up"])
        # Aligned: each column starts at the same offset in the header and the row.
        self.assertEqual(lines[0].index("STATE"), lines[1].index("up"))
        listed = self.dpqd.ctl("shard", "list")["shards"]
        self.assertEqual([s["name"] for s in listed], ["east"])
        self.assertEqual(listed[0]["state"], "up")

        status = self.dpqd.ctl("status")
        self.assertEqual([(s["name"], s["state"]) for s in status["shards"]], [("east", "up")])
        self.assertIn("east", self.dpqd.ctl_text("status"))

        harness.wait_until(lambda: self.shard_up_values() == [1], PROBE_WAIT_S, "dpq_shard_up 1")
        exposition = self.dpqd.scrape()
        self.assert_promtool_accepts(exposition)
        self.assertEqual(len(harness.metric_values(harness.parse_metrics(exposition),
                                                   "dpq_shard_probe_seconds", shard="east")), 1)
        with urllib.request.urlopen(self.dpqd.metrics_url.replace("/metrics", "/status"),
                                    timeout=10) as response:
            page = response.read().decode("utf-8")
        self.assertIn('data-shard="east"', page)
        self.assertIn('data-field="shard-state" data-value="up"', page)

        self.shard.stop()
        down = self.dpqd.ctl("shard", "list")["shards"]
        self.assertEqual(down[0]["state"], "down")
        self.assertIn("SQLSTATE", down[0]["probe_error"])
        harness.wait_until(lambda: self.shard_up_values() == [0], PROBE_WAIT_S, "dpq_shard_up 0")
        self.assertIn("shard east: DOWN", self.dpqd.log_text())

        removed = self.dpqd.ctl("shard", "remove", "east")
        self.assertEqual(removed["removed"], "east")
        self.assertEqual(self.dpqd.ctl("shard", "list")["shards"], [])
        self.assertEqual(self.dpqd.ctl_text("shard", "list").count("\n"), 1)
        harness.wait_until(lambda: self.shard_up_values() == [], PROBE_WAIT_S,
                           "the removed shard's series to go")
        self.assert_error(self.dpqd.ctl("shard", "remove", "east", check=False), "NOT_FOUND",
                          "east")
        log = self.dpqd.ctl("audit", "--admin-log")["entries"]
        self.assertEqual([e["action"] for e in log if e["action"].startswith("shard.")],
                         ["shard.add", "shard.remove"])
        self.assertNotIn(PASSWORD, str(log))
        self.assertNotIn(PASSWORD, self.dpqd.log_text())

    def test_refusals(self):
        token = self.create_analyst(self.dpqd, "ann")
        for args in (("shard", "list"), ("shard", "remove", "east"),
                     ("shard", "add", "east", "--url-file", self.url_file())):
            self.assert_error(self.dpqd.ctl(*args, token=token, check=False), "PERMISSION_DENIED")

        wrong = "Wrong-pw-0077"
        refused = self.dpqd.ctl("shard", "add", "east", "--url-file", self.url_file(wrong),
                                check=False)
        self.assert_error(refused, "FAILED_PRECONDITION",
                          ["%s:%d" % (self.shard.socket_dir, self.shard.port), "password"])
        self.assertNotIn(wrong, refused.error_message)
        self.assert_error(self.dpqd.ctl("shard", "add", "Bad-Name", "--url", self.url(),
                                        check=False), "INVALID_ARGUMENT", "name")
        bad_url = self.dpqd.ctl("shard", "add", "east", "--url", "mysql://u:%s@h/d" % PASSWORD,
                                check=False)
        self.assert_error(bad_url, "INVALID_ARGUMENT", "url")
        self.assertNotIn(PASSWORD, bad_url.error_message)
        self.assertEqual(self.dpqd.ctl("shard", "list")["shards"], [])

        self.dpqd.ctl("shard", "add", "east", "--url", self.url())
        self.assert_error(self.dpqd.ctl("shard", "add", "east", "--url", self.url(), check=False),
                          "ALREADY_EXISTS", "east")
        for text in (self.dpqd.log_text(), str(self.dpqd.ctl("audit", "--admin-log"))):
            self.assertNotIn(PASSWORD, text)
            self.assertNotIn(wrong, text)


    def test_a_sharded_dataset_through_the_cli(self):
        """dataset create --shards, show, answers pushed down and fanned out, a shard down, drop."""
        west = self.start_shard_cluster()
        self.dpqd.ctl("shard", "add", "east", "--url", self.url())
        self.dpqd.ctl("shard", "add", "west", "--url", self.url(shard=west))
        csv = os.path.join(self.make_temp_dir(), "visits.csv")
        with open(csv, "w") as f:
            f.write("uid,x\n")
            for uid in range(1, 201):
                f.write("%d,%s\n" % (uid, uid % 13 - 1.5))  # some values below 0 clamp to 0
        created = self.dpqd.ctl("dataset", "create", "visits", "--csv", csv, "--privacy-unit",
                                "uid", "--type", "uid=integer", "--type", "x=double", "--bounds",
                                "x=0:10", "--shards", "east,west")
        self.assertEqual(created["rows_loaded"], 200, created)
        self.assertEqual(self.dpqd.ctl("dataset", "show", "visits")["shards"],
                         ["east", "west"])
        self.assertIn("shards:        east, west (rows hashed by uid)\n",
                      self.dpqd.ctl_text("dataset", "show", "visits"))
        # Every row on exactly one shard, and both shards hold some.
        counts = [int(c.psql("SELECT count(*) FROM dpq_shard.ds_1")) for c in (self.shard, west)]
        self.assertEqual(sum(counts), 200)
        self.assertTrue(all(counts), counts)

        self.dpqd.ctl("budget", "set", "visits", "--epsilon", 100, "--delta", 1e-3)
        exact = sum(min(max(uid % 13 - 1.5, 0), 10) for uid in range(1, 201))
        doc = self.dpqd.ctl("query", "visits", "--aggregate", "sum", "--column", "x",
                            "--epsilon", 10)
        # Laplace with scale 10/10 = 1: |noise| > 30 has probability e^-30.
        self.assertLess(abs(doc["value"] - exact), 30, (doc, exact))
        spent = self.dpqd.ctl("status")["datasets"][0]["epsilon_spent"]
        self.assertAlmostEqual(spent, 10, delta=1e-9)

        # DP SQL: a count bounded by rows per person is pushed down through postgres_fdw; a
        # per-person sum (a per-unit pre-aggregation) and a grouped count are sent by dpqd to
        # each shard, and answer as one table would.
        sql = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 10, max_rows_contributed = 1) "
               "COUNT(*) AS n FROM visits")
        counted = self.dpqd.ctl("sql", sql)
        # Laplace with scale 1/10: |noise| > 3 has probability e^-30.
        self.assertLess(abs(counted["rows"][0][0] - 200), 3, counted)
        per_person = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 10, "
                      "max_groups_contributed = 1) SUM(x, contribution_bounds_per_group => (0, 10)) "
                      "AS s FROM visits")
        summed = self.dpqd.ctl("sql", per_person)
        # One row per person, so the per-person sum is the clamped sum; Laplace scale 10/10 = 1.
        self.assertLess(abs(summed["rows"][0][0] - exact), 30, (summed, exact))
        grouped = self.dpqd.ctl("query", "visits", "--aggregate", "count", "--epsilon", 10,
                                "--delta", 1e-6, "--group-by", "x", "--max-partitions", 1)
        # x = uid % 13 - 1.5 takes 13 values, each on 15 or 16 people: all pass the threshold of
        # partition selection at epsilon 10 (Laplace scale 1/10 on counts of at least 15).
        self.assertEqual(len(grouped["rows"]), 13, grouped)
        spent += 10 + 10 + 10
        self.assertAlmostEqual(self.dpqd.ctl("status")["datasets"][0]["epsilon_spent"], spent,
                               delta=1e-9)
        # Each shard's part of the two fan-out scans is in dpq_shard_scan_seconds.
        for shard in ("east", "west"):
            self.assertEqual(harness.metric_values(self.dpqd.metrics(),
                                                   "dpq_shard_scan_seconds_count", shard=shard),
                             [2], shard)
        west.stop()
        down = self.dpqd.ctl("query", "visits", "--aggregate", "count", "--epsilon", 1,
                             check=False)
        self.assert_error(down, "UNAVAILABLE", "shard west is down")
        self.assertAlmostEqual(self.dpqd.ctl("status")["datasets"][0]["epsilon_spent"], spent,
                               delta=1e-9)
        west.start()

        self.assert_error(self.dpqd.ctl("shard", "remove", "east", check=False),
                          "FAILED_PRECONDITION", "visits")
        self.dpqd.ctl("dataset", "drop", "visits", "--yes")
        self.assertEqual(self.shard.psql("SELECT count(*) FROM dpq_shard.partitions"), "0")
        self.dpqd.ctl("shard", "remove", "east")


if __name__ == "__main__":
    unittest.main()
