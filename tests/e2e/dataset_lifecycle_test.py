#!/usr/bin/python3
"""End-to-end: `dpqctl dataset load` (append, all or nothing, version bump) and `dataset drop`
(raw rows gone, ledger and audit kept and verifiable, confirmation required)."""

import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

HEADER = "person_id,wages,education,age,sex,language\n"


class DatasetLifecycleTest(harness.DpqdTestCase):
    def setUp(self):
        self.dpqd = self.new_dpqd()
        self.create_slid(self.dpqd)
        self.dpqd.ctl("budget", "set", "slid", "--epsilon", 9e6, "--delta", 1e-6)

    def write_csv(self, body):
        fd, path = tempfile.mkstemp(suffix=".csv")
        with os.fdopen(fd, "w") as f:
            f.write(HEADER + body)
        self.addCleanup(os.remove, path)
        return path

    def exact_count(self):
        doc = self.dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", 1e6)
        return round(doc["value"])

    def test_load_appends_rows_in_one_transaction_and_bumps_the_version(self):
        version = self.dpqd.ctl("dataset", "show", "slid")["version"]
        rows = "".join("%d,10.5,12,30,Female,English\n" % (100000 + i) for i in range(50))
        loaded = self.dpqd.ctl("dataset", "load", "slid", "--csv", self.write_csv(rows))
        self.assertEqual(loaded["rows_loaded"], 50)
        self.assertEqual(loaded["dataset"]["version"], version + 1)
        self.assertEqual(self.exact_count(), 7425 + 50)

    def test_a_bad_row_loads_nothing_and_names_its_line(self):
        rows = "200000,10,12,30,Female,English\n200001,10,12,not-a-number,Male,English\n"
        r = self.dpqd.ctl("dataset", "load", "slid", "--csv", self.write_csv(rows), check=False)
        self.assert_error(r, "INVALID_ARGUMENT", ["line 3", "age"])
        self.assertEqual(self.exact_count(), 7425)
        wrong_count = self.dpqd.ctl("dataset", "load", "slid", "--csv",
                                    self.write_csv("300000,10,12\n"), check=False)
        self.assert_error(wrong_count, "INVALID_ARGUMENT", "line 2")

    def test_drop_needs_confirmation_keeps_audit_and_refuses_queries(self):
        self.dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", 0.5)
        self.assert_error(self.dpqd.ctl("dataset", "drop", "slid", check=False),
                          "FAILED_PRECONDITION", "confirm")
        self.dpqd.ctl("dataset", "drop", "slid", "--yes")
        self.assert_error(self.dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", 0.1,
                                        check=False), "NOT_FOUND")
        self.assertNotIn("slid", [d["name"] for d in self.dpqd.ctl("dataset", "list")["datasets"]])
        self.assertEqual(len(self.dpqd.ctl("audit", "slid")["entries"]), 1)
        self.assertTrue(self.dpqd.ctl("audit", "verify", "slid")["ok"])
        self.assert_error(self.dpqd.ctl("dataset", "drop", "slid", "--yes", check=False), "NOT_FOUND")


if __name__ == "__main__":
    unittest.main(verbosity=2)
