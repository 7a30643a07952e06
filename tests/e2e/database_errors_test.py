#!/usr/bin/python3
"""End-to-end: database failures as analysts and admins see them, and retries that charge once.

dpqd runs on --database-url over a PostgreSQL cluster this test runs itself (tests/e2e/pg_cluster.py,
TCP on 127.0.0.1, as operators configure it), driven by the dpq Python package and the real dpqctl:

* PostgreSQL stopped: every call fails UNAVAILABLE with a fixed message saying to retry with the
  same request id, through the Python package (whose default policy tries 3 times) and dpqctl;
  dpqd's log line of the call holds the driver's text and the request id. After the start, the
  same ids are answered and charged once.
* PostgreSQL restarted `-m fast`, then `-m immediate`, under load.
* pg_terminate_backend of dpqd's sessions in a loop (bounded in rounds and time) under load: the
  sessions die during debits, scans, lookups and while idle.

Under load every client retries a failed query with the SAME request id until it is answered (the
retry contract, README "Failures and retries"). Afterwards, for each scenario:
  * every code an analyst saw is UNAVAILABLE or RESOURCE_EXHAUSTED (DEADLINE_EXCEEDED only where
    the call's deadline really passed), never INTERNAL;
  * no message holds the database's host or port, a SQLSTATE, "pqxx", "libpq", "connection to
    server" or other driver text;
  * every request id has at most one audit row; every answered one has exactly one, with the
    released value; the ledger equals the audit rows' sum; `dpqctl audit verify` is ok.
Bounded: every loop has a count and a time limit; the file runs in about a minute and a half.
"""
import collections
import os
import random
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import pg_cluster  # noqa: E402

harness.require_grpc_stubs()
import dpq  # noqa: E402  pylint: disable=wrong-import-position

EPS_UNIT = 1e-12
ALLOWED_CODES = {"UNAVAILABLE", "RESOURCE_EXHAUSTED", "DEADLINE_EXCEEDED"}
RPC_TIMEOUT_S = 8.0


def _units(eps):
    return int(round(eps / EPS_UNIT))


def _log(msg):
    sys.stderr.write("[database-errors] %s\n" % msg)
    sys.stderr.flush()


class Outcomes:
    """Per request id: the query asked, the final answer (or refusal), and every error seen."""

    def __init__(self):
        self.lock = threading.Lock()
        self.queries = {}
        self.answers = {}
        self.refused = set()
        self.errors = []  # (request id, code, message, seconds the call took)
        self.answered = 0

    def error(self, rid, err, seconds):
        with self.lock:
            self.errors.append((rid, err.code, err.message, seconds))

    def codes(self):
        with self.lock:
            return collections.Counter(code for _, code, _, _ in self.errors)


def ask_until_answered(client, dataset, rid, query, outcomes, give_up_at):
    """Sends `query` with request id `rid` until it is answered or refused, always with the same
    id; returns False if `give_up_at` (monotonic) passed first."""
    with outcomes.lock:
        outcomes.queries[rid] = query
    pause = 0.05
    while True:
        started = time.monotonic()
        try:
            answer = client.query(dataset, request_id=rid, **query)
        except dpq.DpqError as err:
            outcomes.error(rid, err, time.monotonic() - started)
            if err.code == "RESOURCE_EXHAUSTED":
                with outcomes.lock:
                    outcomes.refused.add(rid)
                return True
            if err.code not in ("UNAVAILABLE", "DEADLINE_EXCEEDED") or time.monotonic() > give_up_at:
                return False
            time.sleep(pause * random.uniform(0.5, 1.0))
            pause = min(1.0, pause * 2)
            continue
        with outcomes.lock:
            outcomes.answers[rid] = answer
            outcomes.answered += 1
        return True


