#!/usr/bin/python3
"""End-to-end: `dpqctl query --where` through dpqd.

With epsilon 1e6 the noise is far below one unit, so the released value must equal the exact
answer computed here from the CSV (within the reported interval); an invalid or injection-looking
filter is refused with INVALID_ARGUMENT naming a position, before any SQL runs and with nothing
charged.
"""

import csv
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def slid_rows():
    with open(harness.data_file("slid.csv"), newline="") as f:
        return list(csv.DictReader(f))


class WhereTest(harness.DpqdTestCase):
    @classmethod
    def setUpClass(cls):
        cls.dpqd = cls.new_class_dpqd()
        cls.create_slid(cls.dpqd)
        cls.dpqd.ctl("budget", "set", "slid", "--epsilon", 9e6, "--delta", 1e-6)
        cls.rows = slid_rows()

    def assert_within_interval(self, doc, truth):
        lo, hi = doc["interval"]["lower"], doc["interval"]["upper"]
        # epsilon 1e6: the 95 % interval is a few millionths wide; 10 widths plus one grid step of
        # slack keeps the false-failure rate below exp(-60) (Laplace tail).
        slack = 10 * (hi - lo) + 1e-3
        self.assertLessEqual(lo - slack, truth, dict(doc))
        self.assertGreaterEqual(hi + slack, truth, dict(doc))

    def test_filtered_count_equals_the_exact_count(self):
        where = "age >= 60 AND sex = 'Female'"
        truth = sum(1 for r in self.rows if int(r["age"]) >= 60 and r["sex"] == "Female")
        doc = self.dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", 1e6, "--where", where)
        self.assert_within_interval(doc, truth)

    def test_filtered_mean_with_in_between_and_null_test(self):
        where = "language IN ('French', 'Other') AND age BETWEEN 20 AND 40 AND education IS NOT NULL"
        kept = [float(r["wages"]) for r in self.rows
                if r["language"] in ("French", "Other") and 20 <= int(r["age"]) <= 40
                and r["education"] != "" and r["wages"] != ""]
        truth = sum(min(max(w, 0.0), 100.0) for w in kept) / len(kept)
        doc = self.dpqd.ctl("query", "slid", "--aggregate", "mean", "--column", "wages",
                            "--epsilon", 1e6, "--where", where)
        self.assert_within_interval(doc, truth)

    def test_a_filter_is_part_of_the_query_identity(self):
        a = self.dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", 1,
                          "--request-id", "where-id", "--where", "age > 30")
        self.assertFalse(a["replayed"])
        same = self.dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", 1,
                             "--request-id", "where-id", "--where", "(age > 30)")
        self.assertTrue(same["replayed"], "the same filter, differently written, is the same query")
        other = self.dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", 1,
                              "--request-id", "where-id", "--where", "age > 31", check=False)
        self.assert_error(other, "ALREADY_EXISTS")

    def test_invalid_and_injection_filters_are_refused_and_charge_nothing(self):
        before = self.snapshot(self.dpqd, "slid")
        for where in ("1=1; DROP TABLE audit", "age > 1 --", "age > 1 /* x */",
                      "name = 'x' OR '1'='1'", "age = 'x'", "sex > 3", "nosuch = 1",
                      "(age > 1", "age > 1)", "'unterminated", "age >", "age IN ()"):
            with self.subTest(where=where):
                r = self.dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", 0.1,
                                  "--where", where, check=False)
                self.assert_error(r, "INVALID_ARGUMENT", "position")
        self.assertEqual(self.snapshot(self.dpqd, "slid"), before)
        # The server is still healthy.
        self.dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", 0.1, "--where", "age > 0")


if __name__ == "__main__":
    unittest.main(verbosity=2)
