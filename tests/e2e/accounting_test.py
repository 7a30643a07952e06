#!/usr/bin/python3
"""End-to-end: `dpqctl price` and `dpqctl calibrate` against the real dpqd (AccountingService).

Prices and noise multipliers are checked against tests/reference/accounting.json (values computed
with Google's dp_accounting / Opacus, see that file's "source" fields). Both RPCs must be pure
arithmetic: every test ends by checking that a dataset's budget and audit trail are unchanged.
"""

import json
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

REFERENCE_JSON = os.path.join(harness.REPO_ROOT, "tests", "reference", "accounting.json")
ACCOUNTANTS = ("basic", "advanced", "rdp", "zcdp", "pld")
DELTA = 1e-5
EXIT_RPC_ERROR = 1

# q = batch 256 out of 60,000 examples (the MNIST DP-SGD setting of the reference file).
DPSGD_Q = 256 / 60000
DPSGD_STEPS = 10000


def load_reference():
    with open(REFERENCE_JSON) as f:
        return json.load(f)["records"]


def reference_record(record_id):
    for record in load_reference():
        if record["id"] == record_id:
            return record
    raise AssertionError("record %s missing from %s" % (record_id, REFERENCE_JSON))


def rel_err(a, b):
    return abs(a - b) / abs(b)


