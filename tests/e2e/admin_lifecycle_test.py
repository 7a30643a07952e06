#!/usr/bin/python3
"""End-to-end through dpqctl: the admin lifecycle of analysts, tokens and grants.

`analyst list`, `analyst revoke`, `token rotate` (the old token stops working on the next request,
on every dpqd of the database: a second dpqd shares the first one's PostgreSQL), `grant revoke`,
`grant list`, a cap change, `whoami` for anyone and `status` for the admin. Revoked analysts keep
their audit history.
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


class AdminLifecycleTest(harness.DpqdTestCase):

    def setUp(self):
        self.dpqd = self.new_dpqd()
        self.create_slid(self.dpqd)
        self.dpqd.ctl("budget", "set", "slid", "--epsilon", 10, "--delta", 1e-6)
        self.alice = self.create_analyst(self.dpqd, "alice")
        self.dpqd.ctl("grant", "alice", "slid", "--epsilon-cap", 2)

    def count(self, token, check=True):
        return self.dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", 0.1,
                             token=token, check=check)

    def second_dpqd(self):
        """Another dpqd on the first one's embedded PostgreSQL (a replica of the service)."""
        url = "postgresql:///dpq?host=%s&port=5432&user=postgres" % os.path.join(self.dpqd.data_dir, "run")
        root = self.make_temp_dir()
        os.makedirs(os.path.join(root, "logs"))
        other = harness.Dpqd(os.path.join(root, "data"), os.path.join(root, "logs"),
                             extra_args=["--database-url", url])
        self.addCleanup(harness._stop_dpqd, other)  # pylint: disable=protected-access
        other.start()
        return other

    def test_analyst_list_shows_state_last_use_and_grants(self):
        self.count(self.alice)
        analysts = {a["name"]: a for a in self.dpqd.ctl("analyst", "list")["analysts"]}
        self.assertEqual(set(analysts), {"admin", "alice"})
        alice = analysts["alice"]
        self.assertEqual(alice["role"], "analyst")
        self.assertIsNone(alice["revoked_at"])
        self.assertIsNotNone(alice["last_used_at"])  # the query above
        self.assertEqual([g["dataset"] for g in alice["grants"]], ["slid"])
        self.assertEqual(alice["grants"][0]["epsilon_cap"], 2)
        self.assertAlmostEqual(alice["grants"][0]["epsilon_spent"], 0.1, delta=1e-12)
        text = self.dpqd.ctl_text("analyst", "list")
        self.assertIn("NAME", text.splitlines()[0])
        self.assertTrue(text.endswith("\n"))

    def test_revoked_analyst_is_refused_everywhere_and_keeps_its_audit_history(self):
        self.count(self.alice)
        other = self.second_dpqd()
        self.assertEqual(other.ctl("whoami", token=self.alice)["name"], "alice")
        self.dpqd.ctl("analyst", "revoke", "alice")
        for server in (self.dpqd, other):
            self.assert_error(server.ctl("whoami", token=self.alice, check=False), "UNAUTHENTICATED",
                              "unknown or revoked token")
            self.assert_error(server.ctl("query", "slid", "--aggregate", "count", "--epsilon", 0.1,
                                         token=self.alice, check=False), "UNAUTHENTICATED")
        entries = self.dpqd.ctl("audit", "slid")["entries"]
        self.assertEqual([e["analyst"] for e in entries], ["alice"])
        self.assertTrue(self.dpqd.ctl("audit", "verify", "slid")["ok"])
        self.assert_error(self.dpqd.ctl("analyst", "revoke", "alice", check=False),
                          "FAILED_PRECONDITION", "already revoked")
        self.assert_error(self.dpqd.ctl("token", "rotate", "alice", check=False),
                          "FAILED_PRECONDITION", "revoked")
        self.assert_error(self.dpqd.ctl("analyst", "revoke", "admin", check=False),
                          "FAILED_PRECONDITION", "cannot revoke itself")

    def test_rotated_token_stops_working_on_the_next_request_on_every_server(self):
        other = self.second_dpqd()
        self.count(self.alice)
        self.count(self.alice)  # a warm channel on both servers
        self.assertEqual(other.ctl("whoami", token=self.alice)["name"], "alice")
        rotated = self.dpqd.ctl("token", "rotate", "alice")
        new = rotated["token"]
        self.assertNotEqual(new, self.alice)
        for server in (self.dpqd, other):
            self.assert_error(server.ctl("whoami", token=self.alice, check=False), "UNAUTHENTICATED")
            self.assertEqual(server.ctl("whoami", token=new)["name"], "alice")
        # The first dpqd remembers alice by her old token from the counts above (a query call is
        # admitted without a lookup for 30 s): the query's first statement refuses the old token.
        spent = self.dpqd.ctl("budget", "show", "slid")["epsilon_spent"]
        self.assert_error(self.count(self.alice, check=False), "UNAUTHENTICATED",
                          "unknown or revoked token")
        self.assertEqual(self.dpqd.ctl("budget", "show", "slid")["epsilon_spent"], spent)
        self.count(new)
        self.assertIn("shown only once", self.dpqd.ctl_text("token", "rotate", "alice"))

    def test_grant_revoke_list_and_cap_change(self):
        self.count(self.alice)
        self.dpqd.ctl("grant", "revoke", "alice", "slid")
        self.assert_error(self.count(self.alice, check=False), "PERMISSION_DENIED",
                          "ask an admin to run `dpqctl grant alice slid`")
        self.assertEqual(self.dpqd.ctl("whoami", token=self.alice)["datasets"], [])
        grants = self.dpqd.ctl("grant", "list", "slid")["grants"]
        self.assertEqual(len(grants), 1)
        self.assertIsNotNone(grants[0]["revoked_at"])
        self.assert_error(self.dpqd.ctl("grant", "revoke", "alice", "slid", check=False), "NOT_FOUND",
                          "holds no grant")
        # Granting again restores access with the spend kept; a new cap applies.
        self.dpqd.ctl("grant", "alice", "slid", "--epsilon-cap", 0.15)
        grants = self.dpqd.ctl("grant", "list")["grants"]
        self.assertIsNone(grants[0]["revoked_at"])
        self.assertAlmostEqual(grants[0]["epsilon_spent"], 0.1, delta=1e-12)
        self.assertEqual(grants[0]["epsilon_cap"], 0.15)
        # (Another question: the same one again would be answered from alice's cache, free.)
        over = self.dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", 0.1, "--where",
                             "age > 1", token=self.alice, check=False)
        self.assert_error(over, "RESOURCE_EXHAUSTED", "dpqctl grant alice slid --epsilon-cap")
        self.assert_error(self.dpqd.ctl("grant", "list", "nope", check=False), "NOT_FOUND")
        self.assert_error(self.dpqd.ctl("grant", "alice", check=False), "INVALID_ARGUMENT")

    def test_every_admin_action_is_in_the_hash_chained_admin_log(self):
        before = len(self.dpqd.ctl("audit", "--admin-log")["entries"])
        bob = self.create_analyst(self.dpqd, "bob")
        self.dpqd.ctl("grant", "bob", "slid", "--epsilon-cap", 1)
        self.dpqd.ctl("budget", "set", "slid", "--epsilon", 12, "--delta", 1e-6)
        self.dpqd.ctl("token", "rotate", "bob")
        self.dpqd.ctl("grant", "revoke", "bob", "slid")
        self.dpqd.ctl("analyst", "revoke", "bob")
        self.dpqd.ctl("dataset", "load", "slid", "--csv", harness.data_file("slid.csv"))
        self.dpqd.ctl("dataset", "drop", "slid", "--yes")
        # Refused admin calls leave no entry: a duplicate analyst, an analyst's own attempt, a
        # grant on a dropped dataset.
        self.dpqd.ctl("analyst", "create", "bob", check=False)
        self.dpqd.ctl("analyst", "create", "eve", token=bob, check=False)
        self.dpqd.ctl("grant", "alice", "slid", check=False)
        entries = self.dpqd.ctl("audit", "--admin-log")["entries"][before:]
        self.assertEqual([(e["action"], e["target"]) for e in entries], [
            ("analyst.create", "bob"), ("grant", "bob/slid"), ("budget.set", "slid"),
            ("token.rotate", "bob"), ("grant.revoke", "bob/slid"), ("analyst.revoke", "bob"),
            ("dataset.load", "slid"), ("dataset.drop", "slid")])
        self.assertEqual({e["admin"] for e in entries}, {"admin"})
        self.assertEqual(entries[1]["details"], "epsilon_cap=1")
        self.assertIn("epsilon=12 delta=1e-06", entries[2]["details"])
        self.assertRegex(entries[6]["details"], r"^rows=\d+$")
        self.assertEqual([e["seq"] for e in entries], list(range(before + 1, before + 9)))
        verified = self.dpqd.ctl("audit", "verify", "--admin-log")
        self.assertTrue(verified["ok"])
        self.assertEqual(verified["entries"], before + 8)
        self.assertIn("admin log OK", self.dpqd.ctl_text("audit", "verify", "--admin-log"))
        self.assert_error(self.dpqd.ctl("audit", check=False), "INVALID_ARGUMENT")

    def test_whoami_for_anyone_and_status_for_the_admin(self):
        me = self.dpqd.ctl("whoami", token=self.alice)
        self.assertEqual(me, {"name": "alice", "role": "analyst", "datasets": ["slid"]})
        self.assertEqual(self.dpqd.ctl("whoami")["role"], "admin")
        self.count(self.alice)
        status = self.dpqd.ctl("status")
        n = len([f for f in os.listdir(os.path.join(harness.REPO_ROOT, "migrations"))
                 if f.endswith(".sql")])
        self.assertEqual(status["schema_version"], n)
        self.assertEqual(status["database"], "reachable")
        self.assertRegex(status["server_version"], r"^\d+\.\d+\.\d+$")
        [slid] = status["datasets"]
        self.assertEqual(slid["dataset"], "slid")
        self.assertAlmostEqual(slid["epsilon_spent"], 0.1, delta=1e-12)
        self.assertEqual(slid["epsilon_total"], 10)
        self.assert_error(self.dpqd.ctl("status", token=self.alice, check=False), "PERMISSION_DENIED")
        text = self.dpqd.ctl_text("status")
        self.assertIn("database:  reachable, schema version %d" % n, text)
        self.assertIn("slid", text)
        self.assertIn("99%", text)  # 9.9 of 10 left


if __name__ == "__main__":
    unittest.main()
