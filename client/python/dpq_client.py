"""The dict-returning client the older end-to-end tests use, now a thin shim over the dpq
package (client/python/src/dpq): DpqClient's methods return the responses as dicts (proto field
names, defaults included) and raise dpq.DpqError, which carries the gRPC code name.

The package with its generated stubs is assembled in <build>/python by the CMake target
dpq_python_stubs; put that directory on sys.path (tests/e2e/harness.py does). New code should use
`dpq.Client`, whose results are typed.

Unlike dpq.Client, DpqClient does not repeat failed calls unless given a dpq.RetryPolicy: the tests
that use it (tests/e2e/robustness_test.py) retry with the same request id themselves and count
every attempt the server saw.
"""
import dpq
from dpq import DpqError  # noqa: F401  (re-exported: tests catch dpq_client.DpqError)


class DpqClient:
    def __init__(self, target, token, tls_ca_file=None, timeout=30.0, retry=None):
        self.client = dpq.Client(target, token, tls_ca=tls_ca_file, timeout=timeout, retry=retry)

    @property
    def _timeout(self):
        return self.client.timeout

    @_timeout.setter
    def _timeout(self, seconds):
        self.client.timeout = seconds

    def close(self):
        self.client.close()

    def query(self, dataset, aggregate, epsilon, **options):
        return self.client.query(dataset, aggregate, epsilon, **options).to_dict()

    def query_batch(self, dataset, queries, delta=0.0, request_id=""):
        return self.client.query_batch(dataset, queries, delta, request_id).to_dict()

    def plan(self, dataset, aggregate, epsilon=0.0, target_error=0.0, expected_count=0.0,
             **options):
        return self.client.plan(dataset, aggregate, epsilon, target_error, expected_count,
                                **options).to_dict()

    def budget(self, dataset):
        return self.client.budget(dataset).to_dict()

    def datasets(self):
        return [d.to_dict() for d in self.client.datasets()]
