#!/usr/bin/python3
"""End-to-end authorization matrix: every RPC of every dpq.v1 service, generated from the
proto's service descriptors, times every kind of caller, each with its expected gRPC code.

Callers: no token, malformed metadata, an unknown token, a revoked analyst's token, a token
rotated away, an analyst without a grant on the dataset, an analyst with one, and the admin.
A method missing from REQUESTS below fails the test, so a new RPC cannot be added without deciding
who may call it. Each call carries a valid request (for the admin, one that succeeds), so the code
is decided by authorization alone; afterwards every ledger is as the successful calls left it and
no refused call wrote an audit row.
"""

import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

try:
    import grpc  # noqa: E402
    from dpq.v1 import collection_pb2, dpq_pb2, dpq_pb2_grpc, training_pb2  # noqa: E402
except ImportError:  # setUpClass reports it (harness.require_grpc_stubs)
    pass

DATASET = "slid"
SQL = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.01) COUNT(*), SUM(age) FROM %s"
       % DATASET)
UNAUTHENTICATED_KINDS = ("no token", "malformed", "unknown token", "revoked", "rotated away")
CALLERS = UNAUTHENTICATED_KINDS + ("analyst without grant", "analyst with grant", "admin")

# Who may call what: "admin" (AdminService), "granted" (needs a grant on DATASET: an ungranted
# analyst gets PERMISSION_DENIED), "any" (any valid token).
ACCESS = {
    "AnalystService": {"WhoAmI": "any", "ListDatasets": "any", "Query": "granted",
                       "QueryBatch": "granted", "Plan": "granted", "GetDataset": "granted",
                       "GetBudget": "granted", "ExecuteSql": "granted", "ExplainSql": "granted"},
    "AccountingService": {"Price": "any", "Calibrate": "any"},
    # Local-DP collections: creating one is an admin action; any valid token may submit reports
    # (clients are not analysts of a dataset) and read the definitions and the (free) estimates.
    "CollectionService": {"ListCollections": "any", "GetCollection": "any", "SubmitReport": "any",
                          "Estimate": "any"},
    # Training: a granted analyst on its own runs (RUN is the granted analyst's), the admin on any.
    "TrainingService": {"StartRun": "granted", "ReportSteps": "granted", "GetRun": "granted",
                        "ListRuns": "granted"},
}
COLLECTION = "matrix_survey"
RUN = "granted_run"
SHARD_PASSWORD = "matrix-shard-pw"


