#!/usr/bin/python3
"""dpq.Client.sql / explain_sql against a real dpqd (skipped when the proto has no ExecuteSql).

At epsilon 1e6 (dpq's largest per query, on a budget of 9e6) the Laplace noise of a count has scale
about 1e-6, so the SQL count equals the exact count of slid (one row per person) and the SQL mean
of wages agrees with the flag query's mean at the same epsilon to 1e-3 (hundreds of noise scales:
tail probability below e^-100)."""
import unittest

import _paths  # noqa: F401  pylint: disable=unused-import
import harness

harness.require_grpc_stubs()
import dpq  # noqa: E402  pylint: disable=wrong-import-position
from dpq.v1 import dpq_pb2  # noqa: E402  pylint: disable=wrong-import-position

DP = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = %s) "


@unittest.skipUnless(hasattr(dpq_pb2, "SqlRequest"), "the proto has no ExecuteSql")
class ClientSqlTest(harness.DpqdTestCase):

    @classmethod
    def setUpClass(cls):
        cls.dpqd = cls.new_class_dpqd()
        cls.create_slid(cls.dpqd)
        cls.dpqd.ctl("budget", "set", "slid", "--epsilon", 9e6, "--delta", 1e-6)
        cls.client = dpq.Client(cls.dpqd.address, harness.ADMIN_TOKEN)
        cls.addClassCleanup(cls.client.close)
        with open(harness.data_file("slid.csv")) as f:
            cls.rows = sum(1 for _ in f) - 1

    def test_rows_and_data_frame_with_intervals(self):
        result = self.client.sql(DP % "1e6" + "COUNT(*) AS n, AVG(wages) AS mean_wage FROM slid")
        self.assertIsInstance(result, dpq.SqlResult)
        self.assertEqual(result.columns, ["n", "mean_wage"])
        self.assertEqual(result.results[0].types[0], "int64")
        n, mean_wage = result.rows[0]
        self.assertEqual(n, self.rows)
        self.assertIsInstance(n, int)
        flag = self.client.query("slid", "mean", 1e6, column="wages")
        self.assertAlmostEqual(mean_wage, flag.value, delta=1e-3)
        frame = result.to_pandas()
        self.assertEqual(list(frame.columns),
                         ["n", "n_lower", "n_upper", "mean_wage", "mean_wage_lower",
                          "mean_wage_upper"])
        self.assertLessEqual(frame["n_lower"][0], frame["n"][0])
        self.assertAlmostEqual(result.epsilon, 1e6)
        self.assertEqual(result.dataset, "slid")

    def test_explain_charges_nothing(self):
        before = self.snapshot(self.dpqd, "slid")
        plan = self.client.explain_sql(DP % "2" + "COUNT(*), AVG(wages) FROM slid")
        self.assertEqual(plan["epsilon"], 2)
        self.assertEqual([p["function"] for p in plan["parts"]], ["COUNT", "AVG"])
        # What each error measures: AVG's is its noisy sum's, per unit of the group's count.
        self.assertEqual([p["error_basis"] for p in plan["parts"]], ["value", "per_count"])
        plan = self.client.explain_sql(DP % "2" + "STDDEV_POP(wages) FROM slid")
        self.assertEqual(plan["parts"][0]["error_basis"], "not_stated")
        self.assertIsNone(plan["parts"][0]["error"])
        self.assertEqual(self.snapshot(self.dpqd, "slid"), before)

    def test_refusals_raise_with_the_code_and_charge_nothing(self):
        before = self.snapshot(self.dpqd, "slid")
        with self.assertRaises(dpq.InvalidArgument) as cm:
            self.client.sql(DP % "1" + "SUM(education) FROM slid WHERE x = 1")
        self.assertEqual(cm.exception.code, "INVALID_ARGUMENT")
        with self.assertRaises(dpq.NotFound):
            self.client.sql(DP % "1" + "COUNT(*) FROM nosuch")
        with self.assertRaises(dpq.InvalidArgument):
            self.client.sql("  ")
        self.assertEqual(self.snapshot(self.dpqd, "slid"), before)


if __name__ == "__main__":
    unittest.main()
