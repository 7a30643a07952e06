"""DP SQL (AnalystService.ExecuteSql / ExplainSql): results as rows, and as a DataFrame with each
released column's interval beside it (`<column>_lower`, `<column>_upper`)."""
import dataclasses
from typing import List

from dpq import errors, tables
from dpq.results import Budget, _FromMessage, message_dict
from dpq.v1 import dpq_pb2


def require_sql():
    """UNIMPLEMENTED when the API these stubs were generated from has no ExecuteSql."""
    if not hasattr(dpq_pb2, "SqlRequest"):
        raise errors.error_for("UNIMPLEMENTED", "this dpq package was built from a proto without "
                                                "AnalystService.ExecuteSql; rebuild it")


def cell_value(cell, column_type):
    if cell.null:
        return None
    if column_type == "string":
        return cell.text
    if column_type.startswith("array"):
        return list(cell.array)
    if column_type == "int64":  # released counts are integers, as dpqctl prints them
        return int(cell.number)
    return cell.number


@dataclasses.dataclass
class SqlTable:
    """One statement's result: column names and types, and the rows in column order."""
    columns: List[str]
    types: List[str]
    rows: List[list]
    message: object = dataclasses.field(default=None, repr=False, compare=False)

    @classmethod
    def from_message(cls, m):
        types = [c.type for c in m.columns]
        rows = [[cell_value(cell, types[i]) for i, cell in enumerate(r.cells)] for r in m.rows]
        return cls([c.name for c in m.columns], types, rows, m)

    def records(self):
        """Dicts by column name; a released value's interval follows it as <name>_lower/_upper."""
        out = []
        for row_message, row in zip(self.message.rows, self.rows):
            record = {}
            for i, name in enumerate(self.columns):
                record[name] = row[i]
                cell = row_message.cells[i]
                if cell.released:
                    record[name + "_lower"] = cell.interval.lower
                    record[name + "_upper"] = cell.interval.upper
            out.append(record)
        return out

    def to_pandas(self):
        return tables.data_frame(self.records(), self.columns)


@dataclasses.dataclass
class SqlResult(_FromMessage):
    """The answer of a SQL script: one SqlTable per statement, and the joint charge."""
    results: List[SqlTable]
    epsilon: float
    delta: float
    budget: Budget
    dataset: str
    request_id: str
    cached: bool
    replayed: bool
    epsilon_sum: float = 0.0  # the parts' charges added up (epsilon is lower when priced jointly)
    delta_sum: float = 0.0
    message: object = dataclasses.field(default=None, repr=False, compare=False)

    @classmethod
    def from_message(cls, m):
        return cls([SqlTable.from_message(r) for r in m.results], m.epsilon, m.delta,
                   Budget.from_message(m.budget), m.dataset, m.request_id, m.cached, m.replayed,
                   m.epsilon_sum, m.delta_sum, m)

    @property
    def columns(self):
        return self.results[0].columns if self.results else []

    @property
    def rows(self):
        """The rows of the first (usually only) statement."""
        return self.results[0].rows if self.results else []

    def to_pandas(self):
        """The first statement's rows as a DataFrame (results[i].to_pandas() for the others)."""
        return self.results[0].to_pandas() if self.results else tables.data_frame([])


def sql_request(statement, request_id="", confidence=0.95, joint_delta=0.0):
    require_sql()
    if not isinstance(statement, str) or not statement.strip():
        raise errors.invalid_argument("statement must be a non-empty string")
    return dpq_pb2.SqlRequest(statement=statement, request_id=request_id, confidence=confidence,
                              joint_delta=joint_delta)


def explain_dict(message):
    """The plan as a dict. Each part's "error_basis" says what its "error" measures: "value",
    "rank" (quantiles), "per_count" (AVG: the noisy sum's half-width; the mean's is about that
    divided by the group's count, unknown before the query) or "not_stated" (VAR_POP,
    STDDEV_POP), whose "error" is None."""
    out = message_dict(message)
    for part in out.get("parts", []):
        if part.get("error_basis") == "not_stated":
            part["error"] = None
    return out
