#!/usr/bin/python3
"""End-to-end: the time blocks of a per-block budget as operators see them.

A real dpqd with a dataset whose budget is per day block, its rows dated over the last 14 days
(relative to the real UTC today), spent through dpqctl: 0.95 of the current block's epsilon of 1,
0.25 of the previous block's. Beside it, a population-wide dataset. Then:

- the /metrics scrape has dpq_block_budget_{limit,spent,remaining}{population,block,param} and
  dpq_block_start_timestamp_seconds{population,block} for the current and previous block, equal
  to what `dpqctl budget show --blocks --json` says of its last two blocks, and no dpq_budget_*
  series for that population; `promtool check metrics` accepts the scrape;
- Chromium renders the status page: the population's section has a row per block with the
  block's first day, its figures equal to the ledger's, and a bar 95 % full;
- a real Prometheus with deploy/prometheus/alerts.yml scrapes dpqd: DpqTimeBlockBudgetLow turns
  pending for that population (and no other), DpqPopulationBudgetLow stays silent.

Skipped only when chromium, promtool or prometheus is missing (each test names which).
"""

import calendar
import datetime
import html.parser
import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import observability_config_test as observability  # noqa: E402

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_TIMEOUT_S = 120
PROMETHEUS = observability.PROMETHEUS
GAUGES = ("dpq_block_budget_limit", "dpq_block_budget_spent", "dpq_block_budget_remaining")
# dpqctl's names of a block's figures, by gauge.
SHOWN = {"dpq_block_budget_limit": "total", "dpq_block_budget_spent": "spent",
         "dpq_block_budget_remaining": "remaining"}


def day_seconds(text):
    """Unix time of a 'YYYY-MM-DD' day at 00:00 UTC."""
    return calendar.timegm(datetime.date.fromisoformat(text).timetuple())


class _Rows(html.parser.HTMLParser):
    """The status page's block rows: {(population, block, param): (tr attrs, {field: (value,
    text)}, [svg aria-labels])}."""

    def __init__(self):
        super().__init__()
        self.rows = {}
        self._population = None
        self._row = None
        self._cell = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "section" and attrs.get("class") == "population":
            self._population = attrs.get("data-population")
        elif tag == "tr" and "data-block" in attrs:
            key = (self._population, attrs["data-block"], attrs["data-param"])
            self._row = self.rows[key] = (attrs, {}, [])
        elif self._row is not None and tag == "td" and "data-field" in attrs:
            self._cell = [attrs["data-field"], attrs["data-value"], ""]
        elif self._row is not None and tag == "svg":
            self._row[2].append(attrs.get("aria-label"))

    def handle_data(self, data):
        if self._cell is not None:
            self._cell[2] += data

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            self._row[1][self._cell[0]] = (self._cell[1], self._cell[2].strip())
            self._cell = None
        elif tag == "tr":
            self._row = None
        elif tag == "section":
            self._population = None


