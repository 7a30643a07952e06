"""pandas is optional: imported only when a result is converted."""


def data_frame(records, columns=None):
    """A DataFrame of a list of dicts (`columns` name those of an empty one); ImportError naming
    the Debian package without pandas."""
    try:
        import pandas  # pylint: disable=import-outside-toplevel
    except ImportError as e:
        raise ImportError("to_pandas() needs pandas (Debian: python3-pandas)") from e
    if not records and columns is not None:
        return pandas.DataFrame(columns=list(columns))
    return pandas.DataFrame.from_records(records)
