#!/usr/bin/python3
"""End-to-end, straight over gRPC: hostile inputs that once got through, each kept as a test.

* A name with a NUL byte ("slid\\x00xyz") used to resolve to `slid`; an empty name answered
  NOT_FOUND. Every RPC that takes a dataset or analyst name now answers INVALID_ARGUMENT naming the
  field, before any lookup, for empty names, NUL bytes, control characters and other characters
  outside the documented pattern.
* A filter literal beyond the double range on an integer column (`age > 1e999`) was accepted and
  charged: now INVALID_ARGUMENT, nothing charged.
* A client deadline of a few milliseconds expiring around the debit: the retry with the same
  request id answers (the stored answer, or a first run when nothing was charged) and every
  request id is charged exactly once.
After each case the ledgers and audit trails are what the case expects: unchanged for refusals.
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

try:
    import grpc  # noqa: E402
    from dpq.v1 import dpq_pb2, dpq_pb2_grpc  # noqa: E402
    from dpq_client import DpqClient, DpqError  # noqa: E402
except ImportError:  # setUpClass reports it (harness.require_grpc_stubs)
    pass

# Each is refused by the name pattern: empty, NUL inside, control characters, upper case, a space,
# a look-alike Unicode letter (Cyrillic 'ѕ'), and a name longer than 63 characters.
BAD_NAMES = ["", "slid\x00xyz", "slid\x00", "slid\n", "sl\x7fid", "SLID", "slid ", "\u0455lid",
             "s" * 64]
EPSILON = 0.01
DEADLINE_REQUESTS = 60


def _call(method, request, token, timeout=30.0):
    """(code name, details) of one unary or client-streaming call; ("OK", response) on success."""
    try:
        response = method(request, metadata=(("authorization", "Bearer " + token),), timeout=timeout)
    except grpc.RpcError as e:
        return e.code().name, e.details()
    return "OK", response


class HostileInputTest(harness.DpqdTestCase):

    @classmethod
    def setUpClass(cls):
        harness.require_grpc_stubs()
        cls.dpqd = cls.new_class_dpqd(start=False)
        # Calls abandoned after 1 ms still run to their end on the server, so dozens of one
        # analyst's queries may be in flight at once: not what this test is about (limits_test is).
        cls.dpqd.extra_args += ["--max-concurrent-queries", "0"]
        cls.dpqd.start()
        cls.create_slid(cls.dpqd)
        cls.alice = cls.create_analyst(cls.dpqd, "alice")
        cls.dpqd.ctl("grant", "alice", "slid")
        cls.dpqd.ctl("budget", "set", "slid", "--epsilon", 100, "--delta", 1e-6)
        cls.channel = grpc.insecure_channel(cls.dpqd.address)
        cls.analyst = dpq_pb2_grpc.AnalystServiceStub(cls.channel)
        cls.admin = dpq_pb2_grpc.AdminServiceStub(cls.channel)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()

    def slid_state(self):
        return self.snapshot(self.dpqd, "slid")

    # -- names ----------------------------------------------------------------------------

    def name_cases(self, bad):
        """(rpc, field, method, request, token) for every RPC that takes a name, with `bad` in the
        named field and valid values elsewhere."""
        admin, alice = harness.ADMIN_TOKEN, self.alice
        count = dict(aggregate=dpq_pb2.AGGREGATE_COUNT, epsilon=EPSILON)
        header = dpq_pb2.CreateDatasetRequest(header=dpq_pb2.DatasetHeader(name=bad))
        return [
            ("Query", "dataset", self.analyst.Query, dpq_pb2.QueryRequest(dataset=bad, **count), alice),
            ("QueryBatch", "dataset", self.analyst.QueryBatch,
             dpq_pb2.QueryBatchRequest(dataset=bad, queries=[dpq_pb2.QueryRequest(**count)]), alice),
            ("Plan", "dataset", self.analyst.Plan,
             dpq_pb2.PlanRequest(query=dpq_pb2.QueryRequest(dataset=bad, **count)), alice),
            ("GetDataset", "name", self.analyst.GetDataset, dpq_pb2.GetDatasetRequest(name=bad), alice),
            ("GetBudget", "dataset", self.analyst.GetBudget, dpq_pb2.GetBudgetRequest(dataset=bad),
             alice),
            ("LoadDataset", "header.name", self.admin.LoadDataset, iter([header]), admin),
            ("DropDataset", "name", self.admin.DropDataset,
             dpq_pb2.DropDatasetRequest(name=bad, confirm=True), admin),
            ("CreateAnalyst", "name", self.admin.CreateAnalyst,
             dpq_pb2.CreateAnalystRequest(name=bad), admin),
            ("Grant", "analyst", self.admin.Grant, dpq_pb2.GrantRequest(analyst=bad, dataset="slid"),
             admin),
            ("Grant", "dataset", self.admin.Grant, dpq_pb2.GrantRequest(analyst="alice", dataset=bad),
             admin),
            ("SetBudget", "dataset", self.admin.SetBudget,
             dpq_pb2.SetBudgetRequest(dataset=bad, epsilon=1), admin),
            ("ListAudit", "dataset", self.admin.ListAudit, dpq_pb2.ListAuditRequest(dataset=bad), admin),
            ("VerifyAudit", "dataset", self.admin.VerifyAudit,
             dpq_pb2.VerifyAuditRequest(dataset=bad), admin),
        ]

    def test_malformed_names_are_invalid_argument_naming_the_field_on_every_rpc(self):
        before = self.slid_state()
        checked = 0
        for bad in BAD_NAMES:
            # "SLID" style names are not identifiers of the analyst pattern either.
            for rpc, field, method, request, token in self.name_cases(bad):
                with self.subTest(rpc=rpc, field=field, name=bad):
                    code, details = _call(method, request, token)
                    self.assertEqual(code, "INVALID_ARGUMENT", "%s(%s=%r): %s" % (rpc, field, bad, details))
                    self.assertTrue(details.startswith(field + " "), details)
                    self.assertNotIn("\x00", details)  # shown escaped, never sent raw
                    if bad == "":
                        self.assertIn("is required", details)
                    checked += 1
        self.assertEqual(checked, len(BAD_NAMES) * 13)
        # Nothing was charged, dropped, granted or written to the audit trail; slid still answers.
        self.assertEqual(self.slid_state(), before)
        self.assertEqual(self.dpqd.ctl("dataset", "show", "slid")["name"], "slid")
        self.assertNotIn("\x00", self.dpqd.log_text())

    def test_nul_name_no_longer_resolves_to_the_prefix(self):
        code, details = _call(self.analyst.GetDataset, dpq_pb2.GetDatasetRequest(name="slid\x00xyz"),
                              self.alice)
        self.assertEqual(code, "INVALID_ARGUMENT")
        self.assertIn("slid\\x00xyz", details)
        code, _ = _call(self.analyst.GetDataset, dpq_pb2.GetDatasetRequest(name="slid"), self.alice)
        self.assertEqual(code, "OK")

    # -- filter literals ------------------------------------------------------------------

    def test_filter_literal_beyond_double_range_is_refused_and_not_charged(self):
        before = self.slid_state()
        for where in ("age > 1e999", "age < -1e999", "age IN (1, 2e308)", "wages > 1e999"):
            with self.subTest(where=where):
                result = self.dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", EPSILON,
                                       "--where", where, token=self.alice, check=False)
                self.assert_error(result, "INVALID_ARGUMENT", "out of range")
                self.assertEqual(result.returncode, 1, "the server refuses it: %r" % dict(result))
        self.assertEqual(self.slid_state(), before)

    # -- deadlines around the debit -------------------------------------------------------

    def test_deadline_expiring_around_the_debit_charges_once_and_the_retry_answers(self):
        eps_before, delta_before, audit_before = self.slid_state()
        impatient = DpqClient(self.dpqd.address, self.alice)
        patient = DpqClient(self.dpqd.address, self.alice, timeout=60.0)
        first_codes, answered_first = {}, {}
        try:
            for i in range(DEADLINE_REQUESTS):
                rid = "deadline-%03d" % i
                # 1 to 20 ms: shorter than a query takes on a busy machine, so deadlines expire
                # before the call arrives, during the debit, during the scan and after.
                impatient._timeout = 0.001 * (1 + i % 20)
                # A different filter each time: the same question again would be answered from
                # the analyst's result cache, uncharged.
                where = "age >= %d" % i
                try:
                    answered_first[rid] = impatient.query("slid", "count", EPSILON, request_id=rid,
                                                          where=where)
                    first_codes[rid] = "OK"
                except DpqError as e:
                    first_codes[rid] = e.code
                    self.assertIn(e.code, ("DEADLINE_EXCEEDED", "CANCELLED", "UNAVAILABLE"), e)
            retried = {}
            for i, rid in enumerate(first_codes):
                retried[rid] = patient.query("slid", "count", EPSILON, request_id=rid,
                                             where="age >= %d" % i)
        finally:
            impatient.close()
            patient.close()
        for rid, first in answered_first.items():
            # A first attempt that answered is replayed with the same value.
            self.assertTrue(retried[rid].get("replayed"), rid)
            self.assertEqual(retried[rid]["rows"], first["rows"], rid)
        eps_after, delta_after, audit_after = self.slid_state()
        # Every request id was charged exactly once: one audit row each, and epsilon to match.
        self.assertEqual(audit_after - audit_before, DEADLINE_REQUESTS,
                         "first attempts: %r" % sorted(set(first_codes.values())))
        self.assertAlmostEqual(eps_after - eps_before, DEADLINE_REQUESTS * EPSILON, delta=1e-9)
        self.assertEqual(delta_after, delta_before)
        ids = [e["request_id"] for e in self.dpqd.ctl("audit", "slid")["entries"]]
        self.assertEqual(sorted(i for i in ids if i.startswith("deadline-")), sorted(first_codes))
        self.assertTrue(self.dpqd.ctl("audit", "verify", "slid")["ok"])


if __name__ == "__main__":
    unittest.main()
