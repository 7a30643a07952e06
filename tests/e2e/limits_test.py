#!/usr/bin/python3
"""End-to-end: dpqd's limits, each RESOURCE_EXHAUSTED with a message naming the limit,
and each refusal charging nothing, adding no audit row and no admin-log row.

dpqd runs with small limits: 1 query in flight and 20 queries a minute per analyst, uploads of at
most 1 MiB and 100 rows, gRPC messages of at most 2 MiB (dpqctl sends CSV in chunks of 1 MiB); a dataset's largest epsilon per query is
a budget setting (`dpqctl budget set ... --max-query-epsilon`). Each analyst below meets one limit
only (the limits are per analyst).
"""

import os
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

try:
    import grpc  # noqa: E402
    from dpq.v1 import dpq_pb2, dpq_pb2_grpc  # noqa: E402
except ImportError:  # setUpClass reports it (harness.require_grpc_stubs)
    pass

LIMIT_FLAGS = ["--max-concurrent-queries", "1", "--max-queries-per-minute", "20",
               "--max-load-mb", "1", "--max-load-rows", "100", "--max-message-mb", "2"]
ROWS = 80


def _csv(rows, text_bytes=1):
    lines = ["person_id,age,note"]
    lines += ["%d,%d,%s" % (i, 20 + i % 50, "n" * text_bytes) for i in range(1, rows + 1)]
    return "\n".join(lines) + "\n"


