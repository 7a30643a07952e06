#!/usr/bin/python3
"""Reports randomized by dpq.ldp (Python) are accepted by a real dpqd's CollectionService, and its
estimator (C++) recovers the true counts from them: one collection per mechanism. Skipped when the
build has no proto/dpq/v1/collection.proto.

Tolerance: the estimate c_v = (I_v - n q) / (p - q) of Wang, Blocki, Li, Jha 2017 (Thm. 2) has
variance n q (1 - q) / (p - q)^2 + f_v n (1 - p - q) / (p - q) (f_v the true share), computed
here from p and q, not taken from the server. With n = 800 reports, c_v is a sum of 800
independent bounded terms, close to normal, so |c_v - f_v n| <= z sqrt(Var) with z the two-sided
normal quantile of 1e-6 / (number of values checked) fails a correct pair of implementations with
probability below 1e-6.
"""
import concurrent.futures
import math
import statistics
import unittest

import grpc

import _paths  # noqa: F401  pylint: disable=unused-import
import harness

harness.require_grpc_stubs()
from dpq import ldp  # noqa: E402  pylint: disable=wrong-import-position

try:
    from dpq.v1 import collection_pb2, collection_pb2_grpc
except ImportError:
    collection_pb2 = None

EPSILON = 2.0
REPORTS = 800
DOMAIN = ["a", "b", "c", "d"]
SHARES = [0.4, 0.3, 0.2, 0.1]
VALUES_CHECKED = 2 + 3 * len(DOMAIN)  # rr's two values, four for each other mechanism
Z = statistics.NormalDist().inv_cdf(1 - 1e-6 / VALUES_CHECKED / 2)


def p_and_q(mechanism, k):
    """The report's support probabilities for the true value (p) and any other one (q)."""
    if mechanism in ("rr", "krr"):
        return ldp.krr_probabilities(k, EPSILON)
    if mechanism == "oue":
        return 0.5, 1 / (math.exp(EPSILON) + 1)
    g = ldp.olh_g(EPSILON)
    return math.exp(EPSILON) / (math.exp(EPSILON) + g - 1), 1 / g


@unittest.skipIf(collection_pb2 is None, "no CollectionService in this build")
class LdpCollectionTest(harness.DpqdTestCase):

    @classmethod
    def setUpClass(cls):
        cls.dpqd = cls.new_class_dpqd()
        cls.channel = grpc.insecure_channel(cls.dpqd.address)
        cls.addClassCleanup(cls.channel.close)
        cls.stub = collection_pb2_grpc.CollectionServiceStub(cls.channel)
        cls.metadata = (("authorization", "Bearer " + harness.ADMIN_TOKEN),)

    def call(self, method, request):
        return method(request, metadata=self.metadata, timeout=60)

    def collect(self, mechanism, domain, shares):
        name = "py_" + mechanism
        self.call(self.stub.CreateCollection, collection_pb2.CreateCollectionRequest(
            name=name, domain=domain, epsilon=EPSILON, reports_per_client=1,
            mechanism=collection_pb2.LdpMechanism.Value("LDP_MECHANISM_" + mechanism.upper())))
        truth = []
        for index, share in enumerate(shares):
            truth += [index] * round(share * REPORTS)

        def submit(i):
            report = ldp.randomize(mechanism, truth[i], len(domain), EPSILON)
            self.call(self.stub.SubmitReport, collection_pb2.SubmitReportRequest(
                collection=name, client_id="client-%d" % i,
                report=report.to_proto(collection_pb2)))

        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            list(pool.map(submit, range(len(truth))))
        response = self.call(self.stub.Estimate, collection_pb2.EstimateRequest(collection=name))
        self.assertEqual(response.reports, len(truth))
        p, q = p_and_q(mechanism, len(domain))
        n = len(truth)
        for index, estimate in enumerate(response.estimates):
            self.assertEqual(estimate.value, domain[index])
            true_count = truth.count(index)
            variance = (n * q * (1 - q) / (p - q) ** 2 +
                        true_count * (1 - p - q) / (p - q))
            margin = Z * math.sqrt(variance)
            self.assertLessEqual(abs(estimate.estimate - true_count), margin,
                                 "%s %s: estimate %.1f, true %d, margin %.1f" %
                                 (mechanism, domain[index], estimate.estimate, true_count, margin))

    def test_rr(self):
        self.collect("rr", ["no", "yes"], [0.7, 0.3])

    def test_krr(self):
        self.collect("krr", DOMAIN, SHARES)

    def test_oue(self):
        self.collect("oue", DOMAIN, SHARES)

    def test_olh(self):
        self.collect("olh", DOMAIN, SHARES)

    def test_a_report_of_the_wrong_kind_is_refused(self):
        self.call(self.stub.CreateCollection, collection_pb2.CreateCollectionRequest(
            name="py_wrong", domain=DOMAIN, epsilon=EPSILON, reports_per_client=1,
            mechanism=collection_pb2.LDP_MECHANISM_OUE))
        report = ldp.krr(0, len(DOMAIN), EPSILON)  # an index where unary bits are due
        with self.assertRaises(grpc.RpcError) as cm:
            self.call(self.stub.SubmitReport, collection_pb2.SubmitReportRequest(
                collection="py_wrong", client_id="c", report=report.to_proto(collection_pb2)))
        self.assertEqual(cm.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)


if __name__ == "__main__":
    unittest.main()