class BlockMetricsTest(harness.DpqdTestCase):

    @classmethod
    def setUpClass(cls):
        cls.dpqd = dpqd = cls.new_class_dpqd()
        cls.today = today = cls.create_recent_visits(dpqd, "visits", epsilon=1, delta=1e-6)
        cls.create_slid(dpqd)
        dpqd.ctl("budget", "set", "slid", "--epsilon", 1, "--delta", 1e-6)
        alice = cls.create_analyst(dpqd, "alice")
        dpqd.ctl("grant", "alice", "visits")
        dpqd.ctl("grant", "alice", "slid")
        yesterday = today - datetime.timedelta(days=1)
        dpqd.ctl("query", "visits", "--aggregate", "count", "--epsilon", 0.95, "--where",
                 "day = '%s'" % today, token=alice)
        dpqd.ctl("query", "visits", "--aggregate", "count", "--epsilon", 0.25, "--where",
                 "day = '%s'" % yesterday, token=alice)
        dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", 0.1, token=alice)

    def shown_and_scraped(self):
        """The last two blocks `budget show --blocks --json` lists and a scrape taken between two
        such reads that agree on them (a UTC midnight between the reads starts another block)."""
        for _ in range(3):
            before = self.dpqd.ctl("budget", "show", "visits", "--blocks")["blocks"][-2:]
            text = self.dpqd.scrape()
            after = self.dpqd.ctl("budget", "show", "visits", "--blocks")["blocks"][-2:]
            if before == after:
                return {"previous": before[0], "current": before[1]}, text
        self.fail("the blocks kept changing while they were read")

    def test_gauges_equal_what_dpqctl_shows_of_the_last_two_blocks(self):
        shown, text = self.shown_and_scraped()
        self.assertEqual(shown["current"]["start"], str(self.today))
        self.assertAlmostEqual(shown["current"]["epsilon_spent"], 0.95, delta=1e-12)
        self.assertAlmostEqual(shown["previous"]["epsilon_spent"], 0.25, delta=1e-12)
        samples = harness.parse_metrics(text)
        for block, b in shown.items():
            for gauge in GAUGES:
                for param in ("epsilon", "delta"):
                    got = harness.metric_values(samples, gauge, population="visits", block=block,
                                                param=param)
                    want = b["%s_%s" % (param, SHOWN[gauge])]
                    self.assertEqual(len(got), 1, (gauge, block, param, got))
                    self.assertAlmostEqual(got[0], want, delta=1e-15 + 1e-12 * abs(want),
                                           msg="%s{block=%s,param=%s}" % (gauge, block, param))
            self.assertEqual(harness.metric_values(samples, "dpq_block_start_timestamp_seconds",
                                                   population="visits", block=block),
                             [float(day_seconds(b["start"]))])
        # Two blocks, no more; none for the population-wide dataset; and no population-wide figure
        # for the per-block one (its total is each block's, its spent over all blocks).
        blocks = {(l["population"], l["block"]) for (n, l, _v) in samples
                  if n == "dpq_block_start_timestamp_seconds"}
        self.assertEqual(blocks, {("visits", "current"), ("visits", "previous")})
        budgets = {l["population"] for (n, l, _v) in samples if n == "dpq_budget_limit"}
        self.assertEqual(budgets, {"slid"})
        # Its audit chain is verified like any other: the verification series exist.
        self.assertEqual(len(harness.metric_values(samples, "dpq_audit_verify_ok",
                                                   population="visits")), 1)

    @unittest.skipUnless(os.path.exists(harness.PROMTOOL), "%s is not installed" % harness.PROMTOOL)
    def test_promtool_accepts_the_scrape(self):
        self.assert_promtool_accepts(self.dpqd.scrape())

    @unittest.skipUnless(os.path.exists(CHROMIUM), "%s is not installed" % CHROMIUM)
    def test_chromium_renders_a_bar_per_block_with_the_ledgers_figures(self):
        work = self.make_temp_dir("dpq-e2e-chromium-")
        common = ["--headless", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
                  "--disable-extensions", "--user-data-dir=" + os.path.join(work, "profile")]
        if os.geteuid() == 0:
            common.append("--no-sandbox")  # as in status_page_test.py: our own page, no script
        url = "http://127.0.0.1:%d/status" % self.dpqd.metrics_port
        for _ in range(3):
            before = self.dpqd.ctl("budget", "show", "visits", "--blocks")["blocks"][-2:]
            dump = subprocess.run([CHROMIUM] + common + ["--dump-dom", url],
                                  stdin=subprocess.DEVNULL, capture_output=True,
                                  timeout=CHROMIUM_TIMEOUT_S, cwd=work)
            self.assertEqual(dump.returncode, 0, dump.stderr.decode(errors="replace")[-3000:])
            if before == self.dpqd.ctl("budget", "show", "visits", "--blocks")["blocks"][-2:]:
                break
        shown = {"previous": before[0], "current": before[1]}
        page = _Rows()
        page.feed(dump.stdout.decode("utf-8"))
        self.assertEqual({k for k in page.rows if k[0] == "visits"},
                         {("visits", b, p) for b in ("current", "previous")
                          for p in ("epsilon", "delta")})
        self.assertFalse([k for k in page.rows if k[0] == "slid"], "slid has no blocks")
        for (population, block, param), (attrs, fields, bars) in page.rows.items():
            b = shown[block]
            self.assertEqual(attrs["data-block-start"], b["start"])
            for part in ("spent", "remaining", "total"):
                value, text = fields["%s-%s" % (param, part)]
                want = b["%s_%s" % (param, part)]
                self.assertAlmostEqual(float(value), want, delta=1e-15 + 1e-12 * abs(want),
                                       msg="%s %s %s-%s" % (population, block, param, part))
                self.assertEqual(text, "%.6g" % float(value))
            self.assertEqual(len(bars), 1, bars)
        self.assertEqual(page.rows[("visits", "current", "epsilon")][2], ["95% spent"])
        self.assertEqual(page.rows[("visits", "previous", "epsilon")][2], ["25% spent"])
        body = dump.stdout.decode("utf-8")
        self.assertIn('data-population="visits" data-accountant="basic" data-budget="per-block"',
                      body)

        shots = os.environ.get("DPQ_SCREENSHOT_DIR") or work
        os.makedirs(shots, exist_ok=True)
        screenshot = os.path.abspath(os.path.join(shots, "block_status_page.png"))
        if os.path.exists(screenshot):
            os.remove(screenshot)
        shot = subprocess.run([CHROMIUM] + common + ["--window-size=1100,1800",
                                                     "--screenshot=" + screenshot, url],
                              stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=CHROMIUM_TIMEOUT_S, cwd=work)
        self.assertEqual(shot.returncode, 0, shot.stderr.decode(errors="replace")[-3000:])
        with open(screenshot, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")


class BlockAlertTest(harness.DpqdTestCase):
    """A real Prometheus with the repository's alerts.yml on a dpqd whose current day block of
    visits has 5 % of its epsilon left."""

    _start_prometheus = observability.LivePrometheusTest._start_prometheus
    _stop = staticmethod(observability.LivePrometheusTest._stop)
    _instant = staticmethod(observability.LivePrometheusTest._instant)

    @unittest.skipUnless(os.path.exists(PROMETHEUS), "%s is not installed" % PROMETHEUS)
    def test_the_current_block_running_low_raises_the_block_alert_only(self):
        dpqd = self.new_dpqd()
        today = self.create_recent_visits(dpqd, "visits", epsilon=1, delta=1e-6)
        self.create_recent_visits(dpqd, "healthy", epsilon=1, delta=1e-6)
        alice = self.create_analyst(dpqd, "alice")
        for dataset in ("visits", "healthy"):
            dpqd.ctl("grant", "alice", dataset)
        dpqd.ctl("query", "visits", "--aggregate", "count", "--epsilon", 0.95, "--where",
                 "day = '%s'" % today, token=alice)
        # healthy: 0.5 spent in its current block; and its previous block spent to the end, which
        # the rule does not watch.
        dpqd.ctl("query", "healthy", "--aggregate", "count", "--epsilon", 0.5, "--where",
                 "day = '%s'" % today, token=alice)
        dpqd.ctl("query", "healthy", "--aggregate", "count", "--epsilon", 1, "--where",
                 "day = '%s'" % (today - datetime.timedelta(days=1)), token=alice)
        base = self._start_prometheus(dpqd)

        def block_alerts():
            alerts = observability._get_json(base + "/api/v1/alerts")["data"]["alerts"]
            low = [(a["labels"]["population"], a["state"], float(a["value"])) for a in alerts
                   if a["labels"]["alertname"] == "DpqTimeBlockBudgetLow"]
            others = [a["labels"]["alertname"] for a in alerts
                      if a["labels"]["alertname"] == "DpqPopulationBudgetLow"]
            return (low, others) if low else None

        low, others = harness.wait_until(block_alerts, observability.PROMETHEUS_WAIT_S,
                                         "DpqTimeBlockBudgetLow for visits", 0.5)
        self.assertEqual([(p, s) for (p, s, _v) in low], [("visits", "pending")], low)  # for: 15m
        self.assertAlmostEqual(low[0][2], 0.05, delta=1e-9)
        self.assertEqual(others, [])
        spent = self._instant(base, 'dpq_block_budget_spent{block="current",param="epsilon"}')
        self.assertEqual({r["metric"]["population"]: float(r["value"][1]) for r in spent},
                         {"visits": 0.95, "healthy": 0.5})


if __name__ == "__main__":
    unittest.main(verbosity=2)
