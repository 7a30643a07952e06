"""Typed results of the dpq client, built from the response messages.

Every result keeps its response message in `.message` and gives it as a dict (proto field names,
fields at their defaults included) through `.to_dict()`. Query answers convert to a pandas
DataFrame with `.to_pandas()`: one row per released value, the interval as `lower`/`upper` columns.
"""
import dataclasses
from typing import List, Optional, Tuple, Union

from google.protobuf import json_format

from dpq import tables


def enum_name(enum_type, number, prefix):
    """`MECHANISM_LAPLACE` -> 'laplace' (the spelling dpqctl uses)."""
    try:
        name = enum_type.Name(number)
    except ValueError:
        return str(number)
    return name[len(prefix):].lower() if name.startswith(prefix) else name.lower()


def components_of(m):
    """Every noise component of a release or plan (NoiseComponent) as a dict: statistic
    ("count", "sum", "sum_squares", "bucket_counts"), mechanism, epsilon, delta, sensitivity,
    noise_scale."""
    from dpq.v1 import dpq_pb2  # pylint: disable=import-outside-toplevel
    return tuple(dict(statistic=c.statistic,
                      mechanism=enum_name(dpq_pb2.Mechanism, c.mechanism, "MECHANISM_"),
                      epsilon=c.epsilon, delta=c.delta, sensitivity=c.sensitivity,
                      noise_scale=c.noise_scale) for c in m.components)


def message_dict(message):
    try:
        return json_format.MessageToDict(message, preserving_proto_field_name=True,
                                         including_default_value_fields=True)
    except TypeError:  # protobuf >= 5.26 renamed the option
        return json_format.MessageToDict(message, preserving_proto_field_name=True,
                                         always_print_fields_with_no_presence=True)


class _FromMessage:
    """Mix-in: the response message and its dict form."""

    message = None

    def to_dict(self):
        return message_dict(self.message)


@dataclasses.dataclass
class Interval:
    """Holds the true value with probability >= `confidence` (from the noise alone)."""
    confidence: float
    lower: float
    upper: float

    @classmethod
    def from_message(cls, m):
        return cls(m.confidence, m.lower, m.upper)


@dataclasses.dataclass
class Budget(_FromMessage):
    dataset: str
    accountant: str
    epsilon_total: float
    epsilon_spent: float
    epsilon_remaining: float
    delta_total: float
    delta_spent: float
    delta_remaining: float
    preset: str = ""
    max_query_epsilon: Optional[float] = None
    warnings: Tuple[str, ...] = ()
    message: object = dataclasses.field(default=None, repr=False, compare=False)

    @classmethod
    def from_message(cls, m):
        return cls(m.dataset, m.accountant, m.epsilon_total, m.epsilon_spent, m.epsilon_remaining,
                   m.delta_total, m.delta_spent, m.delta_remaining, m.preset,
                   m.max_query_epsilon if m.HasField("max_query_epsilon") else None,
                   tuple(m.warnings), m)


@dataclasses.dataclass
class Row:
    """One released value: group-by `key` (None where the group column is NULL), `label` (a
    quantile level, a bin), value, interval."""
    key: Tuple[Optional[str], ...]
    label: str
    value: float
    interval: Interval
    noise_scale: float
    rank_error: float = 0.0

    @classmethod
    def from_message(cls, m):
        nulls = set(m.null_keys)
        key = tuple(None if i in nulls else k for i, k in enumerate(m.key))
        return cls(key, m.label, m.value, Interval.from_message(m.interval),
                   m.noise_scale, m.rank_error)


@dataclasses.dataclass
class QueryResult(_FromMessage):
    """A released answer. `value`/`interval` are the first row's; `rows` holds every value."""
    value: float
    interval: Interval
    rows: List[Row]
    aggregate: str
    mechanism: str
    epsilon: float
    delta: float
    noise_scale: float
    sensitivity: float
    max_contributions: int
    budget: Budget
    request_id: str
    replayed: bool
    cached: bool
    lower: Optional[float] = None
    upper: Optional[float] = None
    count_noise_scale: float = 0.0
    warnings: Tuple[str, ...] = ()
    group_by: Tuple[str, ...] = ()
    components: Tuple[dict, ...] = ()  # every noise component (components_of)
    message: object = dataclasses.field(default=None, repr=False, compare=False)

    @classmethod
    def from_message(cls, m, aggregate, group_by=()):
        from dpq.v1 import dpq_pb2  # pylint: disable=import-outside-toplevel
        return cls(
            value=m.value, interval=Interval.from_message(m.interval),
            rows=[Row.from_message(r) for r in m.rows], aggregate=aggregate,
            mechanism=enum_name(dpq_pb2.Mechanism, m.mechanism, "MECHANISM_"),
            epsilon=m.epsilon, delta=m.delta, noise_scale=m.noise_scale,
            sensitivity=m.sensitivity, max_contributions=m.max_contributions,
            budget=Budget.from_message(m.budget), request_id=m.request_id, replayed=m.replayed,
            cached=m.cached, lower=m.lower if m.HasField("lower") else None,
            upper=m.upper if m.HasField("upper") else None,
            count_noise_scale=m.count_noise_scale, warnings=tuple(m.warnings),
            group_by=tuple(group_by), components=components_of(m), message=m)

    def records(self):
        """One dict per released value: the group-by columns by name, label, value, the interval
        (lower, upper, confidence), noise_scale, and rank_error for quantiles."""
        out = []
        for row in self.rows:
            record = {}
            for i, column in enumerate(self.group_by):
                record[column] = row.key[i] if i < len(row.key) else None
            record.update(label=row.label, value=row.value, lower=row.interval.lower,
                          upper=row.interval.upper, confidence=row.interval.confidence,
                          noise_scale=row.noise_scale)
            if self.aggregate == "quantile":
                record["rank_error"] = row.rank_error
            out.append(record)
        return out

    def to_pandas(self):
        return tables.data_frame(self.records())


