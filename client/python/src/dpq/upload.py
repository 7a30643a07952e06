"""The CreateDataset / LoadDataset client stream: a header, the CSV bytes in chunks, an end
message with the byte count (dpq.proto: a stream without its end never commits)."""
import csv
import io
import os

from dpq import errors
from dpq.request_builder import COLUMN_TYPES, lookup
from dpq.v1 import dpq_pb2

CHUNK_BYTES = 1 << 20  # as dpqctl: 1 MiB per message, far below the 16 MiB message limit


def csv_bytes(source):
    """The CSV text of a path, bytes or str."""
    if isinstance(source, (bytes, bytearray)):
        return bytes(source)
    if isinstance(source, str) and "\n" in source:
        return source.encode("utf-8")
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as f:
            return f.read()
    raise errors.invalid_argument("csv must be a path, bytes or CSV text")


def header_columns(data):
    """The column names of the CSV's header row."""
    first_line = data.split(b"\n", 1)[0].decode("utf-8").rstrip("\r")
    names = next(csv.reader(io.StringIO(first_line)), [])
    if not names or any(not n for n in names):
        raise errors.invalid_argument("the CSV must start with a header row naming every column")
    return names


def dataset_header(name, privacy_unit, columns, types, bounds, categories):
    """The DatasetHeader: every column's declared type (a type inferred from the rows would reveal
    something of them, docs/threat-model.md), bounds on numeric and categories on text columns."""
    missing = [c for c in columns if c not in types]
    unknown = [c for c in list(types) + list(bounds) + list(categories) if c not in columns]
    if missing:
        raise errors.invalid_argument("declare the type of every column; missing: %s" %
                                      ", ".join(missing))
    if unknown:
        raise errors.invalid_argument("columns not in the CSV header: %s" % ", ".join(unknown))
    header = dpq_pb2.DatasetHeader(name=name, privacy_unit=privacy_unit)
    for column in columns:
        c = header.columns.add(name=column, type=lookup(COLUMN_TYPES, types[column], "type"))
        if column in bounds:
            lower, upper = bounds[column]
            if isinstance(lower, str) or isinstance(upper, str):
                # A date or timestamp column: its bounds as text ('2026-01-01'), checked by dpqd.
                c.lower_text, c.upper_text = str(lower), str(upper)
            else:
                c.lower, c.upper = lower, upper
        c.categories.extend(categories.get(column, ()))
    return header


def stream(header, data):
    """The request messages of one upload."""
    yield dpq_pb2.CreateDatasetRequest(header=header)
    for start in range(0, len(data), CHUNK_BYTES):
        yield dpq_pb2.CreateDatasetRequest(csv_chunk=data[start:start + CHUNK_BYTES])
    yield dpq_pb2.CreateDatasetRequest(end=dpq_pb2.UploadEnd(csv_bytes=len(data)))
