#!/usr/bin/python3
"""Local-DP collections end to end through the real dpqctl against a real dpqd: an admin
creates a collection, many clients submit values that dpqctl randomizes before sending, anyone with
a token lists, shows and estimates; raw values, malformed reports and over-limit clients are
refused and counted in dpq_ldp_reports_total; creating is admin-only and admin-logged.
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

try:
    from dpq.v1 import collection_pb2  # noqa: E402
except ImportError:  # setUpClass reports it (harness.require_grpc_stubs)
    pass

TRUE_COUNTS = {"red": 90, "green": 45, "blue": 15}


class CollectionTest(harness.DpqdTestCase):

    @classmethod
    def setUpClass(cls):
        harness.require_grpc_stubs()
        cls.dpqd = cls.new_class_dpqd()
        cls.analyst = cls.create_analyst(cls.dpqd, "ann")
        created = cls.dpqd.ctl("collection", "create", "survey", "--domain", "red,green,blue",
                               "--epsilon", 2, "--mechanism", "oue", "--reports-per-client", 2)
        assert created["mechanism"] == "oue", created
        client = 0
        for value, count in TRUE_COUNTS.items():
            for _ in range(count):
                client += 1
                # Clients need no admin rights: the analyst's token submits.
                cls.dpqd.ctl("collection", "submit", "survey", "--client-id", "c%d" % client,
                             "--value", value, token=cls.analyst)

    def test_estimates_are_near_the_truth_with_intervals(self):
        est = self.dpqd.ctl("collection", "estimate", "survey", "--confidence", 0.9,
                            token=self.analyst)
        self.assertEqual(est["reports"], sum(TRUE_COUNTS.values()))
        self.assertEqual(est["confidence"], 0.9)
        self.assertEqual([e["value"] for e in est["estimates"]], ["red", "green", "blue"])
        for e in est["estimates"]:
            truth = TRUE_COUNTS[e["value"]]
            # Each estimate is unbiased with the stated standard error (Wang et al. 2017 Thm 2);
            # 4.5 standard errors fail with probability 7e-6 per value (normal tail).
            self.assertLess(abs(e["estimate"] - truth), 4.5 * e["standard_error"], e)
            self.assertGreater(e["standard_error"], 0)
            self.assertLess(e["ci_lower"], e["estimate"])
            self.assertGreater(e["ci_upper"], e["estimate"])
            # The 90% interval is +-1.645 standard errors.
            self.assertAlmostEqual(e["ci_upper"] - e["estimate"], 1.6448536 * e["standard_error"],
                                   places=4)
        text = self.dpqd.ctl_text("collection", "estimate", "survey")
        self.assertIn("VALUE", text)
        self.assertIn("150 reports", text)
        self.assertTrue(text.endswith("\n"))

    def test_list_and_show(self):
        listed = self.dpqd.ctl("collection", "list", token=self.analyst)
        survey = [c for c in listed["collections"] if c["name"] == "survey"]
        self.assertEqual(len(survey), 1)
        shown = self.dpqd.ctl("collection", "show", "survey", token=self.analyst)
        self.assertEqual(shown["domain"], ["red", "green", "blue"])
        self.assertEqual(shown["epsilon"], 2)
        self.assertEqual(shown["reports_per_client"], 2)
        self.assertGreaterEqual(shown["reports"], sum(TRUE_COUNTS.values()))
        self.assertIn("reports per client", self.dpqd.ctl_text("collection", "show", "survey"))
        self.assertIn("survey", self.dpqd.ctl_text("collection", "list"))
        self.assert_error(self.dpqd.ctl("collection", "show", "nope", check=False), "NOT_FOUND")

    def test_only_admins_create_and_creation_is_logged(self):
        refused = self.dpqd.ctl("collection", "create", "mine", "--domain", "a,b", "--epsilon", 1,
                                "--mechanism", "rr", token=self.analyst, check=False)
        self.assert_error(refused, "PERMISSION_DENIED")
        bad = self.dpqd.ctl("collection", "create", "bad", "--domain", "a,b,c", "--epsilon", 1,
                            "--mechanism", "rr", check=False)
        self.assert_error(bad, "INVALID_ARGUMENT", "domain")
        usage = self.dpqd.ctl("collection", "create", "bad", "--domain", "a,b", "--epsilon", 1,
                              "--mechanism", "xyz", check=False)
        self.assertEqual(usage.returncode, 2)
        self.dpqd.ctl("collection", "create", "logged", "--domain", "a,b", "--epsilon", 1,
                      "--mechanism", "olh")
        actions = [(e["action"], e["target"]) for e in self.dpqd.ctl("audit", "--admin-log")["entries"]]
        self.assertIn(("collection.create", "logged"), actions)
        self.assertIn(("collection.create", "survey"), actions)
        self.assertNotIn(("collection.create", "mine"), actions)

    def test_over_limit_clients_and_bad_reports_are_refused_and_counted(self):
        self.dpqd.ctl("collection", "create", "limited", "--domain", "x,y,z", "--epsilon", 1,
                      "--mechanism", "krr", "--reports-per-client", 2)
        for _ in range(2):
            self.dpqd.ctl("collection", "submit", "limited", "--client-id", "same", "--value", "y")
        third = self.dpqd.ctl("collection", "submit", "limited", "--client-id", "same", "--value",
                              "y", check=False)
        self.assert_error(third, "RESOURCE_EXHAUSTED", "limit")
        # A value outside the domain never leaves dpqctl.
        outside = self.dpqd.ctl("collection", "submit", "limited", "--client-id", "other",
                                "--value", "w", check=False)
        self.assertEqual(outside.returncode, 2)
        self.assertIn("not in the domain", outside.error_message)
        # Straight over gRPC: a report of the wrong kind (a bare index where OUE bits are due,
        # i.e. the raw value), one out of range, and none at all.
        import grpc  # pylint: disable=import-outside-toplevel
        count = lambda samples, **labels: sum(harness.metric_values(
            samples, "dpq_ldp_reports_total", **labels))
        survey_invalid_before = count(self.dpqd.metrics(), collection="survey",
                                      outcome="invalid_argument")
        with grpc.insecure_channel(self.dpqd.address) as channel:
            for collection, report in (("survey", collection_pb2.LdpReport(index=0)),
                                       ("survey", collection_pb2.LdpReport(unary_bits=b"\xff")),
                                       ("limited", collection_pb2.LdpReport(index=3)),
                                       ("limited", collection_pb2.LdpReport())):
                code, details = harness.grpc_call(
                    channel, "CollectionService", "SubmitReport",
                    collection_pb2.SubmitReportRequest(collection=collection, client_id="raw",
                                                       report=report),
                    token=self.analyst)
                self.assertEqual(code, "INVALID_ARGUMENT", (collection, report, details))
                self.assertIn("report", details)
        self.assertEqual(self.dpqd.ctl("collection", "show", "limited")["reports"], 2)
        samples = self.dpqd.metrics()
        self.assertEqual(count(samples, collection="limited", outcome="accepted"), 2)
        self.assertEqual(count(samples, collection="limited", outcome="resource_exhausted"), 1)
        self.assertEqual(count(samples, collection="limited", outcome="invalid_argument"), 2)
        self.assertEqual(count(samples, collection="survey", outcome="invalid_argument"),
                         survey_invalid_before + 2)
        self.assertEqual(count(samples, collection="survey", outcome="accepted"),
                         sum(TRUE_COUNTS.values()))

    def test_hostile_requests_are_refused_precisely(self):
        """Empty, oversized and malformed requests straight over gRPC: INVALID_ARGUMENT naming the
        field, messages that echo at most 64 bytes of a value, and nothing stored or logged."""
        import grpc  # pylint: disable=import-outside-toplevel
        c = collection_pb2
        log_before = len(self.dpqd.ctl("audit", "--admin-log")["entries"])
        reports_before = self.dpqd.ctl("collection", "show", "survey")["reports"]
        big = "x" * (1 << 20)
        cases = [
            ("CreateCollection", c.CreateCollectionRequest(), "mechanism"),
            ("CreateCollection", c.CreateCollectionRequest(
                name=big, domain=["a", "b"], epsilon=1, mechanism=c.LDP_MECHANISM_RR), "name"),
            ("CreateCollection", c.CreateCollectionRequest(
                name="huge", domain=["v%d" % i for i in range(2000)], epsilon=1,
                mechanism=c.LDP_MECHANISM_OUE), "domain"),
            ("CreateCollection", c.CreateCollectionRequest(
                name="nul", domain=["a\0b", "c"], epsilon=1, mechanism=c.LDP_MECHANISM_KRR),
             "domain[0]"),
            ("CreateCollection", c.CreateCollectionRequest(
                name="nan", domain=["a", "b"], epsilon=float("nan"), mechanism=c.LDP_MECHANISM_KRR),
             "epsilon"),
            ("CreateCollection", c.CreateCollectionRequest(
                name="neg", domain=["a", "b"], epsilon=1, mechanism=c.LDP_MECHANISM_KRR,
                reports_per_client=-3), "reports_per_client"),
            ("GetCollection", c.GetCollectionRequest(), "name"),
            ("GetCollection", c.GetCollectionRequest(name=big), "name"),
            ("SubmitReport", c.SubmitReportRequest(), "collection"),
            ("SubmitReport", c.SubmitReportRequest(collection="survey", client_id=big,
                                                   report=c.LdpReport(unary_bits=b"\x01")),
             "client_id"),
            ("SubmitReport", c.SubmitReportRequest(collection="survey", client_id="a\0b",
                                                   report=c.LdpReport(unary_bits=b"\x01")),
             "client_id"),
            ("SubmitReport", c.SubmitReportRequest(collection="survey", client_id="ok",
                                                   report=c.LdpReport(unary_bits=b"\x01" * 100000)),
             "report.unary_bits"),
            ("Estimate", c.EstimateRequest(), "collection"),
            ("Estimate", c.EstimateRequest(collection="survey", confidence=1.5), "confidence"),
            ("Estimate", c.EstimateRequest(collection="survey", confidence=float("nan")),
             "confidence"),
        ]
        with grpc.insecure_channel(self.dpqd.address) as channel:
            for method, request, field in cases:
                code, details = harness.grpc_call(channel, "CollectionService", method, request,
                                                  token=harness.ADMIN_TOKEN)
                self.assertEqual(code, "INVALID_ARGUMENT", (method, field, details[:200]))
                self.assertIn(field, details, (method, details[:200]))
                self.assertLess(len(details), 400, (method, details[:200]))
                self.assertNotIn("\0", details)
        self.assertEqual(len(self.dpqd.ctl("audit", "--admin-log")["entries"]), log_before)
        self.assertEqual(self.dpqd.ctl("collection", "show", "survey")["reports"], reports_before)


if __name__ == "__main__":
    unittest.main()