@dataclasses.dataclass
class BatchResult(_FromMessage):
    """The answers of a query batch, in request order, and its joint charge."""
    answers: List[QueryResult]
    epsilon: float
    delta: float
    epsilon_sum: float
    budget: Budget
    request_id: str
    replayed: bool
    message: object = dataclasses.field(default=None, repr=False, compare=False)

    @classmethod
    def from_message(cls, m, aggregates, group_bys):
        answers = [QueryResult.from_message(a, aggregates[i], group_bys[i])
                   for i, a in enumerate(m.answers)]
        return cls(answers, m.epsilon, m.delta, m.epsilon_sum, Budget.from_message(m.budget),
                   m.request_id, m.replayed, m)

    def to_pandas(self):
        """Every answer's rows, with the answer's position in the batch as column `query` and its
        aggregate as `aggregate`."""
        records = []
        for i, answer in enumerate(self.answers):
            for record in answer.records():
                records.append(dict(query=i, aggregate=answer.aggregate, **record))
        return tables.data_frame(records)


@dataclasses.dataclass
class Plan(_FromMessage):
    """What a query would cost and how accurate it would be; nothing was charged."""
    epsilon: float
    delta: float
    mechanism: str
    sensitivity: float
    noise_scale: float
    error: float
    confidence: float
    rank_error: bool
    warnings: Tuple[str, ...] = ()
    message: object = dataclasses.field(default=None, repr=False, compare=False)
    # What the query would use: every noise component (components_of); a quantile's method
    # ({"method": "exponential" | "histogram", "epsilon"}, else None); the released keys
    # ({"source": "none" | "declared" | "selected", "keys", "selection_epsilon", ...}); the value's
    # per-row expression ({"canonical", "lower", "upper", "derived", "derivation"}, else None).
    components: Tuple[dict, ...] = ()
    quantile: Optional[dict] = None
    keys: Optional[dict] = None
    value_expression: Optional[dict] = None

    @classmethod
    def from_message(cls, m):
        from dpq.v1 import dpq_pb2  # pylint: disable=import-outside-toplevel
        return cls(m.epsilon, m.delta, enum_name(dpq_pb2.Mechanism, m.mechanism, "MECHANISM_"),
                   m.sensitivity, m.noise_scale, m.error, m.confidence, m.rank_error,
                   tuple(m.warnings), m, components=components_of(m),
                   quantile=message_dict(m.quantile) if m.HasField("quantile") else None,
                   keys=message_dict(m.keys) if m.HasField("keys") else None,
                   value_expression=(message_dict(m.value_expression)
                                     if m.HasField("value_expression") else None))


@dataclasses.dataclass
class Column:
    name: str
    type: str
    # Numbers; for a date or timestamp column its bounds as text ('2026-01-01').
    lower: Optional[Union[float, str]] = None
    upper: Optional[Union[float, str]] = None
    categories: Tuple[str, ...] = ()

    @classmethod
    def from_message(cls, m):
        from dpq.v1 import dpq_pb2  # pylint: disable=import-outside-toplevel

        def bound(number, text):
            if m.HasField(text):
                return getattr(m, text)
            return getattr(m, number) if m.HasField(number) else None
        return cls(m.name, enum_name(dpq_pb2.ColumnType, m.type, "COLUMN_TYPE_"),
                   bound("lower", "lower_text"), bound("upper", "upper_text"),
                   tuple(m.categories))


@dataclasses.dataclass
class Dataset(_FromMessage):
    name: str
    privacy_unit: str
    columns: List[Column]
    version: int
    created_at: str
    message: object = dataclasses.field(default=None, repr=False, compare=False)

    @classmethod
    def from_message(cls, m):
        return cls(m.name, m.privacy_unit, [Column.from_message(c) for c in m.columns], m.version,
                   m.created_at, m)


@dataclasses.dataclass
class LoadResult(_FromMessage):
    dataset: Dataset
    rows_loaded: int
    message: object = dataclasses.field(default=None, repr=False, compare=False)


@dataclasses.dataclass
class Credentials(_FromMessage):
    """A principal's token, shown exactly once (the server keeps only its hash)."""
    name: str
    role: str
    token: str = dataclasses.field(repr=False)
    message: object = dataclasses.field(default=None, repr=False, compare=False)

    @classmethod
    def from_message(cls, m):
        from dpq.v1 import dpq_pb2  # pylint: disable=import-outside-toplevel
        return cls(m.name, enum_name(dpq_pb2.Role, m.role, "ROLE_"), m.token, m)


class Records(list):
    """A list of response entries (audit rows, grants, ...) as dicts with proto field names."""

    def __init__(self, messages):
        super().__init__(message_dict(m) for m in messages)

    def to_pandas(self):
        return tables.data_frame(list(self))
