#!/usr/bin/python3
"""End-to-end: the real dpqd (embedded PostgreSQL) driven by the real dpqctl.

create -> analyst -> grant -> budget -> queries -> audit, then the ledger, the overspend refusal,
idempotent replays, the metrics endpoint, a restart on the same --data-dir, and contribution
bounding on colon.csv (exactly two rows per patient).

One dpqd serves the whole class (setUpClass); every test reads the state it starts from instead
of assuming an order, so the tests are independent of each other and of unittest's ordering.
"""

import concurrent.futures
import itertools
import json
import math
import os
import re
import signal
import subprocess
import sys
import unittest
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

QUERY_FIELDS = ("value", "mechanism", "epsilon", "delta", "noise_scale", "budget")
BUDGET_FIELDS = ("epsilon_total", "delta_total", "epsilon_spent", "delta_spent",
                 "epsilon_remaining", "delta_remaining")
SMALL_EPS = 0.02  # per query; the slid budget (1.0) must last every test of the class
_fresh = itertools.count(1)


def fresh_eps():
    """SMALL_EPS made unique per call: an identical query would be answered by the result cache
    (charged nothing, no new audit row)."""
    return round(SMALL_EPS + next(_fresh) * 1e-7, 9)


class CliFlowTest(harness.DpqdTestCase):

    @classmethod
    def setUpClass(cls):
        cls.dpqd = cls.new_class_dpqd()
        created = cls.create_slid(cls.dpqd)
        assert created["rows_loaded"] == 7425, dict(created)
        cls.alice = cls.create_analyst(cls.dpqd, "alice")
        cls.dpqd.ctl("grant", "alice", "slid")
        cls.dpqd.ctl("budget", "set", "slid", "--epsilon", 1, "--delta", 1e-6)

    # -- helpers --------------------------------------------------------------------------

    def query(self, *args, check=True, token=None):
        return self.dpqd.ctl("query", "slid", *args, token=token or self.alice, check=check)

    def budget(self, dataset="slid"):
        return self.dpqd.ctl("budget", "show", dataset)

    def audit(self, dataset="slid"):
        return self.dpqd.ctl("audit", dataset)["entries"]

    def assert_query_document(self, doc, mechanism, epsilon, delta):
        for field in QUERY_FIELDS:
            self.assertIn(field, doc, "query JSON lacks %r: %r" % (field, dict(doc)))
        for field in BUDGET_FIELDS:
            self.assertIn(field, doc["budget"], "query budget lacks %r: %r" % (field, doc["budget"]))
        self.assertEqual(doc["mechanism"], mechanism)
        self.assertEqual(doc["epsilon"], epsilon)
        self.assertEqual(doc["delta"], delta)
        self.assertTrue(math.isfinite(doc["value"]))
        self.assertTrue(math.isfinite(doc["noise_scale"]) and doc["noise_scale"] > 0, dict(doc))
        self.assertFalse(doc.get("replayed"), dict(doc))
        self.assertTrue(doc.get("request_id"), dict(doc))

    # -- the flow -------------------------------------------------------------------------

    def test_each_aggregate_and_mechanism_reports_value_scale_and_charge(self):
        cases = [
            ("count", [], "laplace", 0),
            ("count", [], "gaussian", 1e-8),
            ("sum", ["--column", "wages"], "laplace", 0),
            ("sum", ["--column", "age", "--lower", "18", "--upper", "65"], "gaussian", 1e-8),
            ("mean", ["--column", "education"], "laplace", 0),
            ("mean", ["--column", "wages"], "gaussian", 1e-8),
        ]
        for aggregate, extra, mechanism, delta in cases:
            with self.subTest(aggregate=aggregate, mechanism=mechanism):
                before = self.budget()
                eps = fresh_eps()
                args = ["--aggregate", aggregate, *extra, "--epsilon", eps,
                        "--mechanism", mechanism]
                if delta:
                    args += ["--delta", delta]
                doc = self.query(*args)
                self.assert_query_document(doc, mechanism, eps, delta)
                # The budget in the answer is the ledger after this debit committed.
                after = self.budget()
                self.assertEqual(doc["budget"], dict(after))
                self.assert_close(after["epsilon_spent"], before["epsilon_spent"] + eps)
                self.assert_close(after["delta_spent"], before["delta_spent"] + delta)
                self.assert_close(after["epsilon_remaining"],
                                  after["epsilon_total"] - after["epsilon_spent"])
                # noise_scale is the mechanism's own parameter: Laplace b = sensitivity / epsilon
                # (Dwork, McSherry, Nissim & Smith 2006, Prop. 1). The server may round b up
                # (discretised sampler), never down; allow 1 %.
                if mechanism == "laplace" and aggregate != "mean":
                    b = doc["sensitivity"] / eps
                    self.assertGreaterEqual(doc["noise_scale"], b * (1 - 1e-9), dict(doc))
                    self.assertLessEqual(doc["noise_scale"], b * 1.01, dict(doc))
                if aggregate != "count":
                    self.assertIn("lower", doc)
                    self.assertIn("upper", doc)
                if extra[2:4] == ["--lower", "18"]:
                    self.assertEqual((doc["lower"], doc["upper"]), (18, 65))
                if aggregate == "count" and mechanism == "laplace":
                    self.assertEqual(doc["sensitivity"], 1)
                    # 7425 rows; b = 50: the answer is within 50 * 30 with overwhelming probability.
                    self.assertLess(abs(doc["value"] - 7425), 1500, dict(doc))
                lo, hi = doc["interval"]["lower"], doc["interval"]["upper"]
                self.assertLessEqual(lo, doc["value"])
                self.assertGreaterEqual(hi, doc["value"])

    def test_ledger_spent_equals_sum_of_audit_entries(self):
        ids = [self.query("--aggregate", "count", "--epsilon", fresh_eps())["request_id"],
               self.query("--aggregate", "sum", "--column", "wages", "--epsilon", fresh_eps(),
                          "--mechanism", "gaussian", "--delta", 1e-8)["request_id"]]
        entries = self.audit()
        budget = self.budget()
        self.assertGreaterEqual(len(entries), 2)
        self.assert_close(budget["epsilon_spent"], math.fsum(e["epsilon"] for e in entries))
        self.assert_close(budget["delta_spent"], math.fsum(e["delta"] for e in entries))
        # Newest last, each with who/when/what.
        self.assertEqual([e["seq"] for e in entries], list(range(1, len(entries) + 1)))
        self.assertEqual([e["request_id"] for e in entries[-2:]], ids)
        for e in entries:
            for field in ("request_id", "analyst", "created_at", "aggregate", "mechanism",
                          "epsilon", "delta"):
                self.assertIn(field, e)
            self.assertEqual(e["analyst"], "alice")
        self.assertEqual(sorted(e["created_at"] for e in entries), [e["created_at"] for e in entries])
        self.assertEqual((entries[-1]["aggregate"], entries[-1]["mechanism"], entries[-1]["column"]),
                         ("sum", "gaussian", "wages"))

    def test_overspending_query_is_refused_and_charges_nothing(self):
        self.query("--aggregate", "count", "--epsilon", fresh_eps())  # at least one row in the audit
        budget_before, audit_before = self.budget(), self.audit()
        too_much = budget_before["epsilon_remaining"] + 0.25
        refused = self.query("--aggregate", "count", "--epsilon", too_much, check=False)
        self.assert_error(refused, "RESOURCE_EXHAUSTED")
        self.assertEqual(refused.returncode, 1)
        self.assertEqual(list(refused.keys()), ["error"], "a refused query leaks fields")
        # Delta can run out too: the whole delta budget is 1e-6.
        refused = self.query("--aggregate", "count", "--epsilon", fresh_eps(), "--mechanism",
                             "gaussian", "--delta", budget_before["delta_remaining"] + 1e-6,
                             check=False)
        self.assert_error(refused, "RESOURCE_EXHAUSTED")
        self.assertEqual(dict(self.budget()), dict(budget_before))
        self.assertEqual(self.audit(), audit_before)

    def test_repeated_request_id_replays_without_charge(self):
        request_id = "e2e-" + uuid.uuid4().hex
        args = ("--aggregate", "sum", "--column", "age", "--epsilon", fresh_eps(),
                "--request-id", request_id)
        first = self.query(*args)
        self.assertEqual(first["request_id"], request_id)
        self.assertFalse(first["replayed"])
        budget_after_first, audit_after_first = self.budget(), self.audit()

        again = self.query(*args)
        self.assertTrue(again["replayed"], dict(again))
        self.assertEqual(again["request_id"], request_id)
        self.assertEqual(again["value"], first["value"])
        self.assertEqual(again["noise_scale"], first["noise_scale"])
        self.assertEqual(again["epsilon"], first["epsilon"])
        self.assertEqual(dict(self.budget()), dict(budget_after_first))
        self.assertEqual(self.audit(), audit_after_first)
        self.assertEqual(sum(1 for e in audit_after_first if e["request_id"] == request_id), 1)

        # Same id, different question: refused, nothing charged.
        for different in (("--aggregate", "sum", "--column", "age", "--epsilon", fresh_eps() * 2),
                          ("--aggregate", "count", "--epsilon", fresh_eps()),
                          ("--aggregate", "sum", "--column", "wages", "--epsilon", fresh_eps())):
            with self.subTest(different=different):
                clash = self.query(*different, "--request-id", request_id, check=False)
                self.assert_error(clash, "ALREADY_EXISTS")
        self.assertEqual(dict(self.budget()), dict(budget_after_first))
        self.assertEqual(self.audit(), audit_after_first)

    def test_metrics_endpoint_shows_counters_matching_the_ledger(self):
        def queries_total(samples, aggregate, outcome):
            values = harness.metric_values(samples, "dpq_queries_total", dataset="slid",
                                           aggregate=aggregate, outcome=outcome)
            return sum(values)

        before = self.dpqd.metrics()
        self.query("--aggregate", "count", "--epsilon", fresh_eps())
        self.query("--aggregate", "mean", "--column", "age", "--epsilon", fresh_eps())
        refused = self.query("--aggregate", "count", "--epsilon", 1e3, check=False)
        self.assert_error(refused, "RESOURCE_EXHAUSTED")
        samples = self.dpqd.metrics()
        self.assertEqual(queries_total(samples, "count", "ok") - queries_total(before, "count", "ok"), 1)
        self.assertEqual(queries_total(samples, "mean", "ok") - queries_total(before, "mean", "ok"), 1)
        self.assertEqual(queries_total(samples, "count", "resource_exhausted") -
                         queries_total(before, "count", "resource_exhausted"), 1)
        names = {n for (n, _l, _v) in samples}
        for name in ("dpq_queries_total", "dpq_epsilon_spent_total", "dpq_budget_remaining"):
            self.assertIn(name, names)

        budget = self.budget()
        spent = harness.metric_values(samples, "dpq_epsilon_spent_total", population="slid")
        self.assertTrue(spent, "no dpq_epsilon_spent_total{population=\"slid\"} sample")
        # The exposition prints doubles with limited digits: compare to 1e-9 relative.
        self.assertAlmostEqual(math.fsum(spent), budget["epsilon_spent"],
                               delta=1e-9 * max(1, budget["epsilon_spent"]))
        remaining = harness.metric_values(samples, "dpq_budget_remaining", population="slid",
                                          param="epsilon")
        self.assertEqual(len(remaining), 1, remaining)
        self.assertAlmostEqual(remaining[0], budget["epsilon_remaining"], delta=1e-9)
        remaining_delta = harness.metric_values(samples, "dpq_budget_remaining",
                                                population="slid", param="delta")
        self.assertEqual(len(remaining_delta), 1, remaining_delta)
        self.assertAlmostEqual(remaining_delta[0], budget["delta_remaining"], delta=1e-15)

    def test_restart_on_same_data_dir_keeps_datasets_ledger_and_audit(self):
        self.query("--aggregate", "count", "--epsilon", fresh_eps())
        datasets_before = self.dpqd.ctl("dataset", "list")
        show_before = self.dpqd.ctl("dataset", "show", "slid")
        budget_before, audit_before = self.budget(), self.audit()
        self.assertGreater(len(audit_before), 0)
        replay_id = "e2e-restart-" + uuid.uuid4().hex
        replay_args = ("--aggregate", "mean", "--column", "wages", "--epsilon", fresh_eps(),
                       "--request-id", replay_id)
        first = self.query(*replay_args)
        budget_before, audit_before = self.budget(), self.audit()

        self.dpqd.restart()

        self.assertEqual(self.dpqd.ctl("dataset", "list"), datasets_before)
        self.assertEqual(self.dpqd.ctl("dataset", "show", "slid"), show_before)
        self.assertEqual(dict(self.budget()), dict(budget_before))
        self.assertEqual(self.audit(), audit_before)
        # Idempotency keys survive: the stored answer comes back, uncharged.
        again = self.query(*replay_args)
        self.assertTrue(again["replayed"], dict(again))
        self.assertEqual(again["value"], first["value"])
        self.assertEqual(dict(self.budget()), dict(budget_before))
        # The analyst's token and grant survive too, and the audit chain continues.
        doc = self.query("--aggregate", "count", "--epsilon", fresh_eps())
        entries = self.audit()
        self.assertEqual(entries[:-1], audit_before)
        self.assertEqual(entries[-1]["seq"], audit_before[-1]["seq"] + 1)
        self.assertEqual(entries[-1]["request_id"], doc["request_id"])
        # The second start found the schema current: no migration applied again.
        started = re.findall(r"schema version (\d+) \((\d+) migration", self.dpqd.log_text())
        self.assertEqual(len(started), 1, self.dpqd.log_text())
        self.assertEqual(started[0][1], "0", self.dpqd.log_text())

    def test_budget_spends_down_exactly_in_decimal_steps(self):
        # A budget of 0.3 is exactly three queries of 0.1: the ledger charges exact decimal units
        # (server/query/privacy_units.h); binary doubles would give 0.1 + 0.1 + 0.1 > 0.3.
        self.dpqd.ctl("dataset", "create", "--infer-types", "steps", "--csv", harness.data_file("salaries.csv"),
                      "--privacy-unit", "person_id")
        self.dpqd.ctl("grant", "alice", "steps")
        self.dpqd.ctl("budget", "set", "steps", "--epsilon", 0.3, "--delta", 0)
        # Three different questions (K = 1, 2, 3) of 0.1 each: identical ones would hit the cache.
        for i in range(3):
            with self.subTest(query=i + 1):
                doc = self.dpqd.ctl("query", "steps", "--aggregate", "count", "--epsilon", 0.1,
                                    "--max-contributions", i + 1, token=self.alice, check=False)
                self.assertEqual(doc.returncode, 0, "query %d of 0.1 against a budget of 0.3 "
                                 "was refused: %r" % (i + 1, dict(doc)))
        refused = self.dpqd.ctl("query", "steps", "--aggregate", "count", "--epsilon", 0.1,
                                "--max-contributions", 4, token=self.alice, check=False)
        self.assert_error(refused, "RESOURCE_EXHAUSTED")
        budget, entries = self.budget("steps"), self.audit("steps")
        self.assertEqual(len(entries), 3)
        self.assert_close(budget["epsilon_spent"], math.fsum(e["epsilon"] for e in entries))
        self.assert_close(budget["epsilon_remaining"], 0.0)

    def test_server_and_token_from_environment(self):
        # dpqctl takes --server / --token from DPQ_SERVER / DPQ_TOKEN when the flags are absent.
        env = {k: v for k, v in os.environ.items() if k not in ("DPQ_TOKEN", "DPQ_SERVER")}
        env.update(DPQ_SERVER=self.dpqd.address, DPQ_TOKEN=self.alice)
        proc = subprocess.run([harness.dpqctl_path(), "budget", "show", "slid", "--json"],
                              capture_output=True, env=env, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(json.loads(proc.stdout)["dataset"], "slid")
        # The flag wins over the environment.
        proc = subprocess.run([harness.dpqctl_path(), "--token", "not-a-token-0123456789",
                               "budget", "show", "slid", "--json"],
                              capture_output=True, env=env, timeout=60)
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(json.loads(proc.stdout)["error"]["code"], "UNAUTHENTICATED")

    def test_tokens_are_not_stored_in_plaintext(self):
        # "Tokens are stored only as SHA-256 hashes": after a clean restart (checkpoint: every
        # page on disk) neither token appears anywhere under --data-dir, WAL and logs included.
        # This restart goes through SIGINT (the other one through SIGTERM).
        self.dpqd.restart(signal.SIGINT)
        for name, token in (("alice", self.alice), ("admin", self.dpqd.admin_token)):
            needle = token.encode("utf-8")
            for root, _dirs, files in os.walk(self.dpqd.data_dir):
                for f in files:
                    path = os.path.join(root, f)
                    try:
                        with open(path, "rb") as fh:
                            found = needle in fh.read()
                    except OSError:
                        continue
                    self.assertFalse(found, "the %s token is stored in clear in %s" % (name, path))

    def test_concurrent_queries_never_overspend(self):
        # The debit locks the ledger row: of 12 simultaneous queries of epsilon 0.25 against a
        # budget of 1, exactly 4 commit, and the ledger still equals the audit.
        self.dpqd.ctl("dataset", "create", "--infer-types", "pbc", "--csv", harness.data_file("pbc.csv"),
                      "--privacy-unit", "patient_id")
        self.dpqd.ctl("grant", "alice", "pbc")
        self.dpqd.ctl("budget", "set", "pbc", "--epsilon", 1, "--delta", 0)

        def one(i):  # twelve different questions (K = 1..12): no cache hits
            return self.dpqd.ctl("query", "pbc", "--aggregate", "count", "--epsilon", 0.25,
                                 "--max-contributions", i + 1, token=self.alice, check=False)

        with concurrent.futures.ThreadPoolExecutor(12) as pool:
            results = list(pool.map(one, range(12)))
        codes = sorted(str(r.error_code) for r in results)
        self.assertEqual(codes, ["None"] * 4 + ["RESOURCE_EXHAUSTED"] * 8, codes)
        budget, entries = self.budget("pbc"), self.audit("pbc")
        self.assertEqual(len(entries), 4)
        self.assert_close(budget["epsilon_spent"], 1.0)
        self.assert_close(budget["epsilon_spent"], math.fsum(e["epsilon"] for e in entries))
        self.assertEqual(budget["epsilon_remaining"], 0)

        # Simultaneous repeats of one request id: one charge, one answer.
        self.dpqd.ctl("budget", "set", "pbc", "--epsilon", 10, "--delta", 0)
        request_id = "e2e-concurrent-" + uuid.uuid4().hex

        def same(_):  # K = 13: not one of the questions above (the result cache would answer it)
            return self.dpqd.ctl("query", "pbc", "--aggregate", "count", "--epsilon", 0.25,
                                 "--max-contributions", 13, "--request-id", request_id,
                                 token=self.alice, check=False)

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            results = list(pool.map(same, range(8)))
        for r in results:
            self.assertEqual(r.returncode, 0, dict(r))
        self.assertEqual(len({r["value"] for r in results}), 1, [r["value"] for r in results])
        self.assertEqual(sorted(r["replayed"] for r in results), [False] + [True] * 7)
        entries = self.audit("pbc")
        self.assertEqual(len(entries), 5)
        self.assert_close(self.budget("pbc")["epsilon_spent"], 1.25)

    def test_contribution_bound_k_scales_count_and_sensitivity(self):
        created = self.dpqd.ctl("dataset", "create", "--infer-types", "colon", "--csv", harness.data_file("colon.csv"),
                                "--privacy-unit", "patient_id")
        self.assertEqual(created["rows_loaded"], 1858)
        self.dpqd.ctl("grant", "alice", "colon")
        self.dpqd.ctl("budget", "set", "colon", "--epsilon", 3e6, "--delta", 0)
        answers = {}
        for k, truth in ((1, 929), (2, 1858)):
            with self.subTest(k=k):
                doc = self.dpqd.ctl("query", "colon", "--aggregate", "count", "--epsilon", 1e6,
                                    "--max-contributions", k, token=self.alice)
                self.assertEqual(doc["max_contributions"], k)
                lo, hi = doc["interval"]["lower"], doc["interval"]["upper"]
                width = hi - lo
                # With b = K / 1e6 the answer is the true count to a few millionths. The 95 %
                # interval misses the truth 5 % of the time by design, so allow 10 widths of slack
                # (Laplace tail beyond that: exp(-60)); plus 0.5 for a discretised sampler.
                self.assertLessEqual(lo - 10 * width - 0.5, truth, dict(doc))
                self.assertGreaterEqual(hi + 10 * width + 0.5, truth, dict(doc))
                self.assertEqual(round(doc["value"]), truth, dict(doc))
                answers[k] = doc
        self.assertEqual(answers[2]["sensitivity"], 2 * answers[1]["sensitivity"])
        self.assertAlmostEqual(answers[2]["noise_scale"] / answers[1]["noise_scale"], 2, delta=0.02)
        # Default K is 1; 0 on the wire also means the default (proto: "0 means the default, 1"),
        # so this is the K = 1 question again: the result cache answers it, charging nothing.
        doc = self.dpqd.ctl("query", "colon", "--aggregate", "count", "--epsilon", 1e6,
                            token=self.alice)
        self.assertEqual(doc["max_contributions"], 1)
        self.assertTrue(doc["cached"], dict(doc))
        self.assertEqual(doc["value"], answers[1]["value"])
        entries = self.audit("colon")
        budget = self.budget("colon")
        self.assertEqual(len(entries), 2)
        self.assert_close(budget["epsilon_spent"], math.fsum(e["epsilon"] for e in entries),
                          tol=1e-12 * 3e6)


if __name__ == "__main__":
    unittest.main(verbosity=2)
