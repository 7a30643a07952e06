#!/usr/bin/python3
"""dpq.Client.sql's result mapping: an SqlResponse as dpqd sends it -> rows and a DataFrame with
each released column's interval beside it. Skipped while the stubs predate ExecuteSql."""
import unittest

import _paths  # noqa: F401  pylint: disable=unused-import

import dpq
from dpq import sql
from dpq.v1 import dpq_pb2


@unittest.skipUnless(hasattr(dpq_pb2, "SqlRequest"), "the proto has no ExecuteSql yet")
class SqlResultTest(unittest.TestCase):

    @staticmethod
    def response():
        m = dpq_pb2.SqlResponse(request_id="r1", epsilon=1.0, dataset="slid")
        table = m.results.add()
        table.columns.add(name="sex", type="string")
        table.columns.add(name="n", type="float64")
        table.columns.add(name="q", type="array<float64>")
        for sex, n, lo, hi in (("Female", 1000.5, 990.0, 1011.0), ("Male", 900.25, 889.0, 911.5)):
            row = table.rows.add()
            row.cells.add(text=sex)
            row.cells.add(number=n, released=True, noise_scale=2.0,
                          interval=dpq_pb2.ConfidenceInterval(confidence=0.95, lower=lo, upper=hi))
            row.cells.add(array=[1.0, 2.0])
        row = table.rows.add()
        row.cells.add(null=True)
        row.cells.add(null=True)
        row.cells.add(null=True)
        return m

    def test_rows_are_python_values_in_column_order(self):
        result = sql.SqlResult.from_message(self.response())
        self.assertIsInstance(result, dpq.SqlResult)
        self.assertEqual(result.columns, ["sex", "n", "q"])
        self.assertEqual(result.rows, [["Female", 1000.5, [1.0, 2.0]], ["Male", 900.25, [1.0, 2.0]],
                                       [None, None, None]])

    def test_data_frame_carries_the_intervals(self):
        frame = sql.SqlResult.from_message(self.response()).to_pandas()
        self.assertEqual(list(frame.columns)[:4], ["sex", "n", "n_lower", "n_upper"])
        self.assertEqual(list(frame["n_upper"])[:2], [1011.0, 911.5])

    def test_an_empty_statement_is_refused_before_sending(self):
        with self.assertRaises(dpq.InvalidArgument):
            sql.sql_request("   ")


class NullGroupKeyTest(unittest.TestCase):
    """A flag answer's NULL group value (ResultRow.null_keys) is None in the row's key."""

    @unittest.skipUnless(hasattr(dpq_pb2.ResultRow(), "null_keys"), "the proto has no null_keys yet")
    def test_null_keys_become_none(self):
        from dpq import results
        m = dpq_pb2.ResultRow(key=["", "Male", ""], value=3.0, null_keys=[0])
        row = results.Row.from_message(m)
        self.assertEqual(row.key, (None, "Male", ""))  # "" without null_keys is the empty string


if __name__ == "__main__":
    unittest.main()
