#!/usr/bin/python3
"""DP SQL conformance: every case of sql_conformance.json through the real dpqd and dpqctl.

A case is a statement and either its expected rows at epsilon 1e6 ("rows", the exact answer
PostgreSQL gives to the case's "truth" query on plain copies of the same CSVs, which this test
recomputes and checks too) or its expected error (gRPC code and a part of the message). Every
refused case must leave the ledgers untouched.

DPQ_SQL_CONFORMANCE_WRITE=1 rewrites the "rows" of every case from its truth query.
"""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import sql_support  # noqa: E402

CASES_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sql_conformance.json")
# Every ledger a case may charge: three datasets of their own and the population trial (every
# join case's datasets share its one ledger).
LEDGERS = ("slid", "colon", "slidc", "trial")


def as_number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def parse_truth_cell(text):
    """psql's text of one value: a number, an array {a,b}, a string, or NULL (an empty field: the
    demo data hold no empty strings)."""
    if text == "":
        return None
    if text.startswith("{") and text.endswith("}"):
        return [float(v) for v in text[1:-1].split(",") if v]
    n = as_number(text)
    return text if n is None else n


@sql_support.needs_psql
class SqlConformanceTest(harness.DpqdTestCase):
    # Each ledger's budget (9e6, the largest a ledger takes) pays for 9 answers at epsilon 1e6:
    # a fresh dpqd (and fresh ledgers) every CASES_PER_DPQD answered cases.
    CASES_PER_DPQD = 8

    @classmethod
    def setUpClass(cls):
        with open(CASES_FILE) as f:
            cls.document = json.load(f)

    def fresh_dpqd(self):
        if getattr(self, "dpqd", None) is not None:
            self.dpqd.stop()
        self.dpqd = self.new_dpqd()
        sql_support.create_datasets(self.dpqd)
        # slid again, with declared categories (Klingon has no rows): GROUP BY releases every key.
        args = ["dataset", "create", "slidc", "--csv", harness.data_file("slid.csv"),
                "--privacy-unit", "person_id", "--bounds", "wages=0:100", "--bounds", "age=0:120",
                "--categories", "sex=Female|Male",
                "--categories", "language=English|French|Klingon|Other"]
        for t in harness.SLID_TYPES:
            args += ["--type", t]
        self.dpqd.ctl(*args)
        self.dpqd.ctl("budget", "set", "slidc", "--epsilon", 9e6, "--delta", 0.9)
        sql_support.load_truth(self.dpqd)

    def assert_cell(self, got, want, tolerance, where):
        if isinstance(want, list):
            inner = tolerance.get("inner")
            if inner:
                got = got[inner[0]:inner[1]]
            self.assertEqual(len(got), len(want), where)
            for g, w in zip(got, want):
                self.assert_cell(g, w, tolerance, where)
            return
        if isinstance(want, str) or want is None:
            self.assertEqual(got, want, where)
            return
        self.assertIsInstance(got, (int, float), where)
        if "absolute" in tolerance:
            slack = tolerance["absolute"]
        elif "relative" in tolerance:
            slack = tolerance["relative"] * max(1.0, abs(want))
        else:
            # epsilon 1e6: a Laplace scale near sensitivity * 1e-6, so 1e-3 (relative, at least
            # 1e-3 absolute) is hundreds of scales; counts are rounded and must be exact.
            slack = 1e-3 * max(1.0, abs(want))
        self.assertAlmostEqual(got, want, delta=slack, msg=where)

    def assert_rows(self, case, got_rows, want_rows):
        where = "%s: got %r, want %r" % (case["name"], got_rows, want_rows)
        self.assertEqual(len(got_rows), len(want_rows), where)
        if not case.get("ordered"):
            # Unordered: match rows by their non-numeric cells (the group keys), else by position.
            def key(row):
                return tuple(str(c) for c in row if isinstance(c, str) or c is None)
            got_rows = sorted(got_rows, key=key)
            want_rows = sorted(want_rows, key=key)
        for g, w in zip(got_rows, want_rows):
            self.assertEqual(len(g), len(w), where)
            for gc, wc in zip(g, w):
                self.assert_cell(gc, wc, case.get("tolerance", {}), where)

    def test_every_case(self):
        cases = self.document["cases"]
        self.assertGreaterEqual(len(cases), 100)
        self.assertGreaterEqual(sum(1 for c in cases if " JOIN " in c["sql"].upper()), 30)
        write = os.environ.get("DPQ_SQL_CONFORMANCE_WRITE") == "1"
        self.dpqd = None
        answered = 0
        for case in cases:
            if answered % self.CASES_PER_DPQD == 0 and (self.dpqd is None or "error" not in case):
                if self.dpqd is None or answered > 0:
                    self.fresh_dpqd()
                    budgets = {d: self.snapshot(self.dpqd, d) for d in LEDGERS}
            with self.subTest(case=case["name"]):
                if "error" in case:
                    r = self.dpqd.ctl("sql", case["sql"], check=False)
                    self.assert_error(r, case["error"]["code"], case["error"]["message"] or None)
                    # A refusal charges nothing.
                    self.assertEqual({d: self.snapshot(self.dpqd, d) for d in budgets}, budgets)
                    continue
                answered += 1
                truth = [[parse_truth_cell(c) for c in row]
                         for row in sql_support.truth_rows(self.dpqd, case["truth"])]
                if write:
                    case["rows"] = truth
                else:
                    # The stored rows are what PostgreSQL answers today.
                    self.assert_rows(dict(case, tolerance={"relative": 1e-9}), truth, case["rows"])
                doc = self.dpqd.ctl("sql", case["sql"])
                self.assert_rows(case, doc["rows"], truth)
                budgets = {d: self.snapshot(self.dpqd, d) for d in budgets}
        if write:
            with open(CASES_FILE, "w") as f:
                json.dump(self.document, f, indent=1)
                f.write("\n")

if __name__ == "__main__":
    unittest.main()
