"""dpq: the Python client of the dpq differential-privacy query service.

    import dpq
    client = dpq.Client("127.0.0.1:7777", token)
    answer = client.query("slid", "mean", epsilon=0.5, column="wages")
    print(answer.value, answer.interval)

The gRPC modules of the API are generated into dpq.v1 when the package is built (pip install or
the CMake target dpq_python_stubs). dpq.ldp holds the client-side local-DP randomizers.
"""
from dpq.client import Client
from dpq.errors import (AlreadyExists, DeadlineExceeded, DpqError, FailedPrecondition,
                        InvalidArgument, NotFound, PermissionDenied, ResourceExhausted,
                        Unauthenticated, Unavailable, Unimplemented)
from dpq.collections import Collection, Estimate, FrequencyEstimate
from dpq.retry import NO_RETRY, RetryPolicy, new_request_id
from dpq.sql import SqlResult, SqlTable
from dpq.training import StepReport, TrainingRun, TrainingRuns
from dpq.results import (BatchResult, Budget, Column, Credentials, Dataset, Interval, LoadResult,
                         Plan, QueryResult, Records, Row)

__version__ = "0.1.0"

__all__ = [
    "Client", "DpqError", "InvalidArgument", "NotFound", "AlreadyExists", "PermissionDenied",
    "Unauthenticated", "ResourceExhausted", "FailedPrecondition", "Unavailable",
    "DeadlineExceeded", "Unimplemented", "QueryResult", "BatchResult", "Plan", "Budget", "Row",
    "Interval", "Dataset", "Column", "LoadResult", "Credentials", "Records", "SqlResult",
    "SqlTable", "Collection", "Estimate", "FrequencyEstimate", "TrainingRun", "StepReport",
    "TrainingRuns", "RetryPolicy", "NO_RETRY", "new_request_id",
]
