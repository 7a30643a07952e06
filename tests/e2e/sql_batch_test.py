#!/usr/bin/python3
"""End-to-end: a SQL script of several aggregates through dpqd, as one batch.

- `--joint-delta D` (SqlRequest.joint_delta) prices the script's parts jointly by RDP / PLD, as
  `query-batch --delta D` does: the charge is the smaller of that price and the parts' own charges
  added up, ExplainSql reports exactly the charge a run makes, and the ledger moves by it.
- A multi-aggregate script is one question: asked again by the same analyst on the same data, it
  is answered from the result cache at no charge (a single aggregate always was).
- A joint delta outside [0, 1) is INVALID_ARGUMENT and charges nothing.
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def script(statements, aggregates, epsilon):
    """`statements` DP SELECTs on slid, each of `aggregates` COUNT(*) parts, `epsilon` each."""
    items = ", ".join("COUNT(*) AS c%d" % i for i in range(aggregates))
    one = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = %r) %s FROM slid" % (epsilon, items)
    return "; ".join([one] * statements)


class SqlBatchTest(harness.DpqdTestCase):
    @classmethod
    def setUpClass(cls):
        cls.dpqd = cls.new_class_dpqd()
        cls.create_slid(cls.dpqd)
        cls.dpqd.ctl("budget", "set", "slid", "--epsilon", 1000, "--delta", 0.01)

    def sql(self, statement, *args, check=True):
        return self.dpqd.ctl("sql", statement, *args, check=check)

    def test_joint_delta_prices_the_parts_jointly_as_explain_says(self):
        # 100 parts of epsilon 0.1 (5 statements of 20 counts at epsilon 2): 10 one by one; far
        # less jointly at delta 1e-5 (the same workload as tests/db/query_batch_test.cc, ~4.2).
        text = script(5, 20, 2)
        plan = self.sql(text, "--explain", "--joint-delta", 1e-5)
        self.assertAlmostEqual(plan["epsilon_sum"], 10, delta=1e-9)
        self.assertLess(plan["epsilon"], 0.5 * plan["epsilon_sum"])
        self.assertEqual(plan["delta"], 1e-5)
        before = self.snapshot(self.dpqd, "slid")
        doc = self.sql(text, "--joint-delta", 1e-5)
        after = self.snapshot(self.dpqd, "slid")
        self.assertEqual(doc["epsilon"], plan["epsilon"], "explain states exactly what a run charges")
        self.assertEqual(doc["delta"], plan["delta"])
        self.assertAlmostEqual(doc["epsilon_sum"], 10, delta=1e-9)
        self.assertAlmostEqual(after[0] - before[0], doc["epsilon"], delta=1e-9)
        self.assertAlmostEqual(after[1] - before[1], 1e-5, delta=1e-15)
        self.assertEqual(after[2], before[2] + 1, "one script, one audit row")
        self.assertEqual(len(doc["results"]), 5)
        entry = self.dpqd.ctl("audit", "slid")["entries"][-1]
        self.assertEqual((entry["kind"], entry["rows"]), ("batch", 100))
        self.assertIn("batch", self.dpqd.ctl_text("audit", "slid").splitlines()[-1])

    def test_without_joint_delta_the_parts_add_up(self):
        text = script(1, 4, 0.5)
        plan = self.sql(text, "--explain")
        self.assertEqual(plan["epsilon"], plan["epsilon_sum"])
        before = self.snapshot(self.dpqd, "slid")
        doc = self.sql(text)
        self.assertAlmostEqual(doc["epsilon"], 0.5, delta=1e-12)
        self.assertEqual(doc["epsilon"], doc["epsilon_sum"])
        self.assertAlmostEqual(self.snapshot(self.dpqd, "slid")[0] - before[0], 0.5, delta=1e-12)

    def test_a_multi_aggregate_statement_is_cached_like_a_single_one(self):
        text = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.375) COUNT(*) AS n, "
                "SUM(age) AS s FROM slid")
        first = self.sql(text)
        self.assertFalse(first["cached"])
        before = self.snapshot(self.dpqd, "slid")
        second = self.sql(text)
        self.assertTrue(second["cached"])
        self.assertEqual((second["epsilon"], second["delta"]), (0, 0))
        self.assertEqual(second["rows"], first["rows"])
        self.assertEqual(self.snapshot(self.dpqd, "slid"), before, "a cached answer charges nothing")
        # Another joint delta is another question (another price): charged, fresh answers.
        third = self.sql(text, "--joint-delta", 1e-6)
        self.assertFalse(third["cached"])
        self.assertGreater(self.snapshot(self.dpqd, "slid")[0], before[0])

    def test_a_joint_delta_outside_its_range_is_refused_and_charges_nothing(self):
        before = self.snapshot(self.dpqd, "slid")
        for bad in ("1", "-0.1", "nan"):
            for extra in ((), ("--explain",)):
                result = self.sql(script(1, 2, 1), "--joint-delta", bad, *extra, check=False)
                self.assertNotEqual(result.returncode, 0)
                self.assertIn(result.error_code, ("INVALID_ARGUMENT", "USAGE"), dict(result))
        self.assertEqual(self.snapshot(self.dpqd, "slid"), before)

    def test_text_output_names_the_joint_charge_and_the_sum(self):
        text = self.dpqd.ctl_text("sql", script(2, 10, 1), "--joint-delta", 1e-5)
        self.assertRegex(text, r"charged: epsilon [0-9.]+, delta 1e-05 jointly "
                               r"\(the parts one by one: epsilon 2(\.0)?, delta 0(\.0)?\)")
        self.assertTrue(text.endswith("\n"))

    def test_python_client_joint_delta(self):
        harness.require_grpc_stubs()
        import dpq  # the package of client/python, assembled in <build>/python
        client = dpq.Client(self.dpqd.address, self.dpqd.admin_token)
        self.addCleanup(client.close)
        text = script(2, 10, 1.5)
        plan = client.explain_sql(text, joint_delta=1e-5)
        out = client.sql(text, joint_delta=1e-5)
        self.assertAlmostEqual(out.epsilon_sum, 3, delta=1e-9)
        self.assertLess(out.epsilon, out.epsilon_sum)
        self.assertAlmostEqual(plan["epsilon"], out.epsilon, delta=1e-12)
        with self.assertRaises(dpq.DpqError) as e:
            client.sql(text, joint_delta=2)
        self.assertEqual(e.exception.code, "INVALID_ARGUMENT")


if __name__ == "__main__":
    unittest.main()
