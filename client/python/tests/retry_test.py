#!/usr/bin/python3
"""dpq.Client's retries (dpq/retry.py) against a gRPC server on loopback that fails on cue.

The server stands in for dpqd's API only (no PostgreSQL): it answers UNAVAILABLE a given number of
times, as dpqd does while its database restarts, and records every request it saw. Checked: which
calls are repeated and which never are, that every attempt of a query carries the same request id
(drawn by the client when the caller gave none), the pauses between attempts, and the error the
caller finally gets (with the request id dpqd named in the trailing metadata). dpqd's side of the
contract (a retry with the same id is charged once) is tests/e2e/database_errors_test.py.
"""
import random
import threading
import unittest
from concurrent import futures

import _paths  # noqa: F401  pylint: disable=unused-import
import harness

harness.require_grpc_stubs()
import grpc  # noqa: E402  pylint: disable=wrong-import-position
import dpq  # noqa: E402  pylint: disable=wrong-import-position
from dpq.v1 import dpq_pb2, dpq_pb2_grpc  # noqa: E402  pylint: disable=wrong-import-position

UNAVAILABLE = (grpc.StatusCode.UNAVAILABLE,
               "the database is unavailable; retry with the same request id")


class Flaky(dpq_pb2_grpc.AnalystServiceServicer, dpq_pb2_grpc.AdminServiceServicer):
    """Fails the next calls with the statuses queued in `failures`, then answers."""

    def __init__(self):
        self.lock = threading.Lock()
        self.failures = []
        self.seen = []  # (method, request) of every call, failed or not

    def fail_next(self, *statuses):
        with self.lock:
            self.failures = list(statuses)

    def _enter(self, method, request, context):
        with self.lock:
            self.seen.append((method, request))
            failure = self.failures.pop(0) if self.failures else None
        if failure is not None:
            request_id = getattr(request, "request_id", "")
            if request_id:  # dpqd names the id to retry with (server/api/status_mapping.h)
                context.set_trailing_metadata((("dpq-request-id", request_id),))
            context.abort(*failure)

    def Query(self, request, context):
        self._enter("Query", request, context)
        return dpq_pb2.QueryResponse(request_id=request.request_id, value=42.0,
                                     mechanism=dpq_pb2.MECHANISM_LAPLACE, epsilon=request.epsilon)

    def GetBudget(self, request, context):
        self._enter("GetBudget", request, context)
        return dpq_pb2.Budget(dataset=request.dataset, epsilon_total=1.0)

    def CreateAnalyst(self, request, context):
        self._enter("CreateAnalyst", request, context)
        return dpq_pb2.CreateAnalystResponse(name=request.name, token="dpq_x")


class RetryTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.servicer = Flaky()
        cls.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        dpq_pb2_grpc.add_AnalystServiceServicer_to_server(cls.servicer, cls.server)
        dpq_pb2_grpc.add_AdminServiceServicer_to_server(cls.servicer, cls.server)
        cls.port = cls.server.add_insecure_port("127.0.0.1:0")
        cls.server.start()
        cls.addClassCleanup(cls.server.stop, None)

    def setUp(self):
        with self.servicer.lock:
            self.servicer.seen.clear()
            self.servicer.failures = []

    def client(self, **kwargs):
        c = dpq.Client("127.0.0.1:%d" % self.port, "token-for-tests", timeout=10, **kwargs)
        self.addCleanup(c.close)
        self.pauses = []
        c._rpc.sleep = self.pauses.append  # pylint: disable=protected-access
        return c

    def seen(self, method):
        return [r for m, r in self.servicer.seen if m == method]

    def test_a_query_is_repeated_with_the_request_id_the_client_drew(self):
        c = self.client()
        self.servicer.fail_next(UNAVAILABLE, UNAVAILABLE)
        answer = c.query("slid", "count", 0.5)
        requests = self.seen("Query")
        self.assertEqual(len(requests), 3)
        ids = {r.request_id for r in requests}
        self.assertEqual(len(ids), 1, ids)
        (drawn,) = ids
        self.assertRegex(drawn, r"^py-[0-9a-f]{32}$")
        self.assertEqual(answer.request_id, drawn)
        # Exponential with jitter: ~0.2 s, then ~0.4 s, each at least half its nominal pause.
        self.assertEqual(len(self.pauses), 2)
        self.assertTrue(0.1 <= self.pauses[0] <= 0.2, self.pauses)
        self.assertTrue(0.2 <= self.pauses[1] <= 0.4, self.pauses)

    def test_the_callers_request_id_is_kept_across_attempts(self):
        c = self.client()
        self.servicer.fail_next(UNAVAILABLE)
        c.query("slid", "count", 0.5, request_id="mine-1")
        self.assertEqual([r.request_id for r in self.seen("Query")], ["mine-1", "mine-1"])

    def test_when_attempts_run_out_the_error_names_the_request_id_and_the_attempts(self):
        c = self.client()
        self.servicer.fail_next(UNAVAILABLE, UNAVAILABLE, UNAVAILABLE)
        with self.assertRaises(dpq.Unavailable) as cm:
            c.query("slid", "count", 0.5)
        self.assertEqual(cm.exception.attempts, 3)
        self.assertEqual(cm.exception.request_id, self.seen("Query")[0].request_id)
        self.assertIn("retry with the same request id", cm.exception.message)
        self.assertEqual(len(self.seen("Query")), 3)

    def test_retries_can_be_turned_off_or_tuned(self):
        off = self.client(retry=None)
        self.assertEqual(off.retry.attempts, 1)
        self.servicer.fail_next(UNAVAILABLE)
        with self.assertRaises(dpq.Unavailable) as cm:
            off.query("slid", "count", 0.5)
        self.assertEqual(cm.exception.attempts, 1)
        # Without retries the client draws no id: the server does (and names it on a failure).
        self.assertEqual([r.request_id for r in self.seen("Query")], [""])

        patient = self.client(retry=dpq.RetryPolicy(attempts=5, initial_backoff=0.01,
                                                    max_backoff=0.02, jitter=0))
        self.servicer.fail_next(*[UNAVAILABLE] * 4)
        patient.query("slid", "count", 0.5)
        self.assertEqual(len(self.seen("Query")), 1 + 5)
        self.assertEqual(self.pauses, [0.01, 0.02, 0.02, 0.02])

    def test_other_codes_are_not_repeated(self):
        c = self.client()
        for status in ((grpc.StatusCode.INVALID_ARGUMENT, "epsilon must be > 0"),
                       (grpc.StatusCode.RESOURCE_EXHAUSTED, "budget exhausted"),
                       (grpc.StatusCode.INTERNAL, "internal error in dpqd"),
                       (grpc.StatusCode.DEADLINE_EXCEEDED, "deadline passed")):
            self.servicer.seen.clear()
            self.servicer.fail_next(status)
            with self.assertRaises(dpq.DpqError) as cm:
                c.query("slid", "count", 0.5)
            self.assertEqual(cm.exception.code, status[0].name)
            self.assertEqual(len(self.seen("Query")), 1, status)
        self.assertEqual(self.pauses, [])

    def test_reads_are_repeated_and_writes_without_a_request_id_never(self):
        c = self.client()
        self.servicer.fail_next(UNAVAILABLE)
        self.assertEqual(c.budget("slid").epsilon_total, 1.0)
        self.assertEqual(len(self.seen("GetBudget")), 2)
        # A lost CreateAnalyst may have committed: repeating it could fail with ALREADY_EXISTS or
        # hide that it happened, so the caller decides.
        self.servicer.fail_next(UNAVAILABLE)
        with self.assertRaises(dpq.Unavailable):
            c.create_analyst("bob")
        self.assertEqual(len(self.seen("CreateAnalyst")), 1)

    def test_the_policy_checks_its_fields_and_bounds_its_pauses(self):
        for bad in ({"attempts": 0}, {"attempts": 1.5}, {"initial_backoff": 3.0},
                    {"jitter": 2}, {"multiplier": 0.5}):
            with self.assertRaises(ValueError):
                dpq.RetryPolicy(**bad)
        with self.assertRaises(dpq.InvalidArgument):
            dpq.Client("127.0.0.1:1", "t", retry=3)
        policy = dpq.RetryPolicy(attempts=10)
        rng = random.Random(1)
        for retry in range(1, 10):
            nominal = min(2.0, 0.2 * 2 ** (retry - 1))
            pause = policy.backoff(retry, rng)
            self.assertTrue(nominal / 2 <= pause <= nominal, (retry, pause))
        self.assertFalse(dpq.NO_RETRY.enabled)
        self.assertNotEqual(dpq.new_request_id(), dpq.new_request_id())


if __name__ == "__main__":
    unittest.main(verbosity=2)