class DatabaseErrorsTest(harness.DpqdTestCase):

    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise unittest.SkipTest("runs its own PostgreSQL as the postgres user (needs root)")
        root = cls.make_class_temp_dir()
        cls.cluster = pg_cluster.TestCluster(root, tcp=True)
        cls.addClassCleanup(cls.cluster.stop)
        cls.cluster.init_and_start()
        os.makedirs(os.path.join(root, "logs"))
        cls.dpqd = harness.Dpqd(os.path.join(root, "dpqd-data"), os.path.join(root, "logs"),
                                extra_args=["--database-url", cls.cluster.url,
                                            "--health-check-seconds", "0.5"])
        cls.addClassCleanup(harness._stop_dpqd, cls.dpqd)  # pylint: disable=protected-access
        cls.dpqd.start()
        cls.alice = cls.create_analyst(cls.dpqd, "alice")
        # What no analyst message may hold: where the database is, and anything of the driver.
        cls.forbidden = ["127.0.0.1", str(cls.cluster.port), cls.cluster.socket_dir, "sqlstate",
                         "pqxx", "libpq", "connection to server", "server closed", "terminating",
                         "fatal", "connection refused", "could not connect", "administrator",
                         "57p0", "08006", "08001", "25p02", "40001", "postgres"]

    def new_dataset(self, name, epsilon=1000.0):
        self.create_slid(self.dpqd, name=name)
        self.dpqd.ctl("budget", "set", name, "--epsilon", epsilon, "--delta", 1e-6)
        self.dpqd.ctl("grant", "alice", name)

    def analyst(self, **kwargs):
        kwargs.setdefault("retry", None)  # raw codes: the test retries itself, with the same id
        client = dpq.Client(self.dpqd.address, self.alice, timeout=RPC_TIMEOUT_S, **kwargs)
        self.addCleanup(client.close)
        return client

    def wait_until_serving(self):
        probe = self.analyst()
        harness.wait_until(lambda: _answers(probe.whoami), 60, "dpqd answering again")

    # -- the checks of the module docstring -----------------------------------------------

    def assert_analyst_message(self, code, message, seconds=None):
        self.assertIn(code, ALLOWED_CODES, message)
        if code == "DEADLINE_EXCEEDED" and seconds is not None:
            self.assertGreaterEqual(seconds, RPC_TIMEOUT_S * 0.9, "a deadline that did not pass")
        for word in self.forbidden:
            self.assertNotIn(word, message.lower(), "an analyst saw database internals: %r" % message)

    def check(self, dataset, outcomes):
        for rid, code, message, seconds in outcomes.errors:
            self.assert_analyst_message(code, message, seconds)
            if code == "UNAVAILABLE":
                self.assertIn("retry with the same request", message)
        _log("messages seen: %s" % sorted({m.replace(rid, "<id>") for rid, _, m, _ in outcomes.errors}))
        # dpqd answered no call INTERNAL (its log has one line per call, analysts' and admins').
        internal = [l for l in self.dpqd.log_text().splitlines() if '"status":"INTERNAL"' in l]
        self.assertFalse(internal, internal[:3])
        unresolved = set(outcomes.queries) - set(outcomes.answers) - outcomes.refused
        self.assertFalse(unresolved, "ids never answered: %s" % sorted(unresolved)[:10])
        entries = self.dpqd.ctl("audit", dataset)["entries"]
        per_id = collections.Counter(e["request_id"] for e in entries)
        self.assertFalse({r: n for r, n in per_id.items() if n > 1}, "ids charged twice")
        by_id = {e["request_id"]: e for e in entries}
        for rid, answer in outcomes.answers.items():
            self.assertIn(rid, by_id, "answered %s has no audit row" % rid)
            self.assertEqual(by_id[rid]["value"], answer.value, rid)
            self.assertEqual(_units(by_id[rid]["epsilon"]), _units(outcomes.queries[rid]["epsilon"]))
        for rid in outcomes.refused:
            self.assertNotIn(rid, by_id)
        self.assertEqual(set(by_id), set(outcomes.answers), "audit rows nobody was answered")
        budget = self.dpqd.ctl("budget", "show", dataset)
        self.assertEqual(_units(budget["epsilon_spent"]), sum(_units(e["epsilon"]) for e in entries))
        verify = self.dpqd.ctl("audit", "verify", dataset)
        self.assertTrue(verify["ok"], dict(verify))

    def run_load(self, dataset, tag, threads, disturb):
        """`threads` clients asking fresh queries, each until answered with the same id, while
        `disturb(outcomes)` runs in this thread and until they answered once more each after it.
        Returns the Outcomes."""
        outcomes = Outcomes()
        stop = threading.Event()
        rng = random.Random(20261205)

        def client_loop(index, seed):
            client = self.analyst()
            r = random.Random(seed)
            for n in range(1000):
                if stop.is_set():
                    return
                eps = round(r.uniform(0.01, 0.1), 9) + index * 1e-10  # new questions: no cache hit
                query = r.choice([{"aggregate": "count", "epsilon": eps},
                                  {"aggregate": "sum", "column": "wages", "epsilon": eps},
                                  {"aggregate": "histogram", "column": "age", "epsilon": eps,
                                   "bins": list(range(0, 121, 10)), "group_by": ["sex"],
                                   "keys": ["Female", "Male"]}])
                ask_until_answered(client, dataset, "%s-t%d-q%03d" % (tag, index, n), query,
                                   outcomes, time.monotonic() + 40)

        workers = [threading.Thread(target=client_loop, args=(i, rng.random()), daemon=True)
                   for i in range(threads)]
        for w in workers:
            w.start()
        try:
            harness.wait_until(lambda: outcomes.answered >= threads, 30, "first answers")
            disturb(outcomes)
            progress = outcomes.answered
            harness.wait_until(lambda: outcomes.answered >= progress + threads, 60,
                               "answers after the disturbance")
        finally:
            stop.set()
            for w in workers:
                w.join(60)
        self.assertFalse([w for w in workers if w.is_alive()], "client threads hang")
        _log("%s: %d ids, %d answered, %d refused; errors %s" % (
            tag, len(outcomes.queries), len(outcomes.answers), len(outcomes.refused),
            dict(outcomes.codes())))
        return outcomes

    # -- scenarios ------------------------------------------------------------------------

    def test_postgres_stopped_then_started(self):
        self.new_dataset("stopped")
        alice = self.analyst()
        alice.query("stopped", "count", 0.05, request_id="stopped-0")
        self.cluster.stop("fast")
        try:
            self.assert_stopped_database_is_unavailable_for_everyone()
        finally:
            self.cluster.start()
        self.wait_until_serving()
        outcomes = Outcomes()
        for rid, eps in (("stopped-1", 0.11), ("stopped-2", 0.12), ("stopped-3", 0.13)):
            self.assertTrue(ask_until_answered(alice, "stopped", rid,
                                               {"aggregate": "count", "epsilon": eps}, outcomes,
                                               time.monotonic() + 30))
        outcomes.queries["stopped-0"] = {"aggregate": "count", "epsilon": 0.05}
        outcomes.answers["stopped-0"] = alice.query("stopped", "count", 0.05, request_id="stopped-0")
        self.assertTrue(outcomes.answers["stopped-0"].replayed)
        self.check("stopped", outcomes)

    def assert_stopped_database_is_unavailable_for_everyone(self):
        alice = self.analyst()
        with self.assertRaises(dpq.Unavailable) as cm:
            alice.query("stopped", "count", 0.11, request_id="stopped-1")
        self.assert_analyst_message("UNAVAILABLE", cm.exception.message)
        self.assertIn("retry with the same request id", cm.exception.message)
        with self.assertRaises(dpq.Unavailable) as cm:
            alice.budget("stopped")
        self.assert_analyst_message("UNAVAILABLE", cm.exception.message)
        # The default client repeats UNAVAILABLE (3 attempts) with the id it was given.
        patient = self.analyst(retry=dpq.RetryPolicy())
        with self.assertRaises(dpq.Unavailable) as cm:
            patient.query("stopped", "count", 0.13, request_id="stopped-3")
        self.assertEqual(cm.exception.attempts, 3)
        self.assert_analyst_message("UNAVAILABLE", cm.exception.message)
        # The real dpqctl, as the analyst.
        out = self.dpqd.ctl("query", "stopped", "--aggregate", "count", "--epsilon", 0.12,
                            "--request-id", "stopped-2", token=self.alice, check=False)
        self.assert_error(out, "UNAVAILABLE", "retry with the same request id")
        self.assert_analyst_message(out.error_code, out.error_message)
        # An admin's token cannot be checked either (the principals are in the database), so the
        # admin is worded as any caller; admins see the detail of failures after authentication
        # (server/api/status_mapping_test.cc).
        shown = self.dpqd.ctl("budget", "show", "stopped", check=False)
        self.assert_error(shown, "UNAVAILABLE", "retry with the same request id")
        self.assert_analyst_message(shown.error_code, shown.error_message)
        # dpqd's log line of the analyst's call holds the driver's text, for the operator.
        lines = [l for l in self.dpqd.log_text().splitlines() if '"rpc"' in l and "stopped-1" in l]
        self.assertTrue(lines, "no log line names request stopped-1")
        self.assertIn('"error":', lines[-1])
        self.assertIn("127.0.0.1", lines[-1])

    def test_postgres_restarted_fast_and_immediate_under_load(self):
        self.new_dataset("restarted")

        def restart(outcomes):
            for mode in ("fast", "immediate"):
                progress = outcomes.answered
                harness.wait_until(lambda: outcomes.answered >= progress + 5, 30, "answers")
                time.sleep(random.uniform(0.0, 0.3))
                started = time.monotonic()
                self.cluster.restart(mode)
                _log("pg_ctl restart -m %s took %.2f s" % (mode, time.monotonic() - started))

        outcomes = self.run_load("restarted", "restart", threads=6, disturb=restart)
        self.assertGreater(outcomes.codes()["UNAVAILABLE"], 0, "no client noticed the restarts")
        self.check("restarted", outcomes)

    def test_sessions_terminated_during_debits_and_scans(self):
        self.new_dataset("terminated")
        log_before = len(self.dpqd.log_text())

        def terminate(outcomes):
            rounds, signalled, until = 0, 0, time.monotonic() + 12
            while rounds < 80 and time.monotonic() < until:
                signalled += self.cluster.terminate_client_backends()
                rounds += 1
                time.sleep(random.uniform(0.05, 0.15))
            _log("%d rounds of pg_terminate_backend, %d sessions signalled" % (rounds, signalled))

        outcomes = self.run_load("terminated", "kill", threads=8, disturb=terminate)
        self.assertGreater(outcomes.codes()["UNAVAILABLE"], 0, "no client noticed a terminated session")
        # Where the sessions died, from dpqd's log: debits (their rpc line's error) and scans
        # after the charge (charged, not answered).
        log = self.dpqd.log_text()[log_before:]
        debits = log.count('"error":"debit')
        scans = log.count("charged, not answered")
        _log("failed during a debit: %d, during a scan after the charge: %d" % (debits, scans))
        self.assertGreater(debits, 0, "no session died during a debit: terminate more often")
        self.assertGreater(scans, 0, "no session died during a scan: terminate more often")
        self.check("terminated", outcomes)


def _answers(call):
    try:
        call()
        return True
    except dpq.DpqError:
        return False


if __name__ == "__main__":
    unittest.main(verbosity=2)
