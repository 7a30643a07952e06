#!/usr/bin/python3
"""End-to-end: dpqd's status page (GET /status on the metrics port) in headless Chromium.

A real dpqd with two datasets with budgets (one under the RDP accountant), two analysts (one with
an epsilon cap), answered, refused and capped queries and an audit verification. Then:

- the page is plain HTML: no <script>, a Content-Security-Policy that forbids loading anything,
  served without a token; `/` is the same page;
- Chromium (Debian's `chromium`, --headless --dump-dom) renders it, and the DOM has one section
  per population (each dataset here is a population of its own) whose figures (epsilon and delta
  spent / remaining / total, accountant, nominal epsilon spent over time, audit rows,
  verification, the capped analyst's spend and cap) equal the ledger as `dpqctl --json` reports
  it; a screenshot is saved (--screenshot) and must be a PNG;
- every figure on the page is in the /metrics scrape taken right after (nothing more is shown);
- `promtool check metrics` accepts that scrape, with every new series populated;
- dpqd's periodic audit verification (--audit-verify-seconds) turns dpq_audit_verify_ok to 0 when
  an audit row is altered behind the append-only trigger (needs root and psql).

The screenshot goes to $DPQ_SCREENSHOT_DIR (ctest sets it to the build directory), else to the
test's temporary directory. Skipped only when chromium (or promtool, for its test) is missing.
"""

import html.parser
import os
import shutil
import subprocess
import sys
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
PROMTOOL = harness.PROMTOOL
CHROMIUM_TIMEOUT_S = 120


class _Dom(html.parser.HTMLParser):
    """Collects every element's attributes and text, and the population section each lies in."""

    def __init__(self):
        super().__init__()
        self.elements = []  # (tag, attrs, population section or None, analyst row or None, [text])
        self._stack = []
        self.scripts = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "script":
            self.scripts += 1
        dataset = attrs.get("data-population") if attrs.get("class") == "population" else None
        analyst = attrs.get("data-analyst")
        if self._stack:
            dataset = dataset or self._stack[-1][2]
            analyst = analyst or self._stack[-1][3]
        element = (tag, attrs, dataset, analyst, [])
        self.elements.append(element)
        if tag not in ("meta", "br", "img", "input", "link", "circle", "rect", "line", "path"):
            self._stack.append(element)

    def handle_endtag(self, tag):
        for i in range(len(self._stack) - 1, -1, -1):
            if self._stack[i][0] == tag:
                del self._stack[i:]
                break

    def handle_data(self, data):
        if self._stack:
            self._stack[-1][4].append(data)

    def sections(self):
        return [(e[1]["data-population"], e[1].get("data-accountant")) for e in self.elements
                if e[0] == "section" and e[1].get("class") == "population"]

    def field(self, dataset, name, analyst=None, at=None):
        """(data-value, visible text) of the one element with data-field=name in the section."""
        found = [e for e in self.elements
                 if e[1].get("data-field") == name and e[2] == dataset
                 and (analyst is None or e[3] == analyst)
                 and (at is None or e[1].get("data-at") == at)]
        if len(found) != 1:
            raise AssertionError("%d elements data-field=%s in %s (analyst %s, at %s)" %
                                 (len(found), name, dataset, analyst, at))
        return found[0][1]["data-value"], "".join(found[0][4]).strip()


def _get(url):
    with urllib.request.urlopen(url, timeout=20) as response:
        return response.status, dict(response.headers), response.read().decode("utf-8")


