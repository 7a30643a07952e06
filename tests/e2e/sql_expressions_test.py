#!/usr/bin/python3
"""End-to-end: per-row expressions in DP SQL through dpqd, the real dpqctl and the Python client.

Each construct is answered by `dpqctl sql` (JSON and text), explained by `dpqctl sql --explain`
(the expression, its clamp bounds and how they were derived) and answered by Python's Client.sql;
the statement with a flag form (COUNT(DISTINCT unit), the flag count with one row per unit) is
the same question as its flag twin (answered from the result cache). At epsilon 1e6 each value
must equal PostgreSQL's exact answer on the same rows. The conformance cases
(sql_conformance.json, "expr_" cases) cover every construct and refusal one by one.
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import sql_support  # noqa: E402
from sql_test import SqlCase, dp  # noqa: E402

BAND = "CASE WHEN age < 30 THEN 'young' ELSE 'old' END"


@sql_support.needs_psql
class SqlExpressionTest(SqlCase):

    def assert_close(self, got, want):
        # epsilon 1e6: Laplace scale ~ sensitivity * 1e-6 (sensitivity <= 1100 here), so 1e-3
        # relative is hundreds of scales.
        self.assertAlmostEqual(got, want, delta=1e-3 * max(1.0, abs(want)))

    def test_expressions_in_aggregates_where_and_group_by(self):
        doc = self.sql(dp() + "%s AS band, SUM(age + wages) AS s, COUNT(CASE WHEN age > 60 "
                       "THEN 1 END) AS old FROM slid WHERE wages * 2 > age GROUP BY band "
                       "ORDER BY band" % BAND)
        want = self.truth("SELECT %s AS band, sum(age + wages), count(*) FILTER (WHERE age > 60) "
                          "FROM truth.slid WHERE wages * 2 > age GROUP BY 1 ORDER BY 1" % BAND)
        self.assertEqual([r[0] for r in doc["rows"]], [w[0] for w in want])
        for got, w in zip(doc["rows"], want):
            self.assert_close(got[1], float(w[1]))
            self.assertEqual(got[2], int(w[2]))
        self.assertEqual([c["name"] for c in doc["columns"]], ["band", "s", "old"])
        text = self.dpqd.ctl_text("sql", dp() + "%s AS band, COUNT(*) AS n FROM slid GROUP BY "
                                  "band ORDER BY band" % BAND)
        self.assertTrue(text.splitlines()[0].startswith("band"), text)
        self.assertTrue(text.endswith("\n"))

    def test_explain_shows_the_derived_bounds_and_charges_nothing(self):
        before = self.snapshot(self.dpqd, "slid")
        statement = dp() + "SUM(wages / (age + 1)) AS r, AVG(age * 2, contribution_bounds_per_" \
                           "group => (0, 50)) AS a FROM slid"
        plan = self.sql(statement, "--explain")
        derived, given = (p["value_expression"] for p in plan["parts"])
        self.assertEqual(derived["canonical"], "(wages / (age + 1))")
        self.assertEqual((derived["lower"], derived["upper"]), (0, 100))
        self.assertTrue(derived["derived"])
        self.assertIn("(age + 1) in [1, 121]", derived["derivation"])
        self.assertFalse(given["derived"])
        self.assertEqual((given["lower"], given["upper"]), (0, 50))
        # The sensitivity follows from the derived bounds: K = 5 rows of at most 100.
        self.assertEqual(plan["parts"][0]["sensitivity"], 500)
        text = self.dpqd.ctl_text("sql", statement, "--explain")
        self.assertIn("derived from declared bounds", text)
        self.assertIn("(wages / (age + 1))", text)
        self.assertTrue(text.endswith("\n"))
        # A count reads its expression only to count the rows where it is not NULL.
        plan = self.sql(dp() + "COUNT(IF(age > 60, 1, NULL)) FROM slid", "--explain")
        self.assertEqual(plan["parts"][0]["value_expression"],
                         {"canonical": "CASE WHEN (age > 60) THEN 1 ELSE NULL END",
                          "counted_only": True})
        self.assertEqual(self.snapshot(self.dpqd, "slid"), before)

    def test_count_distinct_unit_is_the_flag_count(self):
        doc = self.sql(dp() + "COUNT(DISTINCT patient_id) AS n FROM colon WHERE age > 50")
        (want,), = self.truth("SELECT count(DISTINCT patient_id) FROM truth.colon WHERE age > 50")
        self.assertEqual(doc["rows"], [[int(want)]])
        before = self.snapshot(self.dpqd, "colon")
        flag = self.dpqd.ctl("query", "colon", "--aggregate", "count", "--where", "age > 50",
                             "--epsilon", 1e6)
        self.assertTrue(flag["cached"], "the flag count and COUNT(DISTINCT unit) are one question")
        self.assertEqual(self.snapshot(self.dpqd, "colon"), before)

    def test_key_only_select_spends_everything_on_selection(self):
        before = self.snapshot(self.dpqd, "slid")
        doc = self.sql(dp(", delta = 1e-3") + "sex FROM slid GROUP BY sex ORDER BY sex")
        self.assertEqual(doc["rows"], [["Female"], ["Male"]])
        after = self.snapshot(self.dpqd, "slid")
        self.assertAlmostEqual(after[0] - before[0], 1e6, delta=1e-3)
        self.assertAlmostEqual(after[1] - before[1], 1e-3, delta=1e-12)
        plan = self.sql(dp(", delta = 1e-3") + "sex FROM slid GROUP BY sex", "--explain")
        self.assertEqual(plan["parts"][0]["keys"]["source"], "selected")

    def test_refusals_name_the_column_and_charge_nothing(self):
        before = self.snapshot(self.dpqd, "colon")
        r = self.sql(dp() + "SUM(study + 1) AS s FROM colon", check=False)
        self.assert_error(r, "INVALID_ARGUMENT", "study has no declared bounds")
        r = self.sql(dp() + "SUM(age / (nodes - 1)) AS s FROM colon", check=False)
        self.assert_error(r, "INVALID_ARGUMENT", "include 0")
        r = self.sql(dp() + "SUM(CAST(rx AS INT64)) AS s FROM colon", check=False)
        self.assert_error(r, "INVALID_ARGUMENT", "CAST from STRING")
        self.assertEqual(self.snapshot(self.dpqd, "colon"), before)

    def test_python_client_sql_with_expressions(self):
        harness.require_grpc_stubs()
        import dpq  # the package of client/python, assembled in <build>/python
        client = dpq.Client(self.dpqd.address, self.dpqd.admin_token)
        self.addCleanup(client.close)
        out = client.sql(dp() + "%s AS band, AVG(wages / 10) AS w FROM slid GROUP BY band "
                         "ORDER BY band" % BAND)
        want = self.truth("SELECT %s, avg(wages / 10) FROM truth.slid GROUP BY 1 ORDER BY 1"
                          % BAND)
        self.assertEqual(out.columns, ["band", "w"])
        self.assertEqual([r[0] for r in out.rows], [w[0] for w in want])
        for got, w in zip(out.rows, want):
            self.assert_close(got[1], float(w[1]))
        plan = client.explain_sql(dp() + "SUM(ABS(age - 40)) FROM slid")
        part = plan["parts"][0]
        expression = part.get("value_expression") or part.get("valueExpression")
        self.assertEqual(expression["canonical"], "ABS((age - 40))")
        self.assertEqual(part["function"], "SUM")


if __name__ == "__main__":
    unittest.main()