class LimitsTest(harness.DpqdTestCase):

    @classmethod
    def setUpClass(cls):
        harness.require_grpc_stubs()
        cls.dpqd = cls.new_class_dpqd(start=False)
        cls.dpqd.extra_args += LIMIT_FLAGS
        cls.dpqd.start()
        cls.tmp = cls.make_class_temp_dir()
        cls.create("people", _csv(ROWS))
        cls.dpqd.ctl("budget", "set", "people", "--epsilon", 100, "--delta", 1e-6)
        cls.tokens = {}
        for name in ("alice", "bob", "carol"):
            cls.tokens[name] = cls.create_analyst(cls.dpqd, name)
            cls.dpqd.ctl("grant", name, "people")
        cls.channel = grpc.insecure_channel(cls.dpqd.address)
        cls.analyst = dpq_pb2_grpc.AnalystServiceStub(cls.channel)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()

    @classmethod
    def create(cls, name, csv_text, check=True):
        path = os.path.join(cls.tmp, name + ".csv")
        with open(path, "w") as f:
            f.write(csv_text)
        return cls.dpqd.ctl("dataset", "create", name, "--csv", path, "--privacy-unit", "person_id",
                            "--type", "person_id=integer", "--type", "age=integer",
                            "--type", "note=text", "--bounds", "age=0:120", check=check)

    def count(self, who, epsilon=0.01, check=False):
        return self.dpqd.ctl("query", "people", "--aggregate", "count", "--epsilon", epsilon,
                             token=self.tokens[who], check=check)

    def grpc_query(self, who, **fields):
        request = dpq_pb2.QueryRequest(dataset="people", aggregate=dpq_pb2.AGGREGATE_COUNT,
                                       epsilon=fields.pop("epsilon", 0.01), **fields)
        try:
            return "OK", self.analyst.Query(
                request, metadata=(("authorization", "Bearer " + self.tokens[who]),), timeout=30)
        except grpc.RpcError as e:
            return e.code().name, e.details()

    def admin_log_length(self):
        return len(self.dpqd.ctl("audit", "--admin-log")["entries"])

    def limited_outcomes(self):
        samples = self.dpqd.metrics()
        return sum(harness.metric_values(samples, "dpq_queries_total", outcome="limited"))

    # -- per analyst: queries per minute and in flight -----------------------------------------

    def test_the_query_past_the_per_minute_limit_is_refused_and_charges_nothing(self):
        for i in range(20):
            self.assertAlmostEqual(self.count("carol", epsilon=0.01 + i * 1e-4, check=True)["epsilon"],
                                   0.01 + i * 1e-4, places=12)
        before = self.snapshot(self.dpqd, "people")
        limited_before = self.limited_outcomes()
        refused = self.count("carol", epsilon=0.5)
        self.assert_error(refused, "RESOURCE_EXHAUSTED", ["--max-queries-per-minute", "retry in"])
        self.assertEqual(self.snapshot(self.dpqd, "people"), before)
        self.assertEqual(self.limited_outcomes(), limited_before + 1)
        # Another analyst is not limited by carol's rate.
        self.count("alice", check=True)

    def test_a_second_query_while_one_is_in_flight_is_refused_and_charges_nothing(self):
        # A batch of 1000 scans holds bob's only slot for a while; meanwhile bob's query is
        # refused. The batch itself is answered.
        batch = dpq_pb2.QueryBatchRequest(
            dataset="people",
            queries=[dpq_pb2.QueryRequest(aggregate=dpq_pb2.AGGREGATE_SUM, column="age",
                                          epsilon=0.0001, lower=0, upper=120 - i * 1e-3)
                     for i in range(1000)])
        outcome = {}

        def run_batch():
            try:
                outcome["batch"] = self.analyst.QueryBatch(
                    batch, metadata=(("authorization", "Bearer " + self.tokens["bob"]),), timeout=120)
            except grpc.RpcError as e:
                outcome["batch"] = e

        debits_before = self.dpqd.debits_seen()
        thread = threading.Thread(target=run_batch)
        thread.start()
        # The batch is admitted, prepared and charged before its 1000 scans start: once its debit
        # is seen, bob's only slot is taken for the scans' duration.
        self.dpqd.wait_for_debits(debits_before, "the batch's debit")
        code, detail = self.grpc_query("bob", epsilon=0.3)
        still_running = thread.is_alive()
        thread.join()
        self.assertIsInstance(outcome["batch"], dpq_pb2.QueryBatchResponse, outcome["batch"])
        self.assertTrue(still_running, "the batch ended before the second query: make it longer")
        self.assertEqual(code, "RESOURCE_EXHAUSTED", detail)
        self.assertIn("--max-concurrent-queries", detail)
        # Charged: the batch only, never the refused query.
        audit = self.dpqd.ctl("audit", "people")["entries"]
        bob = [e for e in audit if e["analyst"] == "bob"]
        self.assertEqual([e["rows"] for e in bob], [1000], bob)

    # -- per dataset: the largest epsilon of one query -----------------------------------------

    def test_a_query_above_the_datasets_largest_epsilon_is_refused_before_any_charge(self):
        shown = self.dpqd.ctl("budget", "set", "people", "--epsilon", 100, "--delta", 1e-6,
                              "--max-query-epsilon", 0.5)
        self.assertEqual(shown["max_query_epsilon"], 0.5)
        self.assertIn("at most epsilon 0.5 per query",
                      self.dpqd.ctl_text("budget", "show", "people"))
        try:
            before = self.snapshot(self.dpqd, "people")
            refused = self.count("alice", epsilon=0.75)
            self.assert_error(refused, "RESOURCE_EXHAUSTED",
                              ["max_query_epsilon", "--max-query-epsilon", "0.5"])
            code, detail = self.grpc_query("alice", epsilon=0.75, request_id="big-one")
            self.assertEqual(code, "RESOURCE_EXHAUSTED", detail)
            batch_code = None
            try:
                self.analyst.QueryBatch(dpq_pb2.QueryBatchRequest(
                    dataset="people", queries=[
                        dpq_pb2.QueryRequest(aggregate=dpq_pb2.AGGREGATE_COUNT, epsilon=0.1),
                        dpq_pb2.QueryRequest(aggregate=dpq_pb2.AGGREGATE_COUNT, epsilon=0.6)]),
                    metadata=(("authorization", "Bearer " + self.tokens["alice"]),), timeout=30)
            except grpc.RpcError as e:
                batch_code, batch_detail = e.code().name, e.details()
            self.assertEqual(batch_code, "RESOURCE_EXHAUSTED")
            self.assertIn("queries[1]", batch_detail)
            self.assertEqual(self.snapshot(self.dpqd, "people"), before)
            self.assertEqual(self.count("alice", epsilon=0.5, check=True)["epsilon"], 0.5)
        finally:
            cleared = self.dpqd.ctl("budget", "set", "people", "--epsilon", 100, "--delta", 1e-6,
                                    "--max-query-epsilon", 0)
        self.assertIsNone(cleared["max_query_epsilon"])
        self.assertEqual(self.count("alice", epsilon=0.75, check=True)["epsilon"], 0.75)
        logged = self.dpqd.ctl("audit", "--admin-log")["entries"]
        self.assertTrue(any("max_query_epsilon=0.5" in e["details"] for e in logged), logged[-3:])

    # -- uploads and messages --------------------------------------------------------------------

    def test_uploads_past_the_row_or_byte_limit_load_nothing(self):
        log_before = self.admin_log_length()
        version = self.dpqd.ctl("dataset", "show", "people")["version"]
        too_many = self.create("many_rows", _csv(101), check=False)
        self.assert_error(too_many, "RESOURCE_EXHAUSTED", ["more than 100 rows", "--max-load-rows"])
        too_big = self.create("big_rows", _csv(20, text_bytes=60000), check=False)
        self.assert_error(too_big, "RESOURCE_EXHAUSTED", ["larger than 1048576 bytes", "--max-load-mb"])
        names = [d["name"] for d in self.dpqd.ctl("dataset", "list")["datasets"]]
        self.assertNotIn("many_rows", names)
        self.assertNotIn("big_rows", names)
        path = os.path.join(self.tmp, "append.csv")
        with open(path, "w") as f:
            f.write(_csv(101))
        appended = self.dpqd.ctl("dataset", "load", "people", "--csv", path, check=False)
        self.assert_error(appended, "RESOURCE_EXHAUSTED", "--max-load-rows")
        self.assertEqual(self.dpqd.ctl("dataset", "show", "people")["version"], version)
        self.assertEqual(self.admin_log_length(), log_before)
        # At the limit: accepted.
        self.assertEqual(self.create("hundred", _csv(100))["rows_loaded"], 100)

    def test_a_message_over_the_grpc_limit_is_refused_by_grpc(self):
        before = self.snapshot(self.dpqd, "people")
        code, detail = self.grpc_query("alice", where="age > " + "1" * (2 << 20))
        self.assertEqual(code, "RESOURCE_EXHAUSTED", detail)
        self.assertIn("2097152", detail)  # gRPC names the limit in bytes
        self.assertEqual(self.snapshot(self.dpqd, "people"), before)

    def test_negative_limits_are_refused_at_start(self):
        dpqd = self.new_dpqd(start=False)
        dpqd.extra_args += ["--max-queries-per-minute", "-1"]
        with self.assertRaises(AssertionError) as raised:
            dpqd.start()
        self.assertIn("must be >= 0", str(raised.exception))


if __name__ == "__main__":
    unittest.main(verbosity=2)
