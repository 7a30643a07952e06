"""A small Python client for dpq's AnalystService and AdminService.

The protobuf/gRPC modules are generated at build time into build/python (target
`dpq_python_stubs`); put that directory on PYTHONPATH, e.g.

    PYTHONPATH=build/python:client/python python3 -c "
    from dpq_client import DpqClient
    c = DpqClient('127.0.0.1:7777', token='...')
    print(c.query('slid', 'mean', epsilon=0.5, column='age'))"

Only Debian's python3-grpcio and python3-protobuf are needed.
"""
import grpc
from google.protobuf import json_format

from dpq.v1 import dpq_pb2, dpq_pb2_grpc

_AGGREGATES = {"count": dpq_pb2.AGGREGATE_COUNT, "sum": dpq_pb2.AGGREGATE_SUM,
               "mean": dpq_pb2.AGGREGATE_MEAN, "variance": dpq_pb2.AGGREGATE_VARIANCE,
               "stddev": dpq_pb2.AGGREGATE_STDDEV, "quantile": dpq_pb2.AGGREGATE_QUANTILE,
               "histogram": dpq_pb2.AGGREGATE_HISTOGRAM}
_MECHANISMS = {"laplace": dpq_pb2.MECHANISM_LAPLACE, "gaussian": dpq_pb2.MECHANISM_GAUSSIAN}


class DpqError(Exception):
    """An RPC failed; `code` is the gRPC status code name (e.g. 'RESOURCE_EXHAUSTED')."""

    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class DpqClient:
    def __init__(self, target, token, tls_ca_file=None, timeout=30.0):
        if tls_ca_file:
            with open(tls_ca_file, "rb") as f:
                creds = grpc.ssl_channel_credentials(root_certificates=f.read())
            self._channel = grpc.secure_channel(target, creds)
        else:
            self._channel = grpc.insecure_channel(target)
        self._metadata = (("authorization", f"Bearer {token}"),)
        self._timeout = timeout
        self.analyst = dpq_pb2_grpc.AnalystServiceStub(self._channel)
        self.admin = dpq_pb2_grpc.AdminServiceStub(self._channel)

    def close(self):
        self._channel.close()

    def _call(self, method, request):
        try:
            response = method(request, metadata=self._metadata, timeout=self._timeout)
        except grpc.RpcError as e:
            raise DpqError(e.code().name, e.details()) from None
        return json_format.MessageToDict(response, preserving_proto_field_name=True,
                                         including_default_value_fields=True)

    @staticmethod
    def _request(dataset, aggregate, epsilon, column="", lower=None, upper=None,
                 mechanism="laplace", delta=0.0, max_contributions=1, request_id="",
                 confidence=0.95, where="", quantiles=(), bins=(), group_by=(), keys=(),
                 max_partitions=1):
        req = dpq_pb2.QueryRequest(
            dataset=dataset, aggregate=_AGGREGATES[aggregate], column=column, epsilon=epsilon,
            delta=delta, mechanism=_MECHANISMS[mechanism], max_contributions=max_contributions,
            request_id=request_id, confidence=confidence, where=where, quantiles=list(quantiles),
            bins=list(bins), group_by=list(group_by), keys=list(keys),
            max_partitions=max_partitions)
        if lower is not None:
            req.lower = lower
        if upper is not None:
            req.upper = upper
        return req

    def query(self, dataset, aggregate, epsilon, **options):
        """Runs one DP query; returns the QueryResponse as a dict (all values in `rows`).

        options: column, lower, upper, mechanism, delta, max_contributions, request_id,
        confidence, where, quantiles, bins, group_by, keys, max_partitions."""
        return self._call(self.analyst.Query, self._request(dataset, aggregate, epsilon, **options))

    def query_batch(self, dataset, queries, delta=0.0, request_id=""):
        """Runs a declared list of queries (dicts of query() arguments without dataset), charged
        once at their joint price; returns the QueryBatchResponse as a dict."""
        req = dpq_pb2.QueryBatchRequest(dataset=dataset, delta=delta, request_id=request_id)
        for q in queries:
            q = dict(q)
            req.queries.append(self._request("", q.pop("aggregate"), q.pop("epsilon"), **q))
        return self._call(self.analyst.QueryBatch, req)

    def plan(self, dataset, aggregate, epsilon=0.0, target_error=0.0, expected_count=0.0,
             **options):
        """The error of a query at `epsilon`, or the epsilon meeting `target_error`; charges
        nothing."""
        req = dpq_pb2.PlanRequest(query=self._request(dataset, aggregate, epsilon, **options),
                                  target_error=target_error, expected_count=expected_count)
        return self._call(self.analyst.Plan, req)

    def budget(self, dataset):
        return self._call(self.analyst.GetBudget, dpq_pb2.GetBudgetRequest(dataset=dataset))

    def datasets(self):
        return self._call(self.analyst.ListDatasets, dpq_pb2.ListDatasetsRequest()).get("datasets", [])

    # -- DP SQL (AnalystService.ExecuteSql / ExplainSql) --------------------------------------

    @staticmethod
    def _sql_cell(cell):
        if cell.null:
            return None
        if len(cell.array):
            return list(cell.array)
        if cell.text:
            return cell.text
        return cell.number

    def sql(self, statement, request_id="", confidence=0.0):
        """Runs a `SELECT WITH DIFFERENTIAL_PRIVACY ...` statement (or several separated by ';',
        charged jointly). Returns a dict: `columns` (names), `types`, `rows` (lists of values in
        column order; string columns hold strings), `results` (one such dict per statement),
        `epsilon`/`delta` charged, `budget`, `cached`, `replayed`, `request_id`, and `frame`, a
        pandas DataFrame of the first statement's rows when pandas is installed (else None)."""
        req = dpq_pb2.SqlRequest(statement=statement, request_id=request_id, confidence=confidence)
        try:
            resp = self.analyst.ExecuteSql(req, metadata=self._metadata, timeout=self._timeout)
        except grpc.RpcError as e:
            raise DpqError(e.code().name, e.details()) from None
        results = []
        for rs in resp.results:
            types = [c.type for c in rs.columns]
            rows = [[(c.text if t == "string" and not c.null else self._sql_cell(c))
                     for c, t in zip(r.cells, types)] for r in rs.rows]
            results.append({"columns": [c.name for c in rs.columns], "types": types, "rows": rows})
        out = dict(results[0]) if results else {"columns": [], "types": [], "rows": []}
        out.update(results=results, epsilon=resp.epsilon, delta=resp.delta,
                   budget=json_format.MessageToDict(resp.budget, preserving_proto_field_name=True),
                   cached=resp.cached, replayed=resp.replayed, request_id=resp.request_id)
        try:
            import pandas  # optional: not a dependency of dpq
            out["frame"] = pandas.DataFrame(out["rows"], columns=out["columns"])
        except ImportError:
            out["frame"] = None
        return out

    def explain_sql(self, statement, confidence=0.0):
        """The plan and price of a SQL statement; charges nothing."""
        return self._call(self.analyst.ExplainSql,
                          dpq_pb2.SqlRequest(statement=statement, confidence=confidence))
