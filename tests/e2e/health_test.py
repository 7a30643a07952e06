#!/usr/bin/python3
"""End-to-end: gRPC health tells the truth.

dpqd answers SERVING while its database answers and has the schema version this binary knows.
The test stops dpqd's embedded PostgreSQL under it and watches the standard grpc.health.v1 Check
turn NOT_SERVING, then starts PostgreSQL again and watches it turn SERVING, and a query succeed.
"""

import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

try:
    import grpc  # noqa: E402
    from grpc_health.v1 import health_pb2, health_pb2_grpc  # noqa: E402
except ImportError:  # setUpClass reports it (harness.require_grpc_stubs)
    pass

PG_CTL = "/usr/lib/postgresql/15/bin/pg_ctl"
CHECK_SECONDS = 0.2  # dpqd's --health-check-seconds here
WAIT_S = 30.0        # the status must change within this (150 checks)


class HealthTest(harness.DpqdTestCase):

    @classmethod
    def setUpClass(cls):
        harness.require_grpc_stubs()

    def pg_ctl(self, dpqd, *args):
        argv = [PG_CTL, "-D", os.path.join(dpqd.data_dir, "pg"), "-w", "-t", "60"] + list(args)
        if os.geteuid() == 0:  # the embedded cluster runs as postgres when dpqd runs as root
            argv = ["runuser", "-u", "postgres", "--"] + argv
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=90)
        self.assertEqual(proc.returncode, 0, proc.stderr.decode(errors="replace"))

    @staticmethod
    def psql(dpqd, sql):
        subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h",
                        os.path.join(dpqd.data_dir, "run"), "-p", "5432", "-U", "postgres", "-d",
                        "dpq", "-c", sql], check=True, stdin=subprocess.DEVNULL, capture_output=True,
                       timeout=30)

    def status(self, stub, service=""):
        try:
            response = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
        except grpc.RpcError as e:
            return e.code().name
        return health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)

    def wait_for(self, stub, want):
        deadline = time.monotonic() + WAIT_S
        seen = None
        while time.monotonic() < deadline:
            seen = self.status(stub)
            if seen == want:
                return
            time.sleep(0.1)
        self.fail("health stayed %s for %.0f s, expected %s" % (seen, WAIT_S, want))

    def test_not_serving_while_the_database_is_down_and_serving_again_after(self):
        dpqd = self.new_dpqd(start=False)
        dpqd.extra_args = ["--health-check-seconds", str(CHECK_SECONDS)]
        dpqd.start()
        self.create_slid(dpqd)
        dpqd.ctl("budget", "set", "slid", "--epsilon", 1)
        with grpc.insecure_channel(dpqd.address) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            self.assertEqual(self.status(stub), "SERVING")
            self.assertEqual(self.status(stub, "dpq.v1.AnalystService"), "SERVING")

            self.pg_ctl(dpqd, "stop", "-m", "fast")
            self.wait_for(stub, "NOT_SERVING")
            self.assertEqual(self.status(stub, "dpq.v1.AnalystService"), "NOT_SERVING")
            self.assertIn("health: NOT_SERVING (database unreachable", dpqd.log_text())

            self.pg_ctl(dpqd, "start", "-l", os.path.join(dpqd.data_dir, "log", "postgres.log"))
            self.wait_for(stub, "SERVING")

            # A database migrated past this binary (another dpqd upgraded it): NOT_SERVING too.
            self.psql(dpqd, "INSERT INTO schema_migrations (version, name) VALUES (999, 'x.sql')")
            self.wait_for(stub, "NOT_SERVING")
            self.assertIn("database schema version 999, this dpqd needs", dpqd.log_text())
            self.psql(dpqd, "DELETE FROM schema_migrations WHERE version = 999")
            self.wait_for(stub, "SERVING")
        result = dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", 0.1)
        self.assertEqual(len(result["rows"]), 1)

    def test_health_check_interval_is_validated(self):
        proc = subprocess.run([harness.dpqd_path(), "--health-check-seconds", "0"],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("--health-check-seconds must lie in (0, 3600]", proc.stderr + proc.stdout)


if __name__ == "__main__":
    unittest.main()
