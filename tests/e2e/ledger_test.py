#!/usr/bin/python3
"""End-to-end: ledgers with a chosen accountant, and `dpqctl audit verify`.

- An RDP ledger composes Gaussian queries far below basic composition, and its spent epsilon is
  what the (real) price RPC says the same events cost.
- `audit verify` recomputes the hash chain and the ledger; an UPDATE made as the table owner with
  the append-only trigger disabled is found by `audit verify --full`, naming the altered row. The
  default, incremental run reads only the rows after the last verified one, so it does not see a
  row rewritten before it (it reads the checkpoint row alone and says so).
"""

import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

EXIT_VERIFICATION_FAILED = 4


class LedgerTest(harness.DpqdTestCase):
    def setUp(self):
        self.dpqd = self.new_dpqd()
        self.create_slid(self.dpqd)

    def gaussian_count(self, epsilon=0.5, delta=1e-7, check=True, k=1):
        # Repeats of one question are answered by the result cache: vary K (same epsilon, delta
        # and noise; a different question) to make each call a new release.
        return self.dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", epsilon,
                             "--mechanism", "gaussian", "--delta", delta,
                             "--max-contributions", k, check=check)

    def test_rdp_ledger_charges_less_than_basic_and_matches_the_price_of_its_events(self):
        self.dpqd.ctl("budget", "set", "slid", "--epsilon", 2, "--delta", 1e-6, "--accountant", "rdp")
        answers = [self.gaussian_count() for _ in range(1)]
        # K = 1 each time but a different where clause: same sensitivity, a different question.
        answers += [self.dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", 0.5,
                                  "--mechanism", "gaussian", "--delta", 1e-7,
                                  "--where", "age >= %d" % i) for i in range(7)]
        budget = self.dpqd.ctl("budget", "show", "slid")
        self.assertEqual(budget["accountant"], "rdp")
        # Basic composition would have spent 8 * 0.5 = 4 > 2; RDP composes them to about 1.46.
        self.assertLess(budget["epsilon_spent"], 2)
        self.assertGreater(budget["epsilon_spent"], 0.5)
        # The same eight Gaussian releases priced by the accountant service at sensitivity 1. The
        # ledger charges the discrete release's grid sensitivity D*gamma, slightly above 1
        # (additive_mechanism.h: at most 2^-20 relative), so it may be a hair above, never below.
        sigma = answers[0]["noise_scale"]
        price = self.dpqd.ctl("price", "--accountant", "rdp", "--delta", 1e-6, "--event",
                              "gaussian:sigma=%r,sensitivity=1,count=8" % sigma)
        self.assertGreaterEqual(budget["epsilon_spent"], price["epsilon"])
        self.assertLessEqual(budget["epsilon_spent"], price["epsilon"] * (1 + 4e-6))
        verify = self.dpqd.ctl("audit", "verify", "slid")
        self.assertTrue(verify["ok"], dict(verify))
        self.assertEqual(verify["entries"], 8)

    def test_rdp_ledger_refuses_once_the_converted_epsilon_would_exceed_the_budget(self):
        self.dpqd.ctl("budget", "set", "slid", "--epsilon", 1, "--delta", 1e-6, "--accountant", "rdp")
        results = [self.gaussian_count(check=False, k=k) for k in range(1, 13)]
        ok = [r for r in results if r.returncode == 0]
        refused = [r for r in results if r.returncode != 0]
        self.assertGreater(len(ok), 2)
        self.assertTrue(refused)
        for r in refused:
            self.assert_error(r, "RESOURCE_EXHAUSTED", "rdp")
        budget = self.dpqd.ctl("budget", "show", "slid")
        self.assertLessEqual(budget["epsilon_spent"], 1.0)
        self.assertEqual(len(self.dpqd.ctl("audit", "slid")["entries"]), len(ok))
        self.assertTrue(self.dpqd.ctl("audit", "verify", "slid")["ok"])

    def test_accountant_is_fixed_once_budget_is_spent(self):
        # A pld ledger is accepted (one-by-one queries go through its RDP filter)...
        self.assertEqual(self.dpqd.ctl("budget", "set", "slid", "--epsilon", 1, "--delta", 1e-6,
                                       "--accountant", "pld")["accountant"], "pld")
        self.dpqd.ctl("budget", "set", "slid", "--epsilon", 1, "--delta", 1e-6,
                      "--accountant", "basic")
        self.dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", 0.1)
        self.assert_error(self.dpqd.ctl("budget", "set", "slid", "--epsilon", 1, "--delta", 1e-6,
                                        "--accountant", "rdp", check=False),
                          "FAILED_PRECONDITION", "cannot change")

    def test_verify_reports_ok_on_an_untouched_basic_ledger(self):
        self.dpqd.ctl("budget", "set", "slid", "--epsilon", 1, "--delta", 1e-6)
        for eps in (0.1, 0.2, 0.3):
            self.dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", eps)
        verify = self.dpqd.ctl("audit", "verify", "slid")
        self.assertTrue(verify["ok"], dict(verify))
        self.assertEqual(verify["first_broken_seq"], 0)
        self.assertEqual(verify["epsilon_spent_recomputed"], verify["epsilon_spent_ledger"])
        self.assert_close(verify["epsilon_spent_ledger"], 0.6)

    def test_analyst_cap_limits_one_analyst_within_the_dataset_budget(self):
        self.dpqd.ctl("budget", "set", "slid", "--epsilon", 5, "--delta", 1e-6)
        alice = self.create_analyst(self.dpqd, "alice")
        bob = self.create_analyst(self.dpqd, "bob")
        granted = self.dpqd.ctl("grant", "alice", "slid", "--epsilon-cap", 0.3)
        self.assertEqual(granted["epsilon_cap"], 0.3)
        self.dpqd.ctl("grant", "bob", "slid")
        for k in range(1, 4):  # three different questions of 0.1 (same ones would hit the cache)
            self.dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", 0.1,
                          "--max-contributions", k, token=alice)
        before = self.snapshot(self.dpqd, "slid")
        refused = self.dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", 0.1,
                                "--max-contributions", 4, token=alice, check=False)
        self.assert_error(refused, "RESOURCE_EXHAUSTED", "cap")
        self.assertEqual(self.snapshot(self.dpqd, "slid"), before)
        # Bob is bounded only by the dataset's budget.
        self.dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", 1, token=bob)
        # Lowering alice's cap below her spend is refused.
        self.assert_error(self.dpqd.ctl("grant", "alice", "slid", "--epsilon-cap", 0.2, check=False),
                          "FAILED_PRECONDITION", "spent")

    @unittest.skipUnless(os.geteuid() == 0 and shutil.which("psql"),
                         "needs root (to reach the embedded cluster's socket) and psql")
    def test_update_with_trigger_disabled_is_detected_by_verify(self):
        self.dpqd.ctl("budget", "set", "slid", "--epsilon", 1, "--delta", 1e-6)
        for k in range(1, 5):
            self.dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", 0.1,
                          "--max-contributions", k)
        self.assertTrue(self.dpqd.ctl("audit", "verify", "slid")["ok"])
        # The table owner hides part of a charge, bypassing the append-only trigger.
        socket_dir = os.path.join(self.dpqd.data_dir, "run")
        subprocess.run(
            ["psql", "-h", socket_dir, "-U", "postgres", "-d", "dpq", "-v", "ON_ERROR_STOP=1", "-c",
             "ALTER TABLE audit DISABLE TRIGGER audit_append_only; "
             "UPDATE audit SET epsilon_units = 1 WHERE seq = 3; "
             "ALTER TABLE audit ENABLE TRIGGER audit_append_only;"],
            check=True, capture_output=True, stdin=subprocess.DEVNULL, timeout=60)
        incremental = self.dpqd.ctl("audit", "verify", "slid")
        self.assertTrue(incremental["ok"], dict(incremental))
        self.assertFalse(incremental["full"])
        self.assertEqual((incremental["checkpoint_seq"], incremental["rows_read"]), (4, 1))
        self.assertIn("incremental from seq 4, read 1 row",
                      self.dpqd.ctl_text("audit", "verify", "slid"))
        verify = self.dpqd.ctl("audit", "verify", "slid", "--full", check=False)
        self.assertEqual(verify.returncode, EXIT_VERIFICATION_FAILED, dict(verify))
        self.assertFalse(verify["ok"])
        self.assertTrue(verify["full"])
        self.assertEqual(verify["rows_read"], 4)
        self.assertEqual(verify["first_broken_seq"], 3)
        self.assertIn("altered", verify["reason"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
