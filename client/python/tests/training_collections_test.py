#!/usr/bin/python3
"""client.collections and client.training against a real dpqd, with dpqctl as the referee.

Each method is called; errors arrive as the DpqError subclass of their gRPC code; a refused call
(bad input, overspend, another analyst's run) charges nothing, checked against the ledger and the
audit as `dpqctl budget show` / `dpqctl audit` report them; after K step reports the ledger's spent
epsilon is what `dpqctl training show` reports for the run.
"""
import random
import unittest

import _paths  # noqa: F401  pylint: disable=unused-import
import harness

harness.require_grpc_stubs()
import dpq  # noqa: E402  pylint: disable=wrong-import-position

Q = 0.01
Z = 1.1
RUN_DELTA = 1e-6
LEDGER_DELTA = 1e-5


class CollectionsTest(harness.DpqdTestCase):

    @classmethod
    def setUpClass(cls):
        cls.dpqd = cls.new_class_dpqd()
        cls.admin = dpq.Client(cls.dpqd.address, harness.ADMIN_TOKEN)
        cls.addClassCleanup(cls.admin.close)
        cls.alice = dpq.Client(cls.dpqd.address, cls.create_analyst(cls.dpqd, "alice"))
        cls.addClassCleanup(cls.alice.close)

    def test_create_list_get_submit_estimate(self):
        created = self.admin.collections.create("colours", ["red", "green", "blue"], 1.5, "krr",
                                                reports_per_client=2)
        self.assertEqual((created.name, created.domain, created.epsilon, created.mechanism,
                          created.reports_per_client, created.reports),
                         ("colours", ("red", "green", "blue"), 1.5, "krr", 2, 0))
        self.assertIn("colours", [c.name for c in self.alice.collections.list()])
        rng = random.Random(7)
        for i in range(30):
            self.alice.collections.submit("colours", "c%d" % i, "red" if i % 3 else "blue", rng=rng)
        shown = self.dpqd.ctl("collection", "show", "colours")
        self.assertEqual(shown["reports"], 30)
        self.assertEqual(self.alice.collections.get("colours").reports, 30)
        est = self.alice.collections.estimate("colours", confidence=0.9)
        self.assertEqual(est.reports, 30)
        self.assertAlmostEqual(est.confidence, 0.9)
        self.assertEqual([e.value for e in est.estimates], ["red", "green", "blue"])
        # Unbiased counts add up to n exactly for k-ary RR (Wang et al. 2017, Thm. 2: the
        # estimator is linear and the supports of one report sum to one).
        self.assertAlmostEqual(sum(e.estimate for e in est.estimates), 30, places=6)
        for e in est.estimates:
            self.assertLess(e.lower, e.estimate)
            self.assertGreater(e.upper, e.estimate)
        referee = self.dpqd.ctl("collection", "estimate", "colours", "--confidence", 0.9)
        self.assertEqual(len(referee["estimates"]), 3)
        for mine, theirs in zip(est.estimates, referee["estimates"]):
            self.assertEqual(mine.value, theirs["value"])
            self.assert_close(mine.estimate, theirs["estimate"], tol=1e-9)
        try:
            frame = est.to_pandas()
        except ImportError:
            return
        self.assertEqual(list(frame.columns), ["value", "estimate", "lower", "upper"])
        self.assertEqual(len(frame), 3)

    def test_every_mechanism_submits(self):
        for mechanism, domain in (("rr", ["no", "yes"]), ("oue", ["a", "b", "c"]),
                                  ("olh", ["a", "b", "c"])):
            name = "m_" + mechanism
            self.admin.collections.create(name, domain, 1.0, mechanism)
            self.alice.collections.submit(name, "one", domain[1])
            self.assertEqual(self.alice.collections.get(name).reports, 1)

    def test_errors_by_code(self):
        with self.assertRaises(dpq.PermissionDenied):
            self.alice.collections.create("nope", ["a", "b"], 1.0, "krr")
        self.admin.collections.create("taken", ["a", "b"], 1.0, "krr")
        with self.assertRaises(dpq.AlreadyExists):
            self.admin.collections.create("taken", ["a", "b"], 1.0, "krr")
        with self.assertRaises(dpq.InvalidArgument):
            self.admin.collections.create("badmech", ["a", "b"], 1.0, "laplace")
        with self.assertRaises(dpq.InvalidArgument):
            self.admin.collections.create("bad_eps", ["a", "b"], -1.0, "krr")
        with self.assertRaises(dpq.NotFound):
            self.alice.collections.get("missing")
        with self.assertRaises(dpq.NotFound):
            self.alice.collections.submit("missing", "c", "a")
        with self.assertRaises(dpq.InvalidArgument):
            self.alice.collections.submit("taken", "c", "not in domain")
        self.alice.collections.submit("taken", "once", "a")
        with self.assertRaises(dpq.ResourceExhausted):
            self.alice.collections.submit("taken", "once", "b")
        self.assertEqual(self.alice.collections.get("taken").reports, 1)
        stranger = dpq.Client(self.dpqd.address, "wrong-token")
        self.addCleanup(stranger.close)
        with self.assertRaises(dpq.Unauthenticated):
            stranger.collections.list()


