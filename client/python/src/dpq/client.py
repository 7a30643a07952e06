"""dpq.Client: the analyst's methods (queries, plans, budgets, datasets) and the accounting ones.

Admin methods come from AdminMethods (admin.py). A further service (CollectionService,
TrainingService) attaches as a sub-object built in Client.__init__ from the client's Rpc, so it
shares the channel, token, deadline and error mapping: `self.collections = Collections(self._rpc)`
in a module of its own (collections.py) calling `self._rpc.invoke(stub.Method, request)`.
"""
from dpq import _rpc, admin, collections, errors, health, results, sql, training
from dpq.request_builder import AGGREGATES, query_request
from dpq.retry import RetryPolicy
from dpq.v1 import dpq_pb2, dpq_pb2_grpc


class Client(admin.AdminMethods):
    """A connection to dpqd. `server` is host:port (default $DPQ_SERVER), `token` the bearer token
    (default $DPQ_TOKEN); `tls_ca` (a PEM file) switches to TLS, with `tls_cert`/`tls_key` for
    mutual TLS. `timeout` is the default deadline of every call, in seconds.

    `retry` (a dpq.RetryPolicy; None disables it) repeats a call that failed with UNAVAILABLE, by
    default 3 attempts with pauses of about 0.2 s and 0.4 s: queries, batches, SQL scripts and
    training step reports with the same request id (drawn by the client when none is given, so a
    repeat is never charged twice), and reads. Calls that change state without a request id are
    never repeated (dpq/retry.py).

    Every failed call raises a dpq.DpqError subclass carrying the gRPC code name."""

    def __init__(self, server=None, token=None, tls_ca=None, tls_cert=None, tls_key=None,
                 timeout=30.0, retry=RetryPolicy()):
        self._rpc = _rpc.Rpc(server, token, tls_ca, tls_cert, tls_key, timeout, retry)
        self._analyst = dpq_pb2_grpc.AnalystServiceStub(self._rpc.channel)
        self._admin = dpq_pb2_grpc.AdminServiceStub(self._rpc.channel)
        self._accounting = dpq_pb2_grpc.AccountingServiceStub(self._rpc.channel)
        self._health_check = health.check_stub(self._rpc.channel)
        self.collections = collections.Collections(self._rpc)
        self.training = training.Training(self._rpc)

    @property
    def retry(self):
        """The RetryPolicy in force (attempts == 1: retries off)."""
        return self._rpc.retry

    @property
    def timeout(self):
        return self._rpc.timeout

    @timeout.setter
    def timeout(self, seconds):
        self._rpc.timeout = seconds

    def close(self):
        self._rpc.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- queries --------------------------------------------------------------------------

    def query(self, dataset, aggregate, epsilon, **options):
        """Runs one DP query and returns a QueryResult (`.value`, `.interval`, `.rows`,
        `.budget`, `.to_pandas()`).

        aggregate: count, sum, mean, variance, stddev, quantile, histogram.
        options (as dpqctl query): column, lower, upper, mechanism ('laplace' | 'gaussian'),
        delta, max_contributions, request_id, confidence, where, quantiles, bins, group_by, keys,
        max_partitions. Without request_id the client draws one (when retries are on), so a
        retry after UNAVAILABLE is charged at most once; the answer's request_id shows it."""
        options = dict(options, request_id=self._rpc.request_id(options.get("request_id")))
        request = query_request(dataset, aggregate, epsilon, **options)
        return results.QueryResult.from_message(
            self._rpc.invoke(self._analyst.Query, request, retry=True), aggregate,
            options.get("group_by", ()))

    def query_batch(self, dataset, queries, delta=0.0, request_id=""):
        """Runs a declared list of queries (dicts of query() arguments without `dataset`), charged
        once at their joint price (one audit row); returns a BatchResult."""
        request = dpq_pb2.QueryBatchRequest(dataset=dataset, delta=delta,
                                            request_id=self._rpc.request_id(request_id))
        aggregates, group_bys = [], []
        for q in queries:
            q = dict(q)
            aggregate, epsilon = q.pop("aggregate", None), q.pop("epsilon", None)
            if aggregate is None or epsilon is None:
                raise errors.invalid_argument("every batch query needs 'aggregate' and 'epsilon'")
            request.queries.append(query_request("", aggregate, epsilon, **q))
            aggregates.append(aggregate)
            group_bys.append(q.get("group_by", ()))
        return results.BatchResult.from_message(
            self._rpc.invoke(self._analyst.QueryBatch, request, retry=True), aggregates, group_bys)

    def plan(self, dataset, aggregate, epsilon=0.0, target_error=0.0, expected_count=0.0,
             **options):
        """The error of a query at `epsilon`, or the smallest epsilon meeting `target_error`
        (half-width at the confidence level); charges nothing. Returns a Plan."""
        request = dpq_pb2.PlanRequest(query=query_request(dataset, aggregate, epsilon, **options),
                                      target_error=target_error, expected_count=expected_count)
        return results.Plan.from_message(self._rpc.invoke(self._analyst.Plan, request, retry=True))

    def sql(self, statement, request_id="", confidence=0.95, joint_delta=0.0):
        """Runs a SELECT WITH DIFFERENTIAL_PRIVACY script (several aggregates or statements are
        charged as one batch; joint_delta > 0 prices them jointly, as query_batch's delta);
        returns a SqlResult (`.columns`, `.rows`, `.to_pandas()` with each released column's
        interval as <column>_lower/_upper, `.budget`, `.epsilon` and `.epsilon_sum`)."""
        request = sql.sql_request(statement, self._rpc.request_id(request_id), confidence,
                                  joint_delta)
        return sql.SqlResult.from_message(
            self._rpc.invoke(self._analyst.ExecuteSql, request, retry=True))

    def explain_sql(self, statement, confidence=0.95, joint_delta=0.0):
        """The plan of a SQL script (parts, bounds, mechanism, epsilon, expected errors, and the
        charge with the given joint_delta) as a dict; charges nothing."""
        request = sql.sql_request(statement, "", confidence, joint_delta)
        return sql.explain_dict(self._rpc.invoke(self._analyst.ExplainSql, request, retry=True))

    @staticmethod
    def aggregates():
        """The aggregate names query() accepts."""
        return sorted(AGGREGATES)

    # -- what the caller may see ----------------------------------------------------------

    def budget(self, dataset):
        """The dataset's budget: total, spent, remaining (dpqctl budget show)."""
        return results.Budget.from_message(
            self._rpc.invoke(self._analyst.GetBudget, dpq_pb2.GetBudgetRequest(dataset=dataset),
                             retry=True))

    def datasets(self):
        """The datasets the caller may query (all of them for an admin)."""
        response = self._rpc.invoke(self._analyst.ListDatasets, dpq_pb2.ListDatasetsRequest(),
                                    retry=True)
        return [results.Dataset.from_message(d) for d in response.datasets]

    def dataset(self, name):
        """One dataset's schema: columns, declared types and public bounds (dpqctl dataset show)."""
        return results.Dataset.from_message(
            self._rpc.invoke(self._analyst.GetDataset, dpq_pb2.GetDatasetRequest(name=name),
                             retry=True))

    def whoami(self):
        """(name, role, datasets) of the token's principal."""
        m = self._rpc.invoke(self._analyst.WhoAmI, dpq_pb2.WhoAmIRequest(), retry=True)
        return {"name": m.name, "role": results.enum_name(dpq_pb2.Role, m.role, "ROLE_"),
                "datasets": list(m.datasets)}

    def health(self, service=""):
        """grpc.health.v1 Check (dpqctl health): 'SERVING' while dpqd's database answers, else
        'NOT_SERVING'; `service` "" is the server, or e.g. 'dpq.v1.AnalystService'. An unknown
        service raises NotFound."""
        return health.status_name(self._rpc.invoke(self._health_check,
                                                   health.HealthCheckRequest(service=service)))

    # -- accounting (no dataset, no ledger) -----------------------------------------------

    def price(self, events, delta, accountant="pld"):
        """The epsilon the accountant proves for the composed events at `delta` (dpqctl price);
        events use dpqctl's syntax, e.g. 'laplace:scale=10,count=100'."""
        if isinstance(events, str):
            events = [events]
        m = self._rpc.invoke(self._accounting.Price, dpq_pb2.PriceRequest(
            accountant=accountant, delta=delta, events=list(events)), retry=True)
        return m.epsilon

    def calibrate(self, target_epsilon, delta, q, steps, accountant="rdp"):
        """DP-SGD: the smallest noise multiplier making `steps` Poisson-subsampled Gaussian steps
        at rate `q` (target_epsilon, delta)-DP; returns (noise_multiplier, epsilon achieved)."""
        m = self._rpc.invoke(self._accounting.Calibrate, dpq_pb2.CalibrateRequest(
            accountant=accountant, target_epsilon=target_epsilon, delta=delta, q=q, steps=steps),
            retry=True)
        return m.noise_multiplier, m.epsilon
