#!/usr/bin/python3
"""dpq.Client against a real dpqd (embedded PostgreSQL, loopback gRPC), with dpqctl as the referee.

The admin loads the demo table through the package's own upload (create_dataset), an analyst
queries it; every figure the package returns is checked against the ledger as dpqctl reports it.
"""
import unittest

import _paths  # noqa: F401  pylint: disable=unused-import
import harness

harness.require_grpc_stubs()
import dpq  # noqa: E402  pylint: disable=wrong-import-position

SLID_TYPES = dict(t.split("=") for t in harness.SLID_TYPES)
SLID_BOUNDS = {"wages": (0, 100), "age": (0, 120), "education": (0, 25)}
SEX = ("Female", "Male")


class ClientTest(harness.DpqdTestCase):

    @classmethod
    def setUpClass(cls):
        cls.dpqd = cls.new_class_dpqd()
        cls.admin = dpq.Client(cls.dpqd.address, harness.ADMIN_TOKEN)
        cls.addClassCleanup(cls.admin.close)
        cls.loaded = cls.admin.create_dataset("slid", harness.data_file("slid.csv"), "person_id",
                                              SLID_TYPES, SLID_BOUNDS,
                                              categories={"sex": list(SEX)})
        cls.admin.set_budget("slid", epsilon=50, delta=1e-5)
        credentials = cls.admin.create_analyst("alice")
        cls.admin.grant("alice", "slid")
        cls.alice_token = credentials.token
        cls.alice = dpq.Client(cls.dpqd.address, credentials.token)
        cls.addClassCleanup(cls.alice.close)

    def ledger(self):
        """(epsilon_spent, delta_spent, audit entries) as dpqctl sees them."""
        return self.snapshot(self.dpqd, "slid")

    # -- upload and schema ------------------------------------------------------------------

    def test_create_dataset_streams_the_csv_with_the_declared_schema(self):
        with open(harness.data_file("slid.csv"), "rb") as f:
            data_rows = f.read().count(b"\n") - 1
        self.assertEqual(self.loaded.rows_loaded, data_rows)
        shown = self.alice.dataset("slid")
        self.assertEqual([c.name for c in shown.columns],
                         ["person_id", "wages", "education", "age", "sex", "language"])
        by_name = {c.name: c for c in shown.columns}
        self.assertEqual(by_name["wages"].type, "double")
        self.assertEqual((by_name["wages"].lower, by_name["wages"].upper), (0, 100))
        self.assertEqual(by_name["sex"].categories, SEX)
        self.assertEqual([d.name for d in self.alice.datasets()], ["slid"])

    def test_undeclared_column_types_are_refused_before_sending(self):
        types = dict(SLID_TYPES)
        del types["language"]
        with self.assertRaises(dpq.InvalidArgument) as cm:
            self.admin.create_dataset("slid2", harness.data_file("slid.csv"), "person_id", types)
        self.assertIn("language", cm.exception.message)
        with self.assertRaises(dpq.NotFound):
            self.admin.budget("slid2")

    # -- queries ----------------------------------------------------------------------------

    def test_query_returns_a_typed_answer_and_is_charged_once(self):
        eps_before, _, audit_before = self.ledger()
        answer = self.alice.query("slid", "mean", 0.5, column="wages", request_id="py-mean-1")
        self.assertIsInstance(answer, dpq.QueryResult)
        self.assertEqual((answer.aggregate, answer.mechanism), ("mean", "laplace"))
        self.assertEqual((answer.lower, answer.upper), (0, 100))
        self.assertLess(answer.interval.lower, answer.interval.upper)
        self.assertEqual(answer.interval.confidence, 0.95)
        self.assertEqual(len(answer.rows), 1)
        self.assertEqual(answer.rows[0].value, answer.value)
        after = self.ledger()
        eps_after, _, audit_after = after
        self.assertAlmostEqual(eps_after - eps_before, 0.5)
        self.assertEqual(audit_after, audit_before + 1)
        self.assertAlmostEqual(answer.budget.epsilon_spent, eps_after)
        # The same request id replays the stored answer and charges nothing.
        again = self.alice.query("slid", "mean", 0.5, column="wages", request_id="py-mean-1")
        self.assertTrue(again.replayed)
        self.assertEqual(again.value, answer.value)
        self.assertEqual(self.ledger(), after)

    def test_group_by_answer_converts_to_a_data_frame_with_intervals(self):
        # sex has declared categories: every one is released, no partition selection.
        answer = self.alice.query("slid", "count", 1.0, group_by=["sex"])
        frame = answer.to_pandas()
        self.assertEqual(sorted(frame["sex"]), list(SEX))
        for column in ("value", "lower", "upper", "confidence", "noise_scale"):
            self.assertIn(column, frame.columns)
        self.assertTrue(((frame["lower"] <= frame["value"]) & (frame["value"] <= frame["upper"]))
                        .all())
        quantiles = self.alice.query("slid", "quantile", 1.0, column="wages",
                                     quantiles=[0.25, 0.5, 0.75])
        frame = quantiles.to_pandas()
        self.assertEqual(list(frame["label"]), ["q=0.25", "q=0.5", "q=0.75"])
        self.assertIn("rank_error", frame.columns)

    def test_numpy_numbers_are_accepted(self):
        import numpy  # pylint: disable=import-outside-toplevel
        answer = self.alice.query("slid", "sum", numpy.float64(0.25), column="age",
                                  confidence=numpy.float32(0.9))
        self.assertAlmostEqual(answer.epsilon, 0.25)
        self.assertAlmostEqual(answer.interval.confidence, 0.9, places=6)

    def test_batch_is_charged_once_and_lists_every_answer(self):
        _, _, audit_before = self.ledger()
        batch = self.alice.query_batch("slid", [
            {"aggregate": "count", "epsilon": 0.2},
            {"aggregate": "sum", "epsilon": 0.2, "column": "age"},
            {"aggregate": "histogram", "epsilon": 0.2, "column": "sex"},
        ], delta=1e-6)
        self.assertEqual([a.aggregate for a in batch.answers], ["count", "sum", "histogram"])
        self.assertLessEqual(batch.epsilon, batch.epsilon_sum + 1e-12)
        self.assertAlmostEqual(batch.epsilon_sum, 0.6)
        self.assertEqual(self.ledger()[2], audit_before + 1)
        frame = batch.to_pandas()
        self.assertEqual(list(frame["query"]), [0, 1, 2, 2])

    def test_plan_charges_nothing(self):
        before = self.ledger()
        plan = self.alice.plan("slid", "count", target_error=10)
        self.assertGreater(plan.epsilon, 0)
        self.assertAlmostEqual(plan.error, 10, delta=0.5)
        at_eps = self.alice.plan("slid", "count", epsilon=plan.epsilon)
        self.assertLessEqual(at_eps.error, 10 + 1e-6)
        # The plan states every noise component: a count's one, at the scale it reports.
        self.assertEqual([c["statistic"] for c in at_eps.components], ["count"])
        self.assertEqual(at_eps.components[0]["noise_scale"], at_eps.noise_scale)
        self.assertEqual(at_eps.keys["source"], "none")
        self.assertIsNone(at_eps.quantile)
        self.assertIsNone(at_eps.value_expression)
        self.assertEqual(self.ledger(), before)

    def test_budget_agrees_with_dpqctl(self):
        budget = self.alice.budget("slid")
        shown = self.dpqd.ctl("budget", "show", "slid")
        shown = shown.get("budget", shown)
        for field in ("epsilon_total", "epsilon_spent", "epsilon_remaining", "delta_total"):
            self.assertAlmostEqual(getattr(budget, field), shown[field], msg=field)
        self.assertEqual(budget.accountant, shown["accountant"])

    # -- errors -----------------------------------------------------------------------------

    def test_errors_are_exceptions_carrying_the_grpc_code_and_charge_nothing(self):
        before = self.ledger()
        cases = [
            (lambda: self.alice.query("slid", "sum", 0.5, column="wages", lower=0, upper=1e6),
             dpq.InvalidArgument, "INVALID_ARGUMENT"),
            (lambda: self.alice.query("slid", "count", 100.0), dpq.ResourceExhausted,
             "RESOURCE_EXHAUSTED"),
            (lambda: self.alice.create_analyst("mallory"), dpq.PermissionDenied,
             "PERMISSION_DENIED"),
            (lambda: dpq.Client(self.dpqd.address, "not-a-token").budget("slid"),
             dpq.Unauthenticated, "UNAUTHENTICATED"),
            (lambda: self.admin.budget("nope"), dpq.NotFound, "NOT_FOUND"),
        ]
        for call, cls, code in cases:
            with self.assertRaises(cls) as cm:
                call()
            self.assertEqual(cm.exception.code, code)
            self.assertIsInstance(cm.exception, dpq.DpqError)
            self.assertTrue(cm.exception.message)
        self.assertEqual(self.ledger(), before)

    def test_client_side_refusals_send_nothing(self):
        before = self.ledger()
        with self.assertRaises(dpq.InvalidArgument) as cm:
            self.alice.query("slid", "median", 0.5)
        self.assertIsInstance(cm.exception, ValueError)
        self.assertIn("quantile", cm.exception.message)  # lists the valid names
        with self.assertRaises(dpq.InvalidArgument):
            self.alice.query("slid", "count", 0.5, mechanism="exponential")
        with self.assertRaises(dpq.InvalidArgument):
            self.admin.drop_dataset("slid")
        self.assertEqual(self.ledger(), before)

    # -- admin ------------------------------------------------------------------------------

    def test_admin_methods_mirror_dpqctl(self):
        credentials = self.admin.create_analyst("bob")
        self.assertEqual((credentials.name, credentials.role), ("bob", "analyst"))
        self.assertNotIn(credentials.token, repr(credentials))
        self.admin.grant("bob", "slid", epsilon_cap=0.3)
        grants = {(g["analyst"], g["dataset"]): g for g in self.admin.grants("slid")}
        self.assertEqual(grants[("bob", "slid")]["epsilon_cap"], 0.3)
        bob = dpq.Client(self.dpqd.address, credentials.token)
        self.addCleanup(bob.close)
        self.assertEqual(bob.whoami(), {"name": "bob", "role": "analyst", "datasets": ["slid"]})
        with self.assertRaises(dpq.ResourceExhausted):  # over bob's cap
            bob.query("slid", "count", 0.5)
        rotated = self.admin.rotate_token("bob")
        with self.assertRaises(dpq.Unauthenticated):
            bob.budget("slid")
        with dpq.Client(self.dpqd.address, rotated.token) as bob2:
            self.assertEqual(bob2.whoami()["name"], "bob")
        self.admin.revoke_grant("bob", "slid")
        names = [a["name"] for a in self.admin.analysts()]
        self.assertIn("bob", names)
        self.assertTrue(self.admin.verify_audit("slid")["ok"])
        self.assertTrue(self.admin.verify_admin_log()["ok"])
        actions = [e["action"] for e in self.admin.admin_log()]
        self.assertIn("dataset.create", actions)
        self.assertIn("grant.revoke", actions)
        self.assertEqual(len(self.admin.audit("slid")), self.ledger()[2])
        self.assertTrue(self.admin.status()["database_reachable"])

    def test_load_appends_rows_and_bumps_the_version(self):
        version = self.admin.dataset("slid").version
        loaded = self.admin.load_dataset(
            "slid", "person_id,wages,education,age,sex,language\n99001,12.5,14,33,Female,French\n")
        self.assertEqual(loaded.rows_loaded, 1)
        self.assertGreater(self.admin.dataset("slid").version, version)

    def test_health_follows_grpc_health_checking(self):
        self.assertEqual(self.alice.health(), "SERVING")
        self.assertEqual(self.alice.health("dpq.v1.AnalystService"), "SERVING")
        self.assertEqual(self.alice.health(), self.dpqd.ctl_text("health").split()[0])
        with self.assertRaises(dpq.NotFound):
            self.alice.health("no.such.Service")

    def test_accounting(self):
        epsilon = self.alice.price("laplace:scale=10,count=100", delta=1e-5, accountant="pld")
        self.assertLess(epsilon, 10)  # basic composition would say 100 * 0.1
        shown = self.dpqd.ctl("price", "--accountant", "pld", "--delta", 1e-5,
                              "--event", "laplace:scale=10,count=100", token=self.alice_token)
        self.assertEqual(epsilon, shown["epsilon"])
        z, achieved = self.alice.calibrate(3, 1e-5, 0.004267, 10000, accountant="rdp")
        self.assertGreater(z, 0)
        self.assertLessEqual(achieved, 3)


if __name__ == "__main__":
    unittest.main()