class TrainingTest(harness.DpqdTestCase):

    def setUp(self):
        self.dpqd = self.new_dpqd()
        self.create_slid(self.dpqd)
        self.trainer = dpq.Client(self.dpqd.address, self.create_analyst(self.dpqd, "trainer"))
        self.addCleanup(self.trainer.close)
        self.dpqd.ctl("grant", "trainer", "slid")

    def budget(self, epsilon):
        self.dpqd.ctl("budget", "set", "slid", "--epsilon", epsilon, "--delta", LEDGER_DELTA,
                      "--accountant", "rdp")

    def test_start_report_get_list_and_the_ledger_after_k_steps(self):
        self.budget(10)
        # At the ledger's own delta, the run's epsilon and the ledger's spend are one number.
        run = self.trainer.training.start("slid", "mnist", Q, noise_multiplier=Z,
                                          delta=LEDGER_DELTA)
        self.assertEqual((run.dataset, run.run, run.analyst, run.steps, run.epsilon),
                         ("slid", "mnist", "trainer", 0, 0.0))
        self.assertIsNone(run.target_epsilon)
        self.assertEqual(self.snapshot(self.dpqd, "slid")[2], 0)  # starting charges nothing
        reports = []
        for k in range(5):
            reports.append(self.trainer.training.report_steps("mnist", 40,
                                                              request_id="r%d" % k))
        self.assertEqual(reports[-1].run.steps, 200)
        self.assertTrue(all(r.epsilon > 0 and not r.replayed for r in reports))
        replay = self.trainer.training.report_steps(run, 40, request_id="r4")
        self.assertTrue(replay.replayed)
        shown = self.dpqd.ctl("training", "show", "--run", "mnist", token=None)
        got = self.trainer.training.get("mnist")
        self.assertEqual(got.steps, shown["steps"])
        self.assertEqual(got.steps, 200)
        self.assertEqual(got.reports, 5)
        self.assert_close(got.epsilon, shown["epsilon"], tol=1e-9)
        spent, _, entries = self.snapshot(self.dpqd, "slid")
        self.assertEqual(entries, 5)
        # rdp ledger: what is spent is the rdp price of all 200 steps at the ledger's delta, which
        # is the run's epsilon (its delta is the ledger's) and the price dpqctl computes.
        self.assert_close(spent, shown["epsilon"], tol=1e-9)
        price = self.dpqd.ctl("price", "--accountant", "rdp", "--delta", LEDGER_DELTA, "--event",
                              "subsampled-gaussian:q=%r,sigma=%r,count=200" % (Q, Z))["epsilon"]
        self.assert_close(spent, price, tol=1e-9)
        listed = self.trainer.training.list("slid")
        self.assertEqual([r.run for r in listed], ["mnist"])
        self.assertIsNone(listed[0].steps_left)
        self.assertEqual([r.run for r in self.trainer.training.list()], ["mnist"])

    def test_calibrated_start_matches_dpqctl_calibrate(self):
        self.budget(5)
        run = self.trainer.training.start("slid", "cal", Q, delta=RUN_DELTA, target_epsilon=2.0,
                                          steps=500)
        self.assertEqual((run.target_epsilon, run.planned_steps), (2.0, 500))
        z, _ = self.trainer.calibrate(2.0, RUN_DELTA, Q, 500, accountant="rdp")
        self.assert_close(run.noise_multiplier, z, tol=1e-9)
        self.trainer.training.report_steps("cal", 500)
        self.assertLessEqual(self.trainer.training.get("cal").epsilon, 2.0 + 1e-9)

    def test_overspend_and_bad_input_are_refused_and_charge_nothing(self):
        self.budget(1)
        self.trainer.training.start("slid", "big", Q, noise_multiplier=Z, delta=RUN_DELTA)
        left = self.trainer.training.get("big").steps_left
        self.assertGreater(left, 0)
        self.trainer.training.report_steps("big", 50)
        before = self.snapshot(self.dpqd, "slid")
        with self.assertRaises(dpq.ResourceExhausted) as cm:
            self.trainer.training.report_steps("big", 100000)
        self.assertIsInstance(cm.exception, dpq.DpqError)
        with self.assertRaises(dpq.InvalidArgument):
            self.trainer.training.report_steps("big", 0)
        with self.assertRaises(dpq.InvalidArgument):
            self.trainer.training.start("slid", "bad", 2.0, noise_multiplier=Z, delta=RUN_DELTA)
        with self.assertRaises(dpq.InvalidArgument):  # refused before sending
            self.trainer.training.start("slid", "bad", Q, delta=RUN_DELTA)
        with self.assertRaises(dpq.AlreadyExists):
            self.trainer.training.start("slid", "big", Q, noise_multiplier=Z, delta=RUN_DELTA)
        with self.assertRaises(dpq.NotFound):
            self.trainer.training.get("missing")
        other = dpq.Client(self.dpqd.address, self.create_analyst(self.dpqd, "other"))
        self.addCleanup(other.close)
        self.dpqd.ctl("grant", "other", "slid")
        with self.assertRaises(dpq.PermissionDenied):
            other.training.report_steps("big", 1)
        self.assertEqual(self.snapshot(self.dpqd, "slid"), before)
        self.assertEqual(self.trainer.training.get("big").steps, 50)


if __name__ == "__main__":
    unittest.main()
