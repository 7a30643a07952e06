#!/usr/bin/python3
"""End-to-end: structured logs, graceful shutdown and `dpqd --check-config`.

* Every line dpqd writes is one JSON object with `time`, `level` and `msg` (json is the default when
  stderr is not a terminal); each RPC is one line with `rpc`, `status`, `duration_ms` and, when
  known, `analyst`, `dataset` and `request_id`; no line holds a token. `--log-format=text` and
  `--log-level` change both.
* SIGTERM during a query: dpqd stops accepting, the query in flight finishes (its debit, its scan,
  its stored answer), dpqd exits 0, and after a restart the audit row and the answer are there.
* SIGTERM when idle: dpqd exits within a second (on --database-url) or two (embedded PostgreSQL).
* `--check-config` checks flags, TLS files and the database, and exits without serving.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

try:
    import grpc  # noqa: E402
    from dpq.v1 import dpq_pb2, dpq_pb2_grpc  # noqa: E402
except ImportError:  # setUpClass reports it (harness.require_grpc_stubs)
    pass

RPC_KEYS = {"time", "level", "msg", "rpc", "status", "duration_ms"}


def _metadata(token):
    return (("authorization", "Bearer " + token),)


class LogsTest(harness.DpqdTestCase):

    @classmethod
    def setUpClass(cls):
        harness.require_grpc_stubs()
        cls.dpqd = cls.new_class_dpqd()
        cls.create_slid(cls.dpqd)
        cls.dpqd.ctl("budget", "set", "slid", "--epsilon", 100, "--delta", 1e-6)
        cls.alice = cls.create_analyst(cls.dpqd, "alice")
        cls.dpqd.ctl("grant", "alice", "slid")
        cls.dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", 0.1,
                     "--request-id", "logged-1", token=cls.alice)
        cls.dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", -1, token=cls.alice,
                     check=False)
        with grpc.insecure_channel(cls.dpqd.address) as channel:
            stub = dpq_pb2_grpc.AnalystServiceStub(channel)
            # A hostile dataset name: quotes, a newline, a NUL; the line must stay one JSON object.
            try:
                stub.GetBudget(dpq_pb2.GetBudgetRequest(dataset='x"\n\x00{'),
                               metadata=_metadata(cls.alice), timeout=10)
            except grpc.RpcError:
                pass
        cls.lines = [l for l in cls.dpqd.log_text().split("\n") if l]
        cls.records = [json.loads(l) for l in cls.lines]

    def rpc_records(self, method):
        return [r for r in self.records if r.get("msg") == "rpc" and r.get("rpc") == method]

    def test_every_line_is_one_json_object_with_time_level_and_msg(self):
        self.assertGreater(len(self.records), 10)
        for r in self.records:
            self.assertIsInstance(r, dict)
            self.assertLessEqual({"time", "level", "msg"}, set(r), r)
            self.assertIn(r["level"], ("debug", "info", "warning", "error"), r)
            self.assertRegex(r["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")

    def test_each_query_is_one_line_with_its_analyst_dataset_request_id_status_and_duration(self):
        queries = self.rpc_records("dpq.v1.AnalystService/Query")
        self.assertEqual(len(queries), 2, queries)
        ok = [q for q in queries if q.get("request_id") == "logged-1"]
        self.assertEqual(len(ok), 1, queries)
        self.assertLessEqual(RPC_KEYS | {"analyst", "dataset", "request_id"}, set(ok[0]))
        self.assertEqual((ok[0]["analyst"], ok[0]["dataset"], ok[0]["status"]), ("alice", "slid", "OK"))
        self.assertIsInstance(ok[0]["duration_ms"], (int, float))
        self.assertGreaterEqual(ok[0]["duration_ms"], 0)
        refused = [q for q in queries if q["status"] != "OK"]
        self.assertEqual([q["status"] for q in refused], ["INVALID_ARGUMENT"])

    def test_admin_calls_name_the_admin_and_unauthenticated_calls_no_one(self):
        grants = self.rpc_records("dpq.v1.AdminService/Grant")
        self.assertEqual([(g["analyst"], g["status"]) for g in grants], [("admin", "OK")])
        hostile = self.rpc_records("dpq.v1.AnalystService/GetBudget")
        self.assertEqual(len(hostile), 1)
        self.assertEqual(hostile[0]["dataset"], 'x"\n\x00{')
        self.assertEqual(hostile[0]["status"], "INVALID_ARGUMENT")

    def test_no_line_holds_a_token(self):
        text = "\n".join(self.lines)
        for token in (self.alice, self.dpqd.admin_token):
            self.assertNotIn(token, text)


class LogOptionsTest(harness.DpqdTestCase):

    def test_text_format_at_warning_level_drops_info_lines(self):
        proc = subprocess.run([harness.dpqd_path(), "--log-format", "text", "--log-level", "verbose"],
                              capture_output=True, timeout=30)
        self.assertEqual(proc.returncode, 1)
        self.assertIn(b"--log-level must be debug, info, warning or error", proc.stderr)
        # harness.start waits for the "dpqd listening on" info line: text format at info level first,
        dpqd = self.new_dpqd(start=False)
        dpqd.extra_args = ["--log-format", "text"]
        dpqd.start()
        dpqd.ctl("whoami")
        lines = [l for l in dpqd.log_text().split("\n") if l]
        self.assertTrue(all(not l.startswith("{") for l in lines), lines[:3])
        self.assertTrue(any(" INFO rpc rpc=dpq.v1.AnalystService/WhoAmI analyst=admin status=OK "
                            in l for l in lines), lines)
        # then at warning level: the same call writes no line.
        dpqd.stop()
        dpqd.extra_args = ["--log-format", "text", "--log-level", "warning"]
        dpqd.proc = None
        port = harness.free_port()
        proc = subprocess.Popen([harness.dpqd_path(), "--data-dir", dpqd.data_dir,
                                 "--listen", "127.0.0.1:%d" % port,
                                 "--metrics-listen", "127.0.0.1:%d" % harness.free_port(),
                                 "--log-format", "text", "--log-level", "warning"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                env=dict(os.environ, DPQ_ADMIN_TOKEN=dpqd.admin_token))
        harness.wait_until(lambda: harness.Dpqd._port_open(port), 60, "dpqd at warning level")  # pylint: disable=protected-access
        whoami = subprocess.run([harness.dpqctl_path(), "--server", "127.0.0.1:%d" % port, "--token",
                                 dpqd.admin_token, "whoami"], capture_output=True, timeout=30)
        self.assertEqual(whoami.returncode, 0, whoami.stderr)
        proc.send_signal(signal.SIGTERM)
        out = proc.communicate(timeout=60)[0].decode()
        self.assertEqual(proc.returncode, 0, out)
        self.assertNotIn(" INFO ", out)


class ShutdownTest(harness.DpqdTestCase):

    def test_sigterm_lets_the_query_in_flight_finish_and_exits_zero(self):
        dpqd = self.new_dpqd(start=False)
        dpqd.extra_args += ["--shutdown-grace-seconds", "120"]
        dpqd.start()
        self.create_slid(dpqd)
        for _ in range(2):  # 3 x 7425 rows: each of the batch's scans takes milliseconds
            dpqd.ctl("dataset", "load", "slid", "--csv", harness.data_file("slid.csv"))
        dpqd.ctl("budget", "set", "slid", "--epsilon", 100, "--delta", 1e-6)
        token = self.create_analyst(dpqd, "alice")
        dpqd.ctl("grant", "alice", "slid")
        # 1000 scans, charged once before the first (pay before you look): SIGTERM comes right
        # after the debit, while the scans run.
        batch = dpq_pb2.QueryBatchRequest(
            dataset="slid", request_id="drained-1",
            queries=[dpq_pb2.QueryRequest(aggregate=dpq_pb2.AGGREGATE_SUM, column="wages",
                                          epsilon=0.001, lower=0, upper=100 - i * 1e-3)
                     for i in range(1000)])
        outcome = {}
        channel = grpc.insecure_channel(dpqd.address)
        self.addCleanup(channel.close)
        stub = dpq_pb2_grpc.AnalystServiceStub(channel)

        def run():
            try:
                outcome["answer"] = stub.QueryBatch(batch, metadata=_metadata(token), timeout=300)
            except grpc.RpcError as e:
                outcome["answer"] = e

        started = time.monotonic()
        thread = threading.Thread(target=run)
        thread.start()
        dpqd.wait_for_debits(0, "the batch's debit")
        answered_before_sigterm = '"rpc":"dpq.v1.AnalystService/QueryBatch"' in dpqd.log_text()
        dpqd.proc.send_signal(signal.SIGTERM)
        thread.join(timeout=300)
        elapsed = time.monotonic() - started
        code = dpqd.proc.wait(timeout=120)
        log = dpqd.log_text()
        self.assertEqual(code, 0, log[-3000:])
        self.assertIn("draining", log)
        answer = outcome["answer"]
        self.assertIsInstance(answer, dpq_pb2.QueryBatchResponse,
                              "the batch in flight was cut off: %r (after %.1f s)" % (answer, elapsed))
        self.assertEqual(len(answer.answers), 1000)
        self.assertFalse(answered_before_sigterm, "the batch ended before SIGTERM: make it longer")
        # Its log line came before "dpqd stopped": the answer left before the process ended.
        self.assertLess(log.index('"rpc":"dpq.v1.AnalystService/QueryBatch"'), log.index("dpqd stopped"))
        dpqd.proc = None
        dpqd._close_log()  # pylint: disable=protected-access
        dpqd.start()
        entries = dpqd.ctl("audit", "slid")["entries"]
        self.assertEqual([e["request_id"] for e in entries], ["drained-1"])
        self.assertTrue(dpqd.ctl("audit", "verify", "slid")["ok"])
        with grpc.insecure_channel(dpqd.address) as again:
            replay = dpq_pb2_grpc.AnalystServiceStub(again).QueryBatch(
                batch, metadata=_metadata(token), timeout=120)
        self.assertTrue(replay.replayed)
        self.assertEqual([a.value for a in replay.answers], [a.value for a in answer.answers])


    def sigterm_exit_seconds(self, dpqd):
        """Sends SIGTERM to an idle `dpqd` and returns how long it took to exit (exit code 0)."""
        started = time.monotonic()
        dpqd.proc.send_signal(signal.SIGTERM)
        code = dpqd.proc.wait(timeout=30)
        elapsed = time.monotonic() - started
        self.assertEqual(code, 0, dpqd.log_text()[-2000:])
        self.assertIn("dpqd stopped", dpqd.log_text())
        dpqd.proc = None
        dpqd._close_log()  # pylint: disable=protected-access
        return elapsed

    def test_an_idle_dpqd_exits_within_a_second_or_two_of_sigterm(self):
        """Nothing in flight, so nothing to drain: dpqd must not sit out its background waits. The
        metrics server's accept loop used to hold an idle dpqd for up to 2 s (civetweb polls its
        port with a fixed 2 s timeout); the health watcher and the audit verifier wait on a
        notification. Measured for a dpqd on --database-url (nothing else to stop) and for the
        embedded one, whose exit includes PostgreSQL's fast shutdown."""
        embedded = self.new_dpqd()
        url = "postgresql:///dpq?host=%s&port=5432&user=postgres" % os.path.join(embedded.data_dir, "run")
        root = self.make_temp_dir()
        os.makedirs(os.path.join(root, "logs"))
        external = harness.Dpqd(os.path.join(root, "data"), os.path.join(root, "logs"),
                                extra_args=["--database-url", url])
        self.addCleanup(harness._stop_dpqd, external)  # pylint: disable=protected-access
        external.start()
        for dpqd in (embedded, external):  # both have served a call and a scrape
            dpqd.ctl("whoami")
            dpqd.scrape()
        time.sleep(2.5)  # idle: past the first health check and well into a metrics poll
        on_url = self.sigterm_exit_seconds(external)
        alone = self.sigterm_exit_seconds(embedded)
        sys.stderr.write("[shutdown] idle dpqd exits after SIGTERM: on --database-url %.2f s, "
                         "embedded PostgreSQL %.2f s\n" % (on_url, alone))
        self.assertLess(on_url, 1.0)
        self.assertLess(alone, 2.5)