class StatusPageTest(harness.DpqdTestCase):

    @classmethod
    def setUpClass(cls):
        cls.dpqd = dpqd = cls.new_class_dpqd()
        cls.create_slid(dpqd)
        cls.create_salaries(dpqd)
        alice = cls.create_analyst(dpqd, "alice")
        bob = cls.create_analyst(dpqd, "bob")
        dpqd.ctl("grant", "alice", "slid")
        dpqd.ctl("grant", "alice", "salaries")
        dpqd.ctl("grant", "bob", "salaries", "--epsilon-cap", 0.6)
        dpqd.ctl("budget", "set", "slid", "--epsilon", 1, "--delta", 1e-6)
        dpqd.ctl("budget", "set", "salaries", "--epsilon", 3, "--delta", 1e-5,
                 "--accountant", "rdp")
        dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", 0.1, token=alice)
        dpqd.ctl("query", "slid", "--aggregate", "mean", "--column", "wages", "--epsilon", 0.25,
                 "--mechanism", "gaussian", "--delta", 1e-7, token=alice)
        refused = dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", 0.9,
                           token=alice, check=False)
        cls.refused_code = refused.error_code
        dpqd.ctl("query", "salaries", "--aggregate", "sum", "--column", "salary", "--epsilon",
                 0.5, token=alice)
        # Three different queries (an identical one would be answered from bob's cache, free).
        dpqd.ctl("query", "salaries", "--aggregate", "count", "--epsilon", 0.25, token=bob)
        dpqd.ctl("query", "salaries", "--aggregate", "sum", "--column", "salary", "--epsilon",
                 0.25, token=bob)
        capped = dpqd.ctl("query", "salaries", "--aggregate", "count", "--epsilon", 0.2,
                          token=bob, check=False)
        cls.capped_code = capped.error_code
        cls.verify = dpqd.ctl("audit", "verify", "slid")
        cls.budgets = {d: dpqd.ctl("budget", "show", d) for d in ("slid", "salaries")}
        cls.audit = {d: dpqd.ctl("audit", d)["entries"] for d in ("slid", "salaries")}
        cls.grants = dpqd.ctl("grant", "list")
        cls.status_url = "http://127.0.0.1:%d/status" % dpqd.metrics_port

    def test_setup_refused_what_it_should(self):
        self.assertEqual(self.refused_code, "RESOURCE_EXHAUSTED")  # slid's budget
        self.assertEqual(self.capped_code, "RESOURCE_EXHAUSTED")   # bob's cap of 0.6
        self.assertTrue(self.verify["ok"], dict(self.verify))

    def test_plain_html_without_token_or_script(self):
        status, headers, body = _get(self.status_url)
        self.assertEqual(status, 200)
        self.assertTrue(headers["Content-Type"].startswith("text/html"), headers)
        self.assertIn("default-src 'none'", headers.get("Content-Security-Policy", ""))
        self.assertNotIn("<script", body.lower())
        self.assertNotIn("http://", body.replace('href="/metrics"', ""))
        self.assertNotIn("https://", body)
        self.assertIn("<svg", body)
        root = _get("http://127.0.0.1:%d/" % self.dpqd.metrics_port)[2]
        self.assertEqual(root.count('class="population"'), body.count('class="population"'))
        with self.assertRaises(urllib.error.HTTPError) as e:
            _get("http://127.0.0.1:%d/nothing-here" % self.dpqd.metrics_port)
        self.assertEqual(e.exception.code, 404)

    @unittest.skipUnless(os.path.exists(CHROMIUM), "%s is not installed" % CHROMIUM)
    def test_chromium_renders_every_dataset_with_the_ledgers_figures(self):
        work = self.make_temp_dir("dpq-e2e-chromium-")
        shots = os.environ.get("DPQ_SCREENSHOT_DIR") or work
        os.makedirs(shots, exist_ok=True)
        screenshot = os.path.abspath(os.path.join(shots, "status_page.png"))
        if os.path.exists(screenshot):
            os.remove(screenshot)
        common = ["--headless", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
                  "--disable-extensions", "--user-data-dir=" + os.path.join(work, "profile")]
        if os.geteuid() == 0:
            # Chromium refuses to run as root with its sandbox (CI runs as root in a container);
            # the page is our own, loaded from loopback, and runs no script.
            common.append("--no-sandbox")
        dump = subprocess.run([CHROMIUM] + common + ["--dump-dom", self.status_url],
                              stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=CHROMIUM_TIMEOUT_S, cwd=work)
        self.assertEqual(dump.returncode, 0, dump.stderr.decode(errors="replace")[-3000:])
        dom = _Dom()
        dom.feed(dump.stdout.decode("utf-8"))
        self.assertEqual(dom.scripts, 0)

        self.assertEqual(sorted(dom.sections()), [("salaries", "rdp"), ("slid", "basic")])
        for dataset, budget in self.budgets.items():
            for param in ("epsilon", "delta"):
                for part in ("spent", "remaining", "total"):
                    value, text = dom.field(dataset, "%s-%s" % (param, part))
                    want = budget["%s_%s" % (param, part)]
                    self.assertAlmostEqual(float(value), want, delta=1e-12 + 1e-9 * abs(want),
                                           msg="%s %s_%s" % (dataset, param, part))
                    # People see 6 significant digits.
                    self.assertEqual(text, "%.6g" % float(value))
            # Nominal epsilon over time: now = the sum of the audit rows' epsilon; all of it was
            # spent within the last hour, none before 30 days ago.
            nominal = sum(e["epsilon"] for e in self.audit[dataset])
            self.assertAlmostEqual(float(dom.field(dataset, "epsilon-spent-at", at="now")[0]),
                                   nominal, delta=1e-9)
            self.assertEqual(float(dom.field(dataset, "epsilon-spent-at", at="−1h")[0]), 0.0)
            self.assertEqual(float(dom.field(dataset, "epsilon-spent-at", at="−30d")[0]), 0.0)
            self.assertEqual(int(float(dom.field(dataset, "audit-rows")[0])),
                             len(self.audit[dataset]))
        # Under the basic accountant the ledger's spent is the nominal sum.
        self.assertAlmostEqual(self.budgets["slid"]["epsilon_spent"], 0.35, delta=1e-12)
        self.assertEqual(dom.field("slid", "audit-verify")[0], "ok")
        self.assertEqual(dom.field("salaries", "audit-verify")[0], "none")

        # bob's cap on salaries (0.6) and its remainder (0.1 after two queries of 0.25).
        bob = [g for g in self.grants["grants"]
               if g["analyst"] == "bob" and g["dataset"] == "salaries"]
        self.assertEqual(len(bob), 1, self.grants)
        self.assertAlmostEqual(float(dom.field("salaries", "analyst-epsilon-cap", "bob")[0]),
                               bob[0]["epsilon_cap"], delta=1e-12)
        self.assertAlmostEqual(
            float(dom.field("salaries", "analyst-epsilon-cap-remaining", "bob")[0]), 0.1,
            delta=1e-12)
        self.assertAlmostEqual(float(dom.field("salaries", "analyst-epsilon-spent", "bob")[0]),
                               0.5, delta=1e-12)
        self.assertEqual(dom.field("salaries", "analyst-epsilon-cap", "alice")[0], "none")
        self.assertAlmostEqual(float(dom.field("slid", "analyst-epsilon-spent", "alice")[0]),
                               0.35, delta=1e-12)
        ledger = [e for e in dom.elements if e[1].get("data-field") == "ledger"]
        self.assertEqual("".join(ledger[0][4]).strip(), "readable")

        # Nothing on the page that /metrics does not show: every exact figure is a sample value.
        samples = harness.parse_metrics(self.dpqd.scrape())
        values = {v for (_n, _l, v) in samples}
        for e in dom.elements:
            value = e[1].get("data-value")
            if value is None or value == "none" or e[1].get("data-field") in (
                    "epsilon-spent", "delta-spent", "epsilon-spent-at", "audit-verify"):
                continue  # absent, or derived: limit - remaining, sums and differences of samples
            self.assertIn(float(value), values, "%s=%s is in no /metrics sample" %
                          (e[1].get("data-field"), value))

        shot = subprocess.run([CHROMIUM] + common + ["--window-size=1100,2200",
                                                     "--screenshot=" + screenshot,
                                                     self.status_url],
                              stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=CHROMIUM_TIMEOUT_S, cwd=work)
        self.assertEqual(shot.returncode, 0, shot.stderr.decode(errors="replace")[-3000:])
        with open(screenshot, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        self.assertGreater(os.path.getsize(screenshot), 10000)
        sys.stderr.write("\nscreenshot: %s\n" % screenshot)

    @unittest.skipUnless(os.path.exists(PROMTOOL), "%s is not installed" % PROMTOOL)
    def test_promtool_accepts_the_scrape_with_every_new_series(self):
        text = self.dpqd.scrape()
        samples = harness.parse_metrics(text)
        self.assertEqual(harness.metric_values(samples, "dpq_analyst_epsilon_cap",
                                               population="salaries", analyst="bob"), [0.6])
        self.assertAlmostEqual(harness.metric_values(
            samples, "dpq_analyst_epsilon_cap_remaining", population="salaries", analyst="bob")[0],
            0.1, delta=1e-12)
        self.assertEqual(harness.metric_values(samples, "dpq_audit_rows_total", population="slid"),
                         [float(len(self.audit["slid"]))])
        self.assertEqual(harness.metric_values(samples, "dpq_audit_verify_ok", population="slid"),
                         [1.0])
        self.assertEqual(len(harness.metric_values(samples, "dpq_build_info")), 1)
        self.assertEqual(harness.metric_values(samples, "dpq_budget_accountant_info",
                                               population="salaries", accountant="rdp"), [1.0])
        # Per method and code: alice's refused query and bob's capped one.
        self.assertEqual(harness.metric_values(
            samples, "dpq_grpc_server_handled_total", grpc_service="dpq.v1.AnalystService",
            grpc_method="Query", grpc_code="RESOURCE_EXHAUSTED"), [2.0])
        # Paths dpqd does not serve do not become labels (a client cannot grow the label set).
        import grpc  # python3-grpcio
        with grpc.insecure_channel(self.dpqd.address) as channel:
            for path in ("/dpq.v1.AnalystService/NoSuchMethod", "/no.such.Service/Call"):
                with self.assertRaises(grpc.RpcError) as e:
                    channel.unary_unary(path)(b"", timeout=10)
                self.assertEqual(e.exception.code(), grpc.StatusCode.UNIMPLEMENTED)
        after = harness.parse_metrics(self.dpqd.scrape())
        methods = {l.get("grpc_method") for (n, l, _v) in after
                   if n == "dpq_grpc_server_handled_total"}
        self.assertNotIn("NoSuchMethod", methods)
        self.assertNotIn("Call", methods)
        self.assertLessEqual({"Query", "CreateDataset", "VerifyAudit"}, methods)
        self.assertEqual(harness.metric_values(after, "dpq_grpc_server_handled_total",
                                               grpc_service="unknown", grpc_method="unknown",
                                               grpc_code="UNIMPLEMENTED"), [2.0])
        debits = harness.metric_values(samples, "dpq_debit_duration_seconds_count")
        self.assertEqual(len(debits), 1)
        self.assertGreaterEqual(debits[0], 7)  # 7 queries reached the ledger
        self.assert_promtool_accepts(text)


class PeriodicAuditVerifyTest(harness.DpqdTestCase):
    """dpqd's own verification pass (--audit-verify-seconds) exports the chain's state: a tampered
    audit row turns dpq_audit_verify_ok to 0 (alerts.yml: DpqAuditVerifyFailing) without any
    `dpqctl audit verify`, and the status page says BROKEN."""

    @unittest.skipUnless(os.geteuid() == 0 and shutil.which("psql"),
                         "needs root (to reach the embedded cluster's socket) and psql")
    def test_a_tampered_row_turns_the_metric_to_zero(self):
        dpqd = self.new_dpqd(start=False)
        # Every pass also reads each chain from genesis again (a rewritten row before the
        # checkpoint is seen only by such a full run).
        dpqd.extra_args = ["--audit-verify-seconds=0.5", "--audit-full-verify-seconds=0.1"]
        dpqd.start()
        self.create_slid(dpqd)
        alice = self.create_analyst(dpqd, "alice")
        dpqd.ctl("grant", "alice", "slid")
        dpqd.ctl("budget", "set", "slid", "--epsilon", 1, "--delta", 1e-6)
        for k in range(1, 4):
            dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", 0.1,
                     "--max-contributions", k, token=alice)

        def verify_ok():
            samples = dpqd.metrics()
            ok = harness.metric_values(samples, "dpq_audit_verify_ok", population="slid")
            at = harness.metric_values(samples, "dpq_audit_verify_timestamp_seconds",
                                       population="slid")
            # Timestamp 0: exported, but not verified by this dpqd yet.
            return (ok[0], at[0]) if ok and at and at[0] > 0 else None

        ok, first_at = harness.wait_until(verify_ok, 30, "a periodic verification of slid", 0.2)
        self.assertEqual(ok, 1.0)
        subprocess.run(
            ["psql", "-X", "-h", os.path.join(dpqd.data_dir, "run"), "-U", "postgres", "-d", "dpq",
             "-v", "ON_ERROR_STOP=1", "-c",
             "ALTER TABLE audit DISABLE TRIGGER audit_append_only; "
             "UPDATE audit SET epsilon_units = 1 WHERE seq = 2; "
             "ALTER TABLE audit ENABLE TRIGGER audit_append_only;"],
            check=True, capture_output=True, stdin=subprocess.DEVNULL, timeout=60)
        broken = harness.wait_until(lambda: (verify_ok() or (1.0, 0))[0] == 0.0 and verify_ok(),
                                    30, "dpq_audit_verify_ok to turn 0", 0.2)
        self.assertGreater(broken[1], first_at)
        page = _get("http://127.0.0.1:%d/status" % dpqd.metrics_port)[2]
        self.assertIn('data-field="audit-verify" data-value="broken"', page)
        self.assertIn("FAILED at seq 2", dpqd.log_text())


if __name__ == "__main__":
    unittest.main(verbosity=2)