class AccountingTest(harness.DpqdTestCase):

    @classmethod
    def setUpClass(cls):
        cls.dpqd = cls.new_class_dpqd()
        # An analyst with no grant at all: pricing needs authentication, not a dataset.
        cls.bob = cls.create_analyst(cls.dpqd, "bob")
        # A dataset with a budget, to prove that pricing and calibrating charge nothing.
        cls.create_slid(cls.dpqd)
        cls.dpqd.ctl("budget", "set", "slid", "--epsilon", 1, "--delta", 1e-6)

    def setUp(self):
        self.before = self.snapshot(self.dpqd, "slid")

    def tearDown(self):
        self.assertEqual(self.snapshot(self.dpqd, "slid"), self.before,
                         "price/calibrate changed a budget or the audit trail")

    # -- helpers --------------------------------------------------------------------------

    def price(self, accountant, *events, delta=DELTA, token=None):
        args = ["price", "--accountant", accountant, "--delta", repr(delta)]
        for event in events:
            args += ["--event", event]
        result = self.dpqd.ctl(*args, token=token)
        self.assertEqual(result["accountant"], accountant)
        self.assertEqual(result["delta"], delta)
        return result["epsilon"]

    def calibrate(self, accountant, target, delta, q, steps, check=True):
        return self.dpqd.ctl("calibrate", "--accountant", accountant, "--target-epsilon",
                             repr(target), "--delta", repr(delta), "--q", repr(q), "--steps", steps,
                             check=check, timeout_s=300)

    def assert_refused(self, result, code, field):
        """The server (exit 1, not a client usage error) refused with `code`, and the message
        starts with the name of the offending request field."""
        self.assert_error(result, code)
        self.assertEqual(result.returncode, EXIT_RPC_ERROR, "expected dpqd to refuse: %r" % dict(result))
        self.assertTrue(result.error_message.startswith(field),
                        "message should name %r first: %r" % (field, result.error_message))

    # -- pricing ----------------------------------------------------------------------------

    def test_hundred_laplace_queries_cost_per_accountant(self):
        # 100 Laplace releases at scale 10 (epsilon 0.1 each), delta 1e-5.
        spec = "laplace:scale=10,count=100"
        basic = self.price("basic", spec)
        self.assertLessEqual(abs(basic - 10.0), 1e-9, basic)

        rdp = self.price("rdp", spec)
        rdp_ref = reference_record("laplace_k100_rdp")
        self.assertLessEqual(rel_err(rdp, 4.5327), 1e-3, rdp)
        self.assertLessEqual(rel_err(rdp, rdp_ref["value"]), rdp_ref["tolerance_rel"], rdp)
        # Never less privacy loss than the reference's exact optimum over the order grid.
        self.assertGreaterEqual(rdp, rdp_ref["lower_bound"])

        pld = self.price("pld", spec)
        pld_ref = reference_record("laplace_k100_pld_vdi0.0001")
        self.assertLessEqual(pld, 4.25)
        self.assertGreaterEqual(pld, pld_ref["lower_bound"])
        self.assertLessEqual(rel_err(pld, pld_ref["value"]), pld_ref["tolerance_rel"], pld)

        for accountant in ("advanced", "zcdp"):
            eps = self.price(accountant, spec)
            self.assertTrue(0 < eps <= basic, "%s: %r" % (accountant, eps))
        # The tightest first: pld <= rdp <= basic on this workload.
        self.assertLessEqual(pld, rdp)

    def test_every_accountant_is_at_most_basic_on_pure_events(self):
        workloads = [
            ["laplace:scale=10,count=100"],
            ["pure:epsilon=1"],
            ["pure:epsilon=0.01,count=1000"],
            ["pure:epsilon=0.5,count=4", "laplace:scale=2,sensitivity=1,count=3"],
            ["laplace:scale=1,sensitivity=2", "pure:epsilon=0.05,count=40"],
            ["approx:epsilon=0.1,delta=1e-7,count=10", "pure:epsilon=0.2"],
        ]
        for events in workloads:
            basic = self.price("basic", *events)
            self.assertTrue(math.isfinite(basic) and basic > 0, (events, basic))
            for accountant in ACCOUNTANTS:
                with self.subTest(events=events, accountant=accountant):
                    eps = self.price(accountant, *events)
                    self.assertIsNotNone(eps)
                    self.assertGreaterEqual(eps, 0)
                    self.assertLessEqual(eps, basic * (1 + 1e-12), "%s > basic %s" % (eps, basic))

    def test_more_events_never_cost_less(self):
        for accountant in ACCOUNTANTS:
            with self.subTest(accountant=accountant):
                fewer = self.price(accountant, "laplace:scale=10,count=50")
                more = self.price(accountant, "laplace:scale=10,count=50", "pure:epsilon=0.1")
                self.assertLessEqual(fewer, more)

    def test_deltas_beyond_the_target_give_no_finite_epsilon(self):
        # Basic composition needs sum of deltas <= delta; JSON has no infinity, so it is null.
        self.assertIsNone(self.price("basic", "approx:epsilon=1,delta=0.1"))

    def test_any_authenticated_role_may_price_and_calibrate(self):
        eps = self.price("rdp", "gaussian:sigma=5,sensitivity=1,count=10", token=self.bob)
        self.assertTrue(0 < eps < math.inf)
        result = self.dpqd.ctl("calibrate", "--accountant", "rdp", "--target-epsilon", 2,
                               "--delta", DELTA, "--q", 0.01, "--steps", 100, token=self.bob)
        self.assertGreater(result["noise_multiplier"], 0)

    def test_unauthenticated_callers_are_refused(self):
        price = ("price", "--accountant", "basic", "--delta", DELTA, "--event", "pure:epsilon=1")
        calibrate = ("calibrate", "--accountant", "rdp", "--target-epsilon", 1, "--delta", DELTA,
                     "--q", 0.01, "--steps", 10)
        for args in (price, calibrate):
            with self.subTest(command=args[0]):
                self.assert_error(self.dpqd.ctl(*args, use_admin=False, check=False),
                                  "UNAUTHENTICATED")
                self.assert_error(self.dpqd.ctl(*args, token="not-a-real-token-0123456789",
                                                check=False), "UNAUTHENTICATED")

    # -- calibration ------------------------------------------------------------------------

    def test_dpsgd_calibration_matches_reference(self):
        records = [r for r in load_reference() if r["kind"] == "dpsgd_rdp_noise_calibration"]
        self.assertTrue(records, "no dpsgd_rdp_noise_calibration record in the reference file")
        for record in records:
            p = record["params"]
            with self.subTest(record=record["id"]):
                result = self.calibrate(p["accountant"], p["target_epsilon"], p["delta"],
                                        p["sampling_rate"], p["steps"])
                z = result["noise_multiplier"]
                self.assertLessEqual(rel_err(z, record["value"]), record["tolerance_rel"],
                                     "%s: z=%r, reference %r" % (record["id"], z, record["value"]))
                self.assertLessEqual(result["epsilon"], p["target_epsilon"])
                # Pricing that noise multiplier back gives at most the target.
                eps = self.price(p["accountant"],
                                 "subsampled-gaussian:q=%r,sigma=%r,count=%d" %
                                 (p["sampling_rate"], z, p["steps"]), delta=p["delta"])
                self.assertLessEqual(eps, p["target_epsilon"])

    def test_dpsgd_calibration_at_target_three(self):
        # rdp, target 3, delta 1e-5, q = 256/60000, 10,000 steps. The reference file holds this
        # setting at targets 1 and 8; z is non-increasing in the target, so it lies between them.
        z_at_1 = reference_record("calib_noise_q256_60000_T10000_eps1")["value"]
        z_at_8 = reference_record("calib_noise_q256_60000_T10000_eps8")["value"]
        result = self.calibrate("rdp", 3.0, DELTA, DPSGD_Q, DPSGD_STEPS)
        z = result["noise_multiplier"]
        self.assertTrue(z_at_8 < z < z_at_1, (z_at_8, z, z_at_1))
        self.assertLessEqual(result["epsilon"], 3.0)
        self.assertGreater(result["epsilon"], 3.0 * (1 - 1e-3), "z is far from the smallest")
        spec = "subsampled-gaussian:q=%r,sigma=%r,count=%d"
        self.assertLessEqual(self.price("rdp", spec % (DPSGD_Q, z, DPSGD_STEPS)), 3.0)
        # Smallest: 0.1% less noise misses the target.
        self.assertGreater(self.price("rdp", spec % (DPSGD_Q, z * 0.999, DPSGD_STEPS)), 3.0)

    def test_pld_calibration_needs_no_more_noise_than_rdp(self):
        z_rdp = self.calibrate("rdp", 3.0, DELTA, DPSGD_Q, DPSGD_STEPS)["noise_multiplier"]
        result = self.calibrate("pld", 3.0, DELTA, DPSGD_Q, DPSGD_STEPS)
        z_pld = result["noise_multiplier"]
        self.assertLessEqual(z_pld, z_rdp)
        self.assertLessEqual(result["epsilon"], 3.0)
        self.assertLessEqual(
            self.price("pld", "subsampled-gaussian:q=%r,sigma=%r,count=%d" %
                       (DPSGD_Q, z_pld, DPSGD_STEPS)), 3.0)

    # -- bad input --------------------------------------------------------------------------

    def test_bad_price_requests_name_the_field(self):
        ok_event = "laplace:scale=10"
        cases = [
            # (accountant, delta, events, field named first)
            ("median", DELTA, [ok_event], "accountant"),
            ("", DELTA, [ok_event], "accountant"),
            ("rdp", 0, [ok_event], "delta"),
            ("rdp", 1, [ok_event], "delta"),
            ("rdp", -1e-5, [ok_event], "delta"),
            ("rdp", DELTA, ["laplace"], "events[0]"),
            ("rdp", DELTA, ["laplace:scale=abc"], "events[0]"),
            ("rdp", DELTA, ["laplace:scale=-1"], "events[0]"),
            ("rdp", DELTA, ["laplace:sigma=1"], "events[0]"),
            ("rdp", DELTA, ["cauchy:scale=1"], "events[0]"),
            ("rdp", DELTA, ["pure:epsilon=1,count=0"], "events[0]"),
            ("rdp", DELTA, ["subsampled-gaussian:q=0,sigma=1"], "events[0]"),
            ("rdp", DELTA, [ok_event, "pure:epsilon=1,,"], "events[1]"),
            # basic and advanced compose pure / (epsilon, delta) events only.
            ("basic", DELTA, ["gaussian:sigma=1"], "events"),
            ("advanced", DELTA, ["subsampled-gaussian:q=0.01,sigma=1"], "events"),
        ]
        for accountant, delta, events, field in cases:
            args = ["price", "--accountant", accountant, "--delta", repr(delta)]
            for event in events:
                args += ["--event", event]
            with self.subTest(args=args):
                self.assert_refused(self.dpqd.ctl(*args, check=False), "INVALID_ARGUMENT", field)

    def test_bad_calibrate_requests_name_the_field(self):
        good = {"accountant": "rdp", "target-epsilon": 3, "delta": DELTA, "q": 0.01, "steps": 100}
        cases = [
            ("accountant", "nope", "accountant"),
            ("accountant", "basic", "accountant"),
            ("accountant", "advanced", "accountant"),
            ("target-epsilon", 0, "target_epsilon"),
            ("target-epsilon", -1, "target_epsilon"),
            ("delta", 0, "delta"),
            ("delta", 1, "delta"),
            ("q", 0, "q "),
            ("q", 1.5, "q "),
            ("steps", 0, "steps"),
            ("steps", -5, "steps"),
        ]
        for flag, value, field in cases:
            params = dict(good, **{flag: value})
            args = ["calibrate"]
            for name, v in params.items():
                args += ["--" + name, v]
            with self.subTest(flag=flag, value=value):
                self.assert_refused(self.dpqd.ctl(*args, check=False), "INVALID_ARGUMENT", field)

    def test_oversized_pld_work_is_resource_exhausted(self):
        # A billion Laplace releases do not fit a PLD of bounded size.
        result = self.dpqd.ctl("price", "--accountant", "pld", "--delta", DELTA, "--event",
                               "laplace:scale=10,count=1000000000", check=False)
        self.assert_error(result, "RESOURCE_EXHAUSTED")
        # ...while the other accountants price it at once.
        self.assertLess(self.price("rdp", "laplace:scale=10,count=1000000000"), math.inf)
        # Too many distinct mechanisms for one PLD request.
        args = ["price", "--accountant", "pld", "--delta", DELTA]
        for i in range(101):
            args += ["--event", "laplace:scale=%d" % (i + 1)]
        self.assert_refused(self.dpqd.ctl(*args, check=False), "RESOURCE_EXHAUSTED", "events")


if __name__ == "__main__":
    unittest.main()
