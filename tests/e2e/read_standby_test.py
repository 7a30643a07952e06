#!/usr/bin/python3
"""End-to-end: dpqd with --read-database-url (docs/scaling.md).

dpqd A runs the embedded PostgreSQL, the primary. A hot standby of it is made with
`pg_basebackup -R` and started with pg_ctl on its own unix socket. dpqd B reaches the primary by
URL and the standby by --read-database-url. Through the real dpqctl:

* `dpqd --check-config` reports the standby reachable and in recovery;
* a query through B is answered from a scan on the standby (B's dpq_scans_total{target="standby"})
  and charged on the primary;
* with the standby stopped, the next query is still answered (the paid scan runs on the primary),
  charged once, and B's metrics show the fallback and dpq_read_standby_up 0.
"""

import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

PG_BIN = "/usr/lib/postgresql/15/bin"


def _as_postgres(argv):
    """Runs argv as the postgres user when we are root (PostgreSQL refuses root)."""
    if os.geteuid() == 0:
        argv = ["runuser", "-u", "postgres", "--"] + argv
    return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=120)


class Standby:
    """A hot standby of the cluster behind `primary_socket_dir`, in `root`/pg, socket in `root`/run."""

    def __init__(self, root, primary_socket_dir):
        self.pg_dir = os.path.join(root, "pg")
        self.socket_dir = os.path.join(root, "run")
        self.log = os.path.join(root, "standby.log")
        os.makedirs(self.socket_dir)
        if os.geteuid() == 0:
            shutil.chown(root, "postgres", "postgres")
            shutil.chown(self.socket_dir, "postgres", "postgres")
        done = _as_postgres([PG_BIN + "/pg_basebackup", "-D", self.pg_dir, "-R", "-X", "stream",
                             "-c", "fast", "--no-sync", "-d",
                             "host=%s port=5432 user=postgres" % primary_socket_dir])
        assert done.returncode == 0, done.stdout + done.stderr
        # The copy includes the primary's dpq.conf (its socket directory): this one's own.
        with open(os.path.join(self.pg_dir, "dpq.conf"), "a") as f:
            f.write("\nunix_socket_directories = '%s'\nlisten_addresses = ''\n" % self.socket_dir)

    @property
    def url(self):
        return "postgresql:///dpq?host=%s&port=5432&user=postgres" % self.socket_dir

    def pg_ctl(self, *args):
        done = _as_postgres([PG_BIN + "/pg_ctl", "-D", self.pg_dir, "-l", self.log, "-w"] + list(args))
        assert done.returncode == 0, done.stdout + done.stderr

    def stop(self):
        if os.path.exists(os.path.join(self.pg_dir, "postmaster.pid")):
            self.pg_ctl("stop", "-m", "immediate")


class ReadStandbyTest(harness.DpqdTestCase):

    def test_scans_go_to_the_standby_and_fall_back_to_the_primary_when_it_stops(self):
        primary = self.new_dpqd()
        self.create_slid(primary)
        primary.ctl("budget", "set", "slid", "--epsilon", 10)
        token = self.create_analyst(primary, "ann")
        primary.ctl("grant", "ann", "slid")
        primary_url = "postgresql:///dpq?host=%s&port=5432&user=postgres" % os.path.join(
            primary.data_dir, "run")

        standby = Standby(self.make_temp_dir("dpq-standby-"), os.path.join(primary.data_dir, "run"))
        standby.pg_ctl("start")
        self.addCleanup(standby.stop)

        checked = subprocess.run([harness.dpqd_path(), "--check-config", "--database-url",
                                  primary_url, "--read-database-url", standby.url],
                                 stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        self.assertEqual(checked.returncode, 0, checked.stdout + checked.stderr)
        self.assertIn("read standby reachable, in recovery (a hot standby)", checked.stdout)

        root = self.make_temp_dir()
        os.makedirs(os.path.join(root, "logs"))
        reader = harness.Dpqd(os.path.join(root, "data"), os.path.join(root, "logs"),
                              extra_args=["--database-url", primary_url,
                                          "--read-database-url", standby.url,
                                          "--read-lag-wait-ms", "5000"])
        self.addCleanup(harness._stop_dpqd, reader)  # pylint: disable=protected-access
        reader.start()
        self.assertIn("aggregate scans on the read standby", reader.log_text())

        first = reader.ctl("query", "slid", "--aggregate", "count", "--epsilon", 0.5, token=token,
                           use_admin=False)
        self.assertEqual(len(first["rows"]), 1)
        samples = reader.metrics()
        self.assertEqual(harness.metric_values(samples, "dpq_scans_total", target="standby"), [1])
        self.assertEqual(harness.metric_values(samples, "dpq_scans_total", target="primary"), [0])
        self.assertEqual(harness.metric_values(samples, "dpq_read_standby_up"), [1])

        standby.stop()
        second = reader.ctl("query", "slid", "--aggregate", "count", "--epsilon", 0.25, token=token,
                            use_admin=False)
        self.assertEqual(len(second["rows"]), 1)
        samples = reader.metrics()
        self.assertEqual(harness.metric_values(samples, "dpq_scans_total", target="primary"), [1])
        self.assertEqual(harness.metric_values(samples, "dpq_read_standby_fallbacks_total",
                                               reason="unavailable"), [1])
        self.assertEqual(harness.metric_values(samples, "dpq_read_standby_up"), [0])
        # Charged on the primary, once per query, whichever server scanned.
        budget = primary.ctl("budget", "show", "slid")
        self.assertAlmostEqual(budget["epsilon_spent"], 0.75, places=9)
        self.assertEqual(len(primary.ctl("audit", "slid")["entries"]), 2)


if __name__ == "__main__":
    unittest.main()
