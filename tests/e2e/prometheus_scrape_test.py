#!/usr/bin/python3
"""End-to-end: a real Prometheus scrapes dpqd's /metrics, and promtool accepts the exposition.

Skipped only when /usr/bin/prometheus (or promtool, for its test) is not installed.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time
import unittest
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

PROMETHEUS = "/usr/bin/prometheus"
PROMTOOL = harness.PROMTOOL
TARGET_UP_TIMEOUT_S = 30


def _get_json(url):
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.loads(response.read().decode("utf-8"))


def _instant(base, promql):
    """The result list of a Prometheus instant query."""
    url = base + "/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    return _get_json(url)["data"]["result"]


def _by_label(base, promql, label):
    """{value of `label`: sample value} of an instant query."""
    return {r["metric"].get(label): float(r["value"][1]) for r in _instant(base, promql)}


class PrometheusScrapeTest(harness.DpqdTestCase):

    @classmethod
    def setUpClass(cls):
        cls.dpqd = cls.new_class_dpqd()
        cls.create_slid(cls.dpqd)
        cls.alice = cls.create_analyst(cls.dpqd, "alice")
        cls.dpqd.ctl("grant", "alice", "slid")
        cls.dpqd.ctl("budget", "set", "slid", "--epsilon", 1, "--delta", 1e-6)
        cls.dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", 0.1, token=cls.alice)
        cls.dpqd.ctl("query", "slid", "--aggregate", "mean", "--column", "wages", "--epsilon", 0.15,
                     "--mechanism", "gaussian", "--delta", 1e-7, token=cls.alice)
        refused = cls.dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", 5,
                               token=cls.alice, check=False)
        assert refused.error_code == "RESOURCE_EXHAUSTED", dict(refused)

    def test_debits_on_remembered_rows_are_counted(self):
        # setUpClass charged a count, then a mean: the mean's group was decided on the ledger and
        # grant rows the count's left, and written by one statement. Nothing else writes the
        # ledger, so no group found a row changed (the refused query wrote nothing at all).
        samples = self.dpqd.metrics()
        self.assertEqual(harness.metric_values(samples, "dpq_debit_one_trip_total",
                                               outcome="written"), [1])
        self.assertEqual(harness.metric_values(samples, "dpq_debit_one_trip_total",
                                               outcome="changed"), [0])

    @unittest.skipUnless(os.path.exists(PROMETHEUS), "%s is not installed" % PROMETHEUS)
    def test_prometheus_sees_budget_remaining_equal_to_ledger(self):
        budget = self.dpqd.ctl("budget", "show", "slid")
        self.assertAlmostEqual(budget["epsilon_remaining"], 0.75, delta=1e-12)

        work = self.make_temp_dir("dpq-e2e-prom-")
        config = os.path.join(work, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n"
                    "  scrape_interval: 1s\n"
                    "  evaluation_interval: 1s\n"
                    "scrape_configs:\n"
                    "  - job_name: dpq\n"
                    "    static_configs:\n"
                    "      - targets: ['127.0.0.1:%d']\n" % self.dpqd.metrics_port)
        port = harness.free_port()
        base = "http://127.0.0.1:%d" % port
        log = open(os.path.join(work, "prometheus.log"), "wb")
        self.addCleanup(log.close)
        proc = subprocess.Popen(
            [PROMETHEUS, "--config.file=" + config,
             "--storage.tsdb.path=" + os.path.join(work, "tsdb"),
             "--web.listen-address=127.0.0.1:%d" % port],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            preexec_fn=harness.child_preexec, cwd=work)
        self.addCleanup(self._stop, proc)

        def prometheus_log():
            with open(os.path.join(work, "prometheus.log"), "r", errors="replace") as f:
                return f.read()[-4000:]

        def ready():
            if proc.poll() is not None:
                raise AssertionError("prometheus exited (%s):\n%s" % (proc.returncode,
                                                                      prometheus_log()))
            with urllib.request.urlopen(base + "/-/ready", timeout=2) as r:
                return r.status == 200

        harness.wait_until(ready, TARGET_UP_TIMEOUT_S, "prometheus /-/ready")

        def target_up():
            targets = _get_json(base + "/api/v1/targets")["data"]["activeTargets"]
            return any(t.get("health") == "up" and
                       t.get("labels", {}).get("job") == "dpq" for t in targets)

        try:
            harness.wait_until(target_up, TARGET_UP_TIMEOUT_S, "the dpq target to be up",
                               interval_s=0.5)
        except AssertionError as e:
            raise AssertionError("%s\ntargets: %s\nprometheus log:\n%s" %
                                 (e, _get_json(base + "/api/v1/targets"), prometheus_log()))

        query = 'dpq_budget_remaining{population="slid",param="epsilon"}'

        def scraped_value():
            return _instant(base, query) or None

        result = harness.wait_until(scraped_value, TARGET_UP_TIMEOUT_S, "a sample of " + query,
                                    interval_s=0.5)
        self.assertEqual(len(result), 1, result)
        self.assertEqual(result[0]["metric"].get("job"), "dpq")
        value = float(result[0]["value"][1])
        self.assertAlmostEqual(value, budget["epsilon_remaining"], delta=1e-9)

        # The counters of the queries above made it through Prometheus too.
        by_outcome = _by_label(base, 'sum by (outcome) (dpq_queries_total{dataset="slid"})',
                               "outcome")
        self.assertEqual(by_outcome.get("ok"), 2, by_outcome)
        self.assertEqual(by_outcome.get("resource_exhausted"), 1, by_outcome)

        # The connection pool's series: dpqd opened sessions and, on a quiet server, closed none
        # after an error (no work threw), failed no connection attempt, and holds its sessions
        # idle (the scrape's own ledger read has returned its session before the pool is read).
        opened = _by_label(base, 'dpq_db_connections_opened_total{job="dpq"}', "job")
        self.assertEqual(list(opened), ["dpq"], opened)
        self.assertGreaterEqual(opened["dpq"], 1)
        self.assertEqual(_by_label(base, 'dpq_db_connect_failures_total{job="dpq"}', "job"),
                         {"dpq": 0.0})
        closed = _by_label(base, 'dpq_db_connections_closed_total{job="dpq"}', "reason")
        self.assertEqual(closed.get("error"), 0.0, closed)
        states = _by_label(base, 'dpq_db_connections{job="dpq"}', "state")
        self.assertEqual(set(states), {"in_use", "idle"}, states)
        self.assertEqual(states["in_use"], 0, states)
        self.assertGreaterEqual(states["idle"], 1, states)

    @unittest.skipUnless(os.path.exists(PROMTOOL), "%s is not installed" % PROMTOOL)
    def test_sigterm_during_scrapes_exits_cleanly(self):
        # A scrape reads the ledger and the pool: dpqd once closed the database while its metrics
        # threads still served, and aborted (exit -6) on every SIGTERM under scrapes. Three
        # restarts under four scraping threads each, bounded in time.
        for _ in range(3):
            dpqd = self.new_dpqd()
            stop = threading.Event()

            def scrape():
                deadline = time.monotonic() + 30
                while not stop.is_set() and time.monotonic() < deadline:
                    try:
                        urllib.request.urlopen(dpqd.metrics_url, timeout=2).read()
                    except OSError:
                        pass

            threads = [threading.Thread(target=scrape) for _ in range(4)]
            for t in threads:
                t.start()
            time.sleep(0.5)
            try:
                code = dpqd.stop()
            finally:
                stop.set()
                for t in threads:
                    t.join()
            self.assertEqual(code, 0, "dpqd must exit 0 on SIGTERM while being scraped")

    def test_promtool_accepts_the_exposition(self):
        text = self.dpqd.scrape()
        for name in ("dpq_queries_total", "dpq_epsilon_spent_total", "dpq_budget_remaining",
                     "dpq_db_connections_opened_total", "dpq_db_connections_closed_total",
                     "dpq_db_connect_failures_total", "dpq_db_connections",
                     "dpq_debit_one_trip_total"):
            self.assertIn(name, text)
        self.assert_promtool_accepts(text)

    @staticmethod
    def _stop(proc):
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)


if __name__ == "__main__":
    unittest.main(verbosity=2)
