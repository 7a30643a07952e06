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
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import sql_support  # noqa: E402

CASES_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sql_conformance.json")
# The tables of population trial (sql_support.create_trial): a statement reading one charges trial.
TRIAL_TABLES = ("patients", "recurrence", "death", "visits", "doses", "appointments")


def ledger_of(case):
    """The ledger a case charges, from the tables its statement names."""
    words = set(re.findall(r"[a-z_]+", case["sql"].lower().replace("`", "")))
    if words & set(TRIAL_TABLES):
        return "trial"
    for name in ("slidc", "slid", "colon"):
        if name in words:
            return name
    raise AssertionError("no ledger for case %s" % case["name"])


def interleaved_by_ledger(cases):
    """The cases, one of each ledger in turn (file order within a ledger)."""
    queues = {}
    for case in cases:
        queues.setdefault(ledger_of(case), []).append(case)
    out = []
    while any(queues.values()):
        for queue in queues.values():
            if queue:
                out.append(queue.pop(0))
    return out


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

    SHARDS = ()  # the shards slid, slidc and colon are created on (sql_conformance_sharded_test)

    def fresh_dpqd(self):
        if getattr(self, "dpqd", None) is not None:
            self.dpqd.stop()
        self.dpqd = self.new_dpqd()
        self.add_shards()
        sql_support.create_datasets(self.dpqd, self.SHARDS)
        # slid again, with declared categories (Klingon has no rows): GROUP BY releases every key.
        args = ["dataset", "create", "slidc", "--csv", harness.data_file("slid.csv"),
                "--privacy-unit", "person_id", "--bounds", "wages=0:100", "--bounds", "age=0:120",
                "--categories", "sex=Female|Male",
                "--categories", "language=English|French|Klingon|Other"]
        if self.SHARDS:
            args += ["--shards", ",".join(self.SHARDS)]
        for t in harness.SLID_TYPES:
            args += ["--type", t]
        self.dpqd.ctl(*args)
        self.dpqd.ctl("budget", "set", "slidc", "--epsilon", 9e6, "--delta", 0.9)
        sql_support.load_truth(self.dpqd)

    def add_shards(self):
        """Registers the shards with the fresh dpqd (none here)."""

    def selected_cases(self):
        cases = self.document["cases"]
        self.assertGreaterEqual(len(cases), 100)
        self.assertGreaterEqual(sum(1 for c in cases if " JOIN " in c["sql"].upper()), 30)
        return cases

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

    def ledger_state(self):
        """Every ledger's spend and audit length, in one psql call (a refusal must change none)."""
        return sql_support.psql(
            self.dpqd, "SELECT string_agg(concat_ws(':', l.population_id, l.epsilon_spent_units, "
                       "l.delta_spent_units, (SELECT count(*) FROM audit a WHERE a.population_id "
                       "= l.population_id)), ',' ORDER BY l.population_id) FROM ledgers l")

    def test_every_case(self):
        cases = self.selected_cases()
        write = os.environ.get("DPQ_SQL_CONFORMANCE_WRITE") == "1"
        self.dpqd = None
        # The refusals first, on the first dpqd: each must leave every ledger as it was.
        self.fresh_dpqd()
        before = self.ledger_state()
        for case in (c for c in cases if "error" in c):
            with self.subTest(case=case["name"]):
                r = self.dpqd.ctl("sql", case["sql"], check=False)
                self.assert_error(r, case["error"]["code"], case["error"]["message"] or None)
                self.assertEqual(self.ledger_state(), before, "a refusal charged something")
        # The answers, taking each ledger in turn, so one dpqd serves CASES_PER_DPQD answers from
        # every ledger before the next is started.
        charged = {}
        for case in interleaved_by_ledger([c for c in cases if "error" not in c]):
            ledger = ledger_of(case)
            if charged.get(ledger, 0) == self.CASES_PER_DPQD:
                self.fresh_dpqd()
                charged = {}
            charged[ledger] = charged.get(ledger, 0) + 1
            with self.subTest(case=case["name"]):
                truth = [[parse_truth_cell(c) for c in row]
                         for row in sql_support.truth_rows(self.dpqd, case["truth"])]
                if write:
                    case["rows"] = truth
                else:
                    # The stored rows are what PostgreSQL answers today.
                    self.assert_rows(dict(case, tolerance={"relative": 1e-9}), truth, case["rows"])
                doc = self.dpqd.ctl("sql", case["sql"])
                self.assert_rows(case, doc["rows"], truth)
        if write:
            with open(CASES_FILE, "w") as f:
                json.dump(self.document, f, indent=1)
                f.write("\n")

if __name__ == "__main__":
    unittest.main()