class AuthorizationMatrixTest(harness.DpqdTestCase):

    @classmethod
    def setUpClass(cls):
        harness.require_grpc_stubs()
        cls.dpqd = cls.new_class_dpqd()
        cls.create_slid(cls.dpqd)
        cls.dpqd.ctl("budget", "set", DATASET, "--epsilon", 1000, "--delta", 1e-3)
        cls.tokens = {"admin": harness.ADMIN_TOKEN, "unknown token": "dpq_" + "0" * 64}
        cls.tokens["analyst with grant"] = cls.create_analyst(cls.dpqd, "granted")
        cls.dpqd.ctl("grant", "granted", DATASET)
        cls.tokens["analyst without grant"] = cls.create_analyst(cls.dpqd, "ungranted")
        cls.tokens["revoked"] = cls.create_analyst(cls.dpqd, "revoked_one")
        cls.dpqd.ctl("grant", "revoked_one", DATASET)
        cls.dpqd.ctl("analyst", "revoke", "revoked_one")
        cls.tokens["rotated away"] = cls.create_analyst(cls.dpqd, "rotated_one")
        cls.dpqd.ctl("grant", "rotated_one", DATASET)
        cls.dpqd.ctl("token", "rotate", "rotated_one")
        cls.dpqd.ctl("collection", "create", COLLECTION, "--domain", "a,b,c", "--epsilon", 1,
                     "--mechanism", "krr", "--reports-per-client", 1000)
        cls.dpqd.ctl("training", "start", DATASET, "--run", RUN, "--sampling-rate", 0.01,
                     "--noise-multiplier", 1.1, "--delta", 1e-6,
                     token=cls.tokens["analyst with grant"])
        cls.channel = grpc.insecure_channel(cls.dpqd.address)
        cls.shard_url = cls.make_self_shard()
        cls.victims = 0
        cls.tiny_csv = os.path.join(cls.make_class_temp_dir(), "tiny.csv")
        with open(cls.tiny_csv, "w") as f:
            f.write("person_id,x\n1,2.5\n2,3.5\n")

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()

    @classmethod
    def make_self_shard(cls):
        """The URL of a shard the admin's AddShard can register: the embedded cluster's own
        database `postgres`, with a role that logs in by password (as a shard's must)."""
        run = os.path.join(cls.dpqd.data_dir, "run")
        hba = os.path.join(cls.dpqd.data_dir, "pg", "pg_hba.conf")
        with open(hba) as f:
            rules = f.read()
        with open(hba, "w") as f:
            f.write("local all matrix_shard scram-sha-256\n" + rules)
        sql = ("CREATE ROLE matrix_shard LOGIN PASSWORD '%s'; "
               "GRANT CREATE ON DATABASE postgres TO matrix_shard; SELECT pg_reload_conf()"
               % SHARD_PASSWORD)
        argv = ["/usr/lib/postgresql/15/bin/psql", "-XAtq", "-h", run, "-p", "5432", "-U",
                "postgres", "-d", "postgres", "-c", sql]
        if os.geteuid() == 0:
            argv = ["runuser", "-u", "postgres", "--"] + argv
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
        return "postgresql://matrix_shard:%s@/postgres?host=%s&port=5432" % (SHARD_PASSWORD, run)

    def shard_request(self, method, admin):
        if method == "AddShard":
            return dpq_pb2.AddShardRequest(name="shard_%d" % self.next_id(), url=self.shard_url)
        if method == "ListShards":
            return dpq_pb2.ListShardsRequest()
        name = "shard_%d" % self.next_id()
        if admin:  # a shard of its own to remove; refused callers name one that need not exist
            self.dpqd.ctl("shard", "add", name, "--url", self.shard_url)
        return dpq_pb2.RemoveShardRequest(name=name)

    # -- requests -------------------------------------------------------------------------

    def victim(self, kind):
        """A fresh object an admin call may destroy (a dataset, an analyst), named uniquely."""
        type(self).victims += 1
        name = "victim_%s_%d" % (kind, self.victims)
        if kind == "dataset":
            self.dpqd.ctl("dataset", "create", name, "--csv", self.tiny_csv, "--privacy-unit",
                          "person_id", "--type", "person_id=integer", "--type", "x=double")
        elif kind == "analyst":
            self.create_analyst(self.dpqd, name)
        return name

    def csv_stream(self, name, header=True):
        cols = [dpq_pb2.Column(name="person_id", type=dpq_pb2.COLUMN_TYPE_INTEGER),
                dpq_pb2.Column(name="x", type=dpq_pb2.COLUMN_TYPE_DOUBLE)]
        first = dpq_pb2.DatasetHeader(name=name, privacy_unit="person_id",
                                      columns=cols if header else [])
        return iter([dpq_pb2.CreateDatasetRequest(header=first),
                     dpq_pb2.CreateDatasetRequest(csv_chunk=b"person_id,x\n1,2.5\n2,3.5\n"),
                     dpq_pb2.CreateDatasetRequest(end=dpq_pb2.UploadEnd(csv_bytes=24))])

    def request_for(self, service, method, caller):
        """A valid request of service.method (for the admin, one that succeeds)."""
        count = dpq_pb2.QueryRequest(dataset=DATASET, aggregate=dpq_pb2.AGGREGATE_COUNT, epsilon=0.01)
        admin = caller == "admin"
        requests = {
            ("AnalystService", "WhoAmI"): lambda: dpq_pb2.WhoAmIRequest(),
            ("AnalystService", "ListDatasets"): lambda: dpq_pb2.ListDatasetsRequest(),
            ("AnalystService", "Query"): lambda: count,
            ("AnalystService", "QueryBatch"): lambda: dpq_pb2.QueryBatchRequest(
                dataset=DATASET, queries=[dpq_pb2.QueryRequest(aggregate=dpq_pb2.AGGREGATE_COUNT,
                                                               epsilon=0.01)]),
            ("AnalystService", "Plan"): lambda: dpq_pb2.PlanRequest(query=count),
            ("AnalystService", "GetDataset"): lambda: dpq_pb2.GetDatasetRequest(name=DATASET),
            ("AnalystService", "GetBudget"): lambda: dpq_pb2.GetBudgetRequest(dataset=DATASET),
            # Two aggregates: a batch, never served from the result cache, so each OK call charges.
            ("AnalystService", "ExecuteSql"): lambda: dpq_pb2.SqlRequest(statement=SQL),
            ("AnalystService", "ExplainSql"): lambda: dpq_pb2.SqlRequest(statement=SQL),
            ("AccountingService", "Price"): lambda: dpq_pb2.PriceRequest(
                accountant="basic", delta=1e-6, events=["laplace:scale=10,count=2"]),
            ("AccountingService", "Calibrate"): lambda: dpq_pb2.CalibrateRequest(
                accountant="rdp", target_epsilon=3, delta=1e-5, q=0.01, steps=100),
            ("TrainingService", "StartRun"): lambda: training_pb2.StartRunRequest(
                dataset=DATASET, run="run_%d" % self.next_id(), sampling_rate=0.01,
                noise_multiplier=1.1, delta=1e-6),
            ("TrainingService", "ReportSteps"): lambda: training_pb2.ReportStepsRequest(
                run=RUN, steps=1),
            ("TrainingService", "GetRun"): lambda: training_pb2.GetRunRequest(run=RUN),
            ("TrainingService", "ListRuns"): lambda: training_pb2.ListRunsRequest(dataset=DATASET),
            ("AdminService", "CreateDataset"): lambda: self.csv_stream(
                "created_%d" % self.next_id()),
            ("AdminService", "LoadDataset"): lambda: self.csv_stream(
                self.victim("dataset") if admin else DATASET, header=False),
            ("AdminService", "DropDataset"): lambda: dpq_pb2.DropDatasetRequest(
                name=self.victim("dataset") if admin else DATASET, confirm=True),
            ("AdminService", "CreateAnalyst"): lambda: dpq_pb2.CreateAnalystRequest(
                name="made_%d" % self.next_id()),
            ("AdminService", "ListAnalysts"): lambda: dpq_pb2.ListAnalystsRequest(),
            ("AdminService", "RevokeAnalyst"): lambda: dpq_pb2.RevokeAnalystRequest(
                name=self.victim("analyst") if admin else "granted"),
            ("AdminService", "RotateToken"): lambda: dpq_pb2.RotateTokenRequest(
                name=self.victim("analyst") if admin else "granted"),
            ("AdminService", "Grant"): lambda: dpq_pb2.GrantRequest(analyst="ungranted_twin",
                                                                    dataset=DATASET),
            ("AdminService", "RevokeGrant"): lambda: self.revoke_grant_request(admin),
            ("AdminService", "ListGrants"): lambda: dpq_pb2.ListGrantsRequest(dataset=DATASET),
            ("AdminService", "ServerStatus"): lambda: dpq_pb2.ServerStatusRequest(),
            ("AdminService", "ListAdminLog"): lambda: dpq_pb2.ListAdminLogRequest(),
            ("AdminService", "VerifyAdminLog"): lambda: dpq_pb2.VerifyAdminLogRequest(),
            ("AdminService", "SetBudget"): lambda: dpq_pb2.SetBudgetRequest(
                dataset=DATASET, epsilon=1000, delta=1e-3),
            ("AdminService", "ListAudit"): lambda: dpq_pb2.ListAuditRequest(dataset=DATASET),
            ("AdminService", "VerifyAudit"): lambda: dpq_pb2.VerifyAuditRequest(dataset=DATASET),
            ("AdminService", "CreatePopulation"): lambda: dpq_pb2.CreatePopulationRequest(
                name="people_%d" % self.next_id(), unit_type=dpq_pb2.COLUMN_TYPE_INTEGER),
            ("AdminService", "ListPopulations"): dpq_pb2.ListPopulationsRequest,
            ("AdminService", "GetPopulation"): lambda: dpq_pb2.GetPopulationRequest(name=DATASET),
            ("AdminService", "DropPopulation"): lambda: self.drop_population_request(admin),
            ("AdminService", "AddShard"): lambda: self.shard_request("AddShard", admin),
            ("AdminService", "ListShards"): lambda: self.shard_request("ListShards", admin),
            ("AdminService", "RemoveShard"): lambda: self.shard_request("RemoveShard", admin),
            ("CollectionService", "CreateCollection"): lambda: collection_pb2.CreateCollectionRequest(
                name="made_%d" % self.next_id(), domain=["a", "b"], epsilon=1,
                mechanism=collection_pb2.LDP_MECHANISM_RR),
            ("CollectionService", "ListCollections"): collection_pb2.ListCollectionsRequest,
            ("CollectionService", "GetCollection"): lambda: collection_pb2.GetCollectionRequest(
                name=COLLECTION),
            ("CollectionService", "SubmitReport"): lambda: collection_pb2.SubmitReportRequest(
                collection=COLLECTION, client_id="client_%d" % self.next_id(),
                report=collection_pb2.LdpReport(index=1)),
            ("CollectionService", "Estimate"): lambda: collection_pb2.EstimateRequest(
                collection=COLLECTION),
        }
        make = requests.get((service, method))
        if make is None:
            self.fail("%s.%s has no entry in the authorization matrix (tests/e2e/"
                      "authorization_matrix_test.py): decide who may call it" % (service, method))
        return make()

    def next_id(self):
        type(self).victims += 1
        return self.victims

    def drop_population_request(self, admin):
        # For the admin an empty population of its own to drop; refused callers name slid's.
        if not admin:
            return dpq_pb2.DropPopulationRequest(name=DATASET)
        name = "emptied_%d" % self.next_id()
        self.dpqd.ctl("population", "create", name, "--unit-type", "integer")
        return dpq_pb2.DropPopulationRequest(name=name)

    def revoke_grant_request(self, admin):
        if not admin:
            return dpq_pb2.RevokeGrantRequest(analyst="granted", dataset=DATASET)
        name = self.victim("analyst")
        self.dpqd.ctl("grant", name, DATASET)
        return dpq_pb2.RevokeGrantRequest(analyst=name, dataset=DATASET)

    # -- calls ----------------------------------------------------------------------------

    def metadata(self, caller):
        if caller == "no token":
            return ()
        if caller == "malformed":
            return (("authorization", "Token " + harness.ADMIN_TOKEN),)  # not "Bearer <token>"
        return (("authorization", "Bearer " + self.tokens[caller]),)

    def call(self, service, method, caller):
        code, details = harness.grpc_call(self.channel, service, method,
                                          self.request_for(service, method, caller),
                                          metadata=self.metadata(caller), timeout=60)
        return code, details

    @staticmethod
    def expected(service, method, caller):
        if caller in UNAUTHENTICATED_KINDS:
            return "UNAUTHENTICATED"
        if caller == "admin":
            return "OK"
        access = ACCESS.get(service, {}).get(method, "admin")
        if access == "admin":
            return "PERMISSION_DENIED"
        if access == "granted" and caller == "analyst without grant":
            return "PERMISSION_DENIED"
        return "OK"

    def test_every_rpc_times_every_caller(self):
        self.dpqd.ctl("analyst", "create", "ungranted_twin")
        before = self.snapshot(self.dpqd, DATASET)
        descriptors = {name: service for module in harness.proto_modules()
                       for name, service in module.DESCRIPTOR.services_by_name.items()}
        services = list(descriptors)
        self.assertEqual(set(services), {"AnalystService", "AdminService", "AccountingService",
                                         "CollectionService", "TrainingService"})
        mismatches, cells, ok_charges = [], 0, 0
        training_eps, training_delta, training_reports = 0.0, 0.0, 0
        for service in services:
            for method in descriptors[service].methods_by_name:
                for caller in CALLERS:
                    want = self.expected(service, method, caller)
                    got, details = self.call(service, method, caller)
                    cells += 1
                    if got != want:
                        mismatches.append("%s.%s as %s: want %s, got %s (%s)" %
                                          (service, method, caller, want, got, details))
                    if got == "OK" and service == "AnalystService" and method in ("Query",
                                                                                  "QueryBatch",
                                                                                  "ExecuteSql"):
                        ok_charges += 1
                    if got == "OK" and (service, method) == ("TrainingService", "ReportSteps"):
                        training_eps += details.epsilon  # each report is one charged audit row
                        training_delta += details.delta
                        training_reports += 1
        self.assertEqual(mismatches, [], "\n".join(mismatches))
        methods = sum(len(descriptors[s].methods_by_name) for s in services)
        self.assertEqual(cells, methods * len(CALLERS))
        # Only the successful queries and step reports were charged: one audit row each, nothing
        # for any refusal.
        eps, delta, rows = self.snapshot(self.dpqd, DATASET)
        self.assertEqual(rows - before[2], ok_charges + training_reports)
        self.assertAlmostEqual(eps - before[0], 0.01 * ok_charges + training_eps, delta=1e-9)
        self.assertAlmostEqual(delta, before[1] + training_delta, delta=1e-15)
        self.assertTrue(self.dpqd.ctl("audit", "verify", DATASET)["ok"])
        # Every refused admin call wrote nothing to the admin log; the chain is intact.
        self.assertTrue(self.dpqd.ctl("audit", "verify", "--admin-log")["ok"])
        admins = {e["admin"] for e in self.dpqd.ctl("audit", "--admin-log")["entries"]}
        self.assertEqual(admins, {"admin"})

    def test_tokens_never_reach_the_log(self):
        log = self.dpqd.log_text()
        for caller, token in self.tokens.items():
            self.assertNotIn(token, log, "the %s token is in dpqd's log" % caller)


if __name__ == "__main__":
    unittest.main()
