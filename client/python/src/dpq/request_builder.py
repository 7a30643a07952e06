"""Query arguments -> dpq.v1.QueryRequest, with the names dpqctl uses ('count', 'laplace')."""
import numbers

from dpq import errors
from dpq.v1 import dpq_pb2


def _names(enum_type, prefix, skip=()):
    """{'count': AGGREGATE_COUNT, ...} from the proto enum, so a new value needs no edit here."""
    out = {}
    for name, number in enum_type.items():
        short = name[len(prefix):].lower()
        if number != 0 and short not in skip:
            out[short] = number
    return out


AGGREGATES = _names(dpq_pb2.Aggregate, "AGGREGATE_")
# The exponential mechanism appears in answers only; requests may not ask for it.
MECHANISMS = _names(dpq_pb2.Mechanism, "MECHANISM_", skip=("exponential",))
COLUMN_TYPES = _names(dpq_pb2.ColumnType, "COLUMN_TYPE_")
ROLES = _names(dpq_pb2.Role, "ROLE_")


def lookup(table, value, what):
    try:
        return table[value]
    except KeyError:
        raise errors.invalid_argument("unknown %s %r (one of: %s)" %
                                      (what, value, ", ".join(sorted(table)))) from None


def query_request(dataset, aggregate, epsilon, column="", lower=None, upper=None,
                  mechanism="laplace", delta=0.0, max_contributions=1, request_id="",
                  confidence=0.95, where="", quantiles=(), bins=(), group_by=(), keys=(),
                  max_partitions=1):
    """Builds a QueryRequest. Only names are checked here; every value is validated by the
    server (which refuses NaN, bounds outside the declared ones, ...)."""
    for name, value in (("epsilon", epsilon), ("delta", delta), ("confidence", confidence)):
        # numbers.Real admits numpy scalars too; the server refuses NaN and infinities itself.
        if not isinstance(value, numbers.Real) or isinstance(value, bool):
            raise errors.invalid_argument("%s must be a number, not %r" % (name, value))
    if isinstance(group_by, str) or isinstance(keys, str) or isinstance(quantiles, (int, float)):
        raise errors.invalid_argument("group_by, keys and quantiles take lists")
    request = dpq_pb2.QueryRequest(
        dataset=dataset, aggregate=lookup(AGGREGATES, aggregate, "aggregate"), column=column or "",
        epsilon=float(epsilon), delta=float(delta),
        mechanism=lookup(MECHANISMS, mechanism, "mechanism"),
        max_contributions=max_contributions, request_id=request_id, confidence=float(confidence),
        where=where, quantiles=list(quantiles), bins=list(bins), group_by=list(group_by),
        keys=list(keys), max_partitions=max_partitions)
    if lower is not None:
        request.lower = lower
    if upper is not None:
        request.upper = upper
    return request
