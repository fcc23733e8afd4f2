"""What goes wrong with records: `RecordError` (the FlowFile's records cannot be read or
written as configured; the FlowFile goes to `failure` whole, with where and why in its
attributes) and `SchemaChanged` (a reader that inferred its schema from the first
records met later ones that do not fit it: the caller infers again over every record
and starts over)."""

from __future__ import annotations

ERROR_MESSAGE = "record.error.message"
ERROR_INDEX = "record.error.index"
ERROR_LINE = "record.error.line"


class RecordError(ValueError):
    """Records that cannot be read or written: a malformed record, a record that does
    not fit the schema, a field a format cannot hold, a record over the size limit.
    `record` is the 0-based index of the record at fault and `line` its 1-based line
    in a text format, when known."""

    def __init__(self, message: str, *, record: int | None = None, line: int | None = None):
        self.message, self.record, self.line = message, record, line
        where = []
        if record is not None:
            where.append(f"record {record}")
        if line is not None:
            where.append(f"line {line}")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)

    def attributes(self) -> dict[str, str]:
        """The attributes a FlowFile sent to `failure` for this error carries."""
        found = {ERROR_MESSAGE: self.message[:1000]}
        if self.record is not None:
            found[ERROR_INDEX] = str(self.record)
        if self.line is not None:
            found[ERROR_LINE] = str(self.line)
        return found


class SchemaChanged(Exception):
    """Records after the first block do not fit the schema inferred from it (a new
    field, a wider type): the reader's `infer_schema` over all of them gives the schema
    to read them with."""

    def __init__(self, record: int, reason: str):
        self.record, self.reason = record, reason
        super().__init__(f"from record {record} on the records do not fit the schema inferred before them: {reason}")
