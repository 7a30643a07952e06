#!/usr/bin/python3
"""End-to-end: DP-SGD training runs charged to the ledger, real dpqd and real dpqctl.

- After step reports on an rdp ledger, the ledger's spent epsilon is what the (real) price RPC says
  the same number of subsampled-Gaussian steps cost; the chain verifies.
- kill -9 of dpqd (and of its PostgreSQL) between reports loses no committed step, and a report
  retried with its request id after the restart is not charged again.
- A report that would overspend is refused with RESOURCE_EXHAUSTED (exit 1, JSON error) and
  charges nothing: ledger and audit unchanged.
- `training start --target-epsilon E --steps N` calibrates z; `training show` prints text.
"""

import os
import signal
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

Q = 0.01
Z = 1.1
RUN_DELTA = 1e-6


class TrainingTest(harness.DpqdTestCase):
    def setUp(self):
        self.dpqd = self.new_dpqd()
        self.create_slid(self.dpqd)
        self.token = self.create_analyst(self.dpqd, "trainer")
        self.dpqd.ctl("grant", "trainer", "slid")

    def start_run(self, name, *extra):
        args = ["training", "start", "slid", "--run", name, "--sampling-rate", Q, "--delta", RUN_DELTA]
        return self.dpqd.ctl(*(args + (list(extra) or ["--noise-multiplier", Z])), token=self.token)

    def step(self, name, steps, request_id=None, check=True):
        args = ["training", "step", "--run", name, "--steps", steps]
        if request_id is not None:
            args += ["--request-id", request_id]
        return self.dpqd.ctl(*args, token=self.token, check=check)

    def rdp_price(self, steps, delta):
        return self.dpqd.ctl("price", "--accountant", "rdp", "--delta", delta, "--event",
                             "subsampled-gaussian:q=%r,sigma=%r,count=%d" % (Q, Z, steps))["epsilon"]

    def crash(self):
        """kill -9 of dpqd and of its embedded postmaster (WAL recovery on the next start)."""
        proc = self.dpqd.proc
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        self.dpqd.proc = None
        self.dpqd._close_log()  # pylint: disable=protected-access
        with open(os.path.join(self.dpqd.data_dir, "pg", "postmaster.pid")) as f:
            os.kill(int(f.readline().strip()), signal.SIGKILL)
        self.dpqd.start()

    def test_reports_survive_kill_9_and_the_ledger_equals_the_price_of_all_steps(self):
        self.dpqd.ctl("budget", "set", "slid", "--epsilon", 10, "--delta", 1e-5, "--accountant", "rdp")
        self.start_run("mnist")
        for i in range(4):
            out = self.step("mnist", 25, request_id="mnist-%d" % i)
            self.assertFalse(out["replayed"])
            self.assertEqual(out["run"]["steps"], 25 * (i + 1))
        self.crash()
        shown = self.dpqd.ctl("training", "show", "--run", "mnist", token=self.token)
        self.assertEqual(shown["steps"], 100)
        self.assertEqual(shown["reports"], 4)
        before = self.snapshot(self.dpqd, "slid")
        # The last report retried after the crash (its answer was lost): charged once.
        again = self.step("mnist", 25, request_id="mnist-3")
        self.assertTrue(again["replayed"])
        self.assertEqual(again["run"]["steps"], 100)
        self.assertEqual(self.snapshot(self.dpqd, "slid"), before)
        # Another crash right after a committed report.
        self.step("mnist", 100, request_id="mnist-4")
        self.crash()
        budget = self.dpqd.ctl("budget", "show", "slid")
        price = self.rdp_price(200, 1e-5)
        self.assertGreaterEqual(budget["epsilon_spent"], price)
        self.assertLessEqual(budget["epsilon_spent"], price + 2e-12)
        shown = self.dpqd.ctl("training", "show", "--run", "mnist", token=self.token)
        self.assertEqual(shown["steps"], 200)
        # The run's epsilon at its own delta is the price of its 200 steps there.
        self.assert_close(shown["epsilon"], self.rdp_price(200, RUN_DELTA), tol=1e-9)
        verify = self.dpqd.ctl("audit", "verify", "slid")
        self.assertTrue(verify["ok"], dict(verify))
        self.assertEqual(verify["entries"], 5)
        # Each report is an audit row of kind "training" naming its run.
        entries = self.dpqd.ctl("audit", "slid")["entries"]
        self.assertEqual({(e["kind"], e["column"]) for e in entries}, {("training", "mnist")})

    def test_overspending_report_is_refused_and_charges_nothing(self):
        self.dpqd.ctl("budget", "set", "slid", "--epsilon", 1, "--delta", 1e-5, "--accountant", "rdp")
        self.start_run("big")
        self.step("big", 50)
        left = self.dpqd.ctl("training", "show", "slid", "--run", "big", token=self.token)["steps_left"]
        self.assertGreater(left, 0)
        before = self.snapshot(self.dpqd, "slid")
        refused = self.step("big", left + 1, check=False)
        self.assert_error(refused, "RESOURCE_EXHAUSTED", "budget")
        self.assertEqual(refused.returncode, 1)
        self.assertEqual(self.snapshot(self.dpqd, "slid"), before)
        self.assertEqual(self.dpqd.ctl("training", "show", "--run", "big", token=self.token)["steps"], 50)
        self.step("big", left)
        self.assert_error(self.step("big", 1, check=False), "RESOURCE_EXHAUSTED")

    def test_calibrated_run_and_human_output(self):
        self.dpqd.ctl("budget", "set", "slid", "--epsilon", 5, "--delta", 1e-5, "--accountant", "rdp")
        run = self.start_run("calibrated", "--target-epsilon", 1, "--steps", 500)
        self.assertEqual(run["planned_steps"], 500)
        self.assertGreater(run["noise_multiplier"], 0.5)
        out = self.step("calibrated", 500)
        self.assertLessEqual(out["run"]["epsilon"], 1.0)
        self.assertGreater(out["run"]["epsilon"], 0.99)
        text = self.dpqd.ctl_text("training", "show", "--run", "calibrated", token=self.token)
        self.assertTrue(text.endswith("\n"))
        self.assertIn("epsilon so far:", text)
        self.assertIn("steps left:", text)
        listed = self.dpqd.ctl_text("training", "list", "slid", token=self.token)
        self.assertIn("calibrated", listed)
        # Bad input: a clear error naming the field, nothing registered.
        bad = self.dpqd.ctl("training", "start", "slid", "--run", "bad", "--sampling-rate", 2,
                            "--noise-multiplier", 1, "--delta", 1e-6, token=self.token, check=False)
        self.assert_error(bad, "INVALID_ARGUMENT", "sampling_rate")
        # Another analyst cannot report on this run.
        other = self.create_analyst(self.dpqd, "other")
        self.dpqd.ctl("grant", "other", "slid")
        denied = self.dpqd.ctl("training", "step", "--run", "calibrated", "--steps", 1, token=other,
                               check=False)
        self.assert_error(denied, "PERMISSION_DENIED")


    def test_bad_input_over_grpc_is_refused_naming_the_field_and_charges_nothing(self):
        """What dpqctl refuses itself (NaN, infinities) and other hostile values, straight over
        gRPC: each a precise code naming the field; no run registered, nothing charged."""
        harness.require_grpc_stubs()
        import grpc  # pylint: disable=import-outside-toplevel
        from dpq.v1 import training_pb2  # pylint: disable=import-outside-toplevel
        self.dpqd.ctl("budget", "set", "slid", "--epsilon", 5, "--delta", 1e-5, "--accountant", "rdp")
        self.start_run("good")
        self.step("good", 10)
        before = self.snapshot(self.dpqd, "slid")
        nan, inf = float("nan"), float("inf")

        def start(**kw):
            fields = dict(dataset="slid", run="hostile", sampling_rate=Q, noise_multiplier=Z,
                          delta=RUN_DELTA)
            fields.update(kw)
            return "StartRun", training_pb2.StartRunRequest(**fields)

        def report(**kw):
            fields = dict(run="good", steps=1)
            fields.update(kw)
            return "ReportSteps", training_pb2.ReportStepsRequest(**fields)

        cases = [
            (start(sampling_rate=nan), "INVALID_ARGUMENT", "sampling_rate"),
            (start(sampling_rate=0), "INVALID_ARGUMENT", "sampling_rate"),
            (start(noise_multiplier=inf), "INVALID_ARGUMENT", "noise_multiplier"),
            (start(noise_multiplier=-1), "INVALID_ARGUMENT", "noise_multiplier"),
            (start(delta=nan), "INVALID_ARGUMENT", "delta"),
            (start(delta=1), "INVALID_ARGUMENT", "delta"),
            (start(noise_multiplier=0, target_epsilon=nan, steps=10), "INVALID_ARGUMENT",
             "target_epsilon"),
            (start(noise_multiplier=0, target_epsilon=1, steps=-5), "INVALID_ARGUMENT", "steps"),
            (start(run=""), "INVALID_ARGUMENT", "run"),
            (start(run="x" * 65), "INVALID_ARGUMENT", "run"),
            (start(run="a'; DROP TABLE audit; --"), "INVALID_ARGUMENT", "run"),
            (start(dataset="nosuch"), "NOT_FOUND", "nosuch"),
            (report(steps=0), "INVALID_ARGUMENT", "steps"),
            (report(steps=-1), "INVALID_ARGUMENT", "steps"),
            (report(steps=10 ** 12), "INVALID_ARGUMENT", "steps"),
            (report(request_id="has space"), "INVALID_ARGUMENT", "request_id"),
            (report(run="nosuch"), "NOT_FOUND", "nosuch"),
            (report(dataset="other", run="good"), "NOT_FOUND", "dataset"),
        ]
        channel = grpc.insecure_channel(self.dpqd.address)
        try:
            for (method, request), code, field in cases:
                got, details = harness.grpc_call(channel, "TrainingService", method, request,
                                                 token=self.token)
                self.assertEqual(got, code, "%s %s: %s" % (method, request, details))
                self.assertIn(field, details, "%s: %r should name %s" % (method, details, field))
        finally:
            channel.close()
        self.assertEqual(self.snapshot(self.dpqd, "slid"), before)
        listed = self.dpqd.ctl("training", "list", "slid", token=self.token)
        self.assertEqual([r["run"] for r in listed["runs"]], ["good"])
        self.assertEqual(listed["runs"][0]["steps"], 10)


if __name__ == "__main__":
    unittest.main()
