"""client.collections: local-DP collections (CollectionService), a sub-object of dpq.Client built
from the client's shared Rpc (channel, token, deadline, error mapping).

submit() randomizes on the caller's side with dpq.ldp under the collection's declared mechanism,
epsilon and domain, which it fetches from the server once per collection (they never change after
creation); only the report is sent, never the true value (Wang, Blocki, Li, Jha 2017).
"""
import dataclasses
from typing import List, Tuple

from dpq import errors, ldp, tables
from dpq.results import _FromMessage, enum_name
from dpq.v1 import collection_pb2, collection_pb2_grpc

_MECHANISM_PREFIX = "LDP_MECHANISM_"


def _mechanism_number(name):
    try:
        return collection_pb2.LdpMechanism.Value(_MECHANISM_PREFIX + str(name).upper())
    except ValueError:
        raise errors.invalid_argument("mechanism must be one of: %s, not %r" % (
            ", ".join(ldp.MECHANISMS), name)) from None


@dataclasses.dataclass
class Collection(_FromMessage):
    """A collection as declared (mechanism as 'rr' | 'krr' | 'oue' | 'olh'), with its report count."""
    name: str
    domain: Tuple[str, ...]
    epsilon: float
    mechanism: str
    reports_per_client: int
    created_at: str
    reports: int
    olh_hash_range: int
    message: object = dataclasses.field(default=None, repr=False, compare=False)

    @classmethod
    def from_message(cls, m):
        return cls(m.name, tuple(m.domain), m.epsilon,
                   enum_name(collection_pb2.LdpMechanism, m.mechanism, _MECHANISM_PREFIX),
                   m.reports_per_client, m.created_at, m.reports, m.olh_hash_range, m)


@dataclasses.dataclass
class FrequencyEstimate:
    """An unbiased count estimate of one value (may be negative) and its interval."""
    value: str
    estimate: float
    lower: float
    upper: float
    standard_error: float


@dataclasses.dataclass
class Estimate(_FromMessage):
    """The frequency estimates of a collection from its `reports` reports, in domain order."""
    collection: Collection
    reports: int
    confidence: float
    estimates: List[FrequencyEstimate]
    message: object = dataclasses.field(default=None, repr=False, compare=False)

    @classmethod
    def from_message(cls, m):
        return cls(Collection.from_message(m.collection), m.reports, m.confidence,
                   [FrequencyEstimate(e.value, e.estimate, e.ci_lower, e.ci_upper,
                                      e.standard_error) for e in m.estimates], m)

    def records(self):
        return [{"value": e.value, "estimate": e.estimate, "lower": e.lower, "upper": e.upper}
                for e in self.estimates]

    def to_pandas(self):
        """One row per domain value: value, estimate, lower, upper."""
        return tables.data_frame(self.records())


class Collections:
    """client.collections; every method raises a dpq.DpqError subclass on failure."""

    def __init__(self, rpc):
        self._rpc = rpc
        self._stub = collection_pb2_grpc.CollectionServiceStub(rpc.channel)
        self._declared = {}  # name -> Collection, for submit()

    def create(self, name, domain, epsilon, mechanism, reports_per_client=1):
        """Admins only (dpqctl collection create): `domain` the values in index order, `epsilon`
        per report, `mechanism` 'rr' (2 values) | 'krr' | 'oue' | 'olh'."""
        request = collection_pb2.CreateCollectionRequest(
            name=name, domain=list(domain), epsilon=epsilon,
            mechanism=_mechanism_number(mechanism), reports_per_client=reports_per_client)
        return Collection.from_message(self._rpc.invoke(self._stub.CreateCollection, request))

    def list(self):
        response = self._rpc.invoke(self._stub.ListCollections,
                                    collection_pb2.ListCollectionsRequest(), retry=True)
        return [Collection.from_message(c) for c in response.collections]

    def get(self, name):
        return Collection.from_message(self._rpc.invoke(
            self._stub.GetCollection, collection_pb2.GetCollectionRequest(name=name), retry=True))

    def _declaration(self, name):
        if name not in self._declared:
            self._declared[name] = self.get(name)
        return self._declared[name]

    def submit(self, name, client_id, value, rng=None):
        """Randomizes `value` (one of the collection's domain values) locally and sends only the
        report. `rng` (a random.Random) is for tests: a seeded generator is not private."""
        declared = self._declaration(name)
        if value not in declared.domain:
            raise errors.invalid_argument("value %r is not in collection %s's domain (%s)" % (
                value, name, ", ".join(declared.domain)))
        if declared.mechanism == "olh" and declared.olh_hash_range != ldp.olh_g(declared.epsilon):
            raise errors.invalid_argument(
                "collection %s hashes into %d values, this client into %d: upgrade the client" % (
                    name, declared.olh_hash_range, ldp.olh_g(declared.epsilon)))
        report = ldp.randomize(declared.mechanism, declared.domain.index(value),
                               len(declared.domain), declared.epsilon, rng)
        # Never repeated: a report carries no request id, so a lost attempt that was stored would
        # be stored twice (and spend one more of the client id's reports).
        self._rpc.invoke(self._stub.SubmitReport, collection_pb2.SubmitReportRequest(
            collection=name, client_id=client_id, report=report.to_proto(collection_pb2)))

    def estimate(self, name, confidence=0.95):
        """The frequency estimates with `confidence` intervals (post-processing: costs nothing)."""
        return Estimate.from_message(self._rpc.invoke(
            self._stub.Estimate,
            collection_pb2.EstimateRequest(collection=name, confidence=confidence), retry=True))