class CheckConfigTest(harness.DpqdTestCase):

    def check(self, *flags):
        proc = subprocess.run([harness.dpqd_path(), "--check-config"] + list(flags),
                              capture_output=True, timeout=60, env=dict(os.environ))
        return proc.returncode, proc.stdout.decode(), proc.stderr.decode()

    def openssl(self, *args):
        subprocess.run(["openssl"] + list(args), check=True, capture_output=True, timeout=60)

    def test_flags_tls_files_and_database_are_checked_without_serving(self):
        code, out, _ = self.check("--data-dir", os.path.join(self.make_temp_dir(), "d"))
        self.assertEqual(code, 0, out)
        self.assertIn("ok     flags", out)
        self.assertIn("all checks passed", out)

        code, out, _ = self.check("--max-load-rows", "-5")
        self.assertEqual(code, 1)
        self.assertIn("FAILED", out)
        self.assertIn("--max-load-rows", out)

        tmp = self.make_temp_dir()
        cert, key, other_key = (os.path.join(tmp, n) for n in ("c.pem", "k.pem", "k2.pem"))
        self.openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                     "-days", "1", "-subj", "/CN=localhost")
        self.openssl("genrsa", "-out", other_key, "2048")
        code, out, _ = self.check("--tls-cert", cert, "--tls-key", key)
        self.assertEqual(code, 0, out)
        self.assertIn("ok     TLS certificate and key", out)
        code, out, _ = self.check("--tls-cert", cert, "--tls-key", other_key)
        self.assertEqual(code, 1, out)
        self.assertIn("is not the private key of the certificate", out)

        dpqd = self.new_dpqd()
        url = "postgresql:///dpq?host=%s&port=5432&user=postgres" % os.path.join(dpqd.data_dir, "run")
        code, out, _ = self.check("--database-url", url)
        self.assertEqual(code, 0, out)
        self.assertRegex(out, r"database reachable, schema version (\d+) \(this dpqd: \1\)")
        code, out, _ = self.check("--database-url", "postgresql:///nodb?host=/nonexistent")
        self.assertEqual(code, 1, out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
