"""`RecordWriter`: the base of the writer services, and `RecordSetWriter`, one writing.

A writer service opens a `RecordSetWriter` on a FlowFile's new content for one schema,
is given record batches of that schema, and is closed once: then the content holds a
whole document of its format (a JSON array closed, a Parquet footer written). The
FlowFile gets `mime.type` and `record.count`, as NiFi's writers set them.
"""

from __future__ import annotations

import io
from typing import BinaryIO

import pyarrow as pa

from ..controller_service import RECORD_WRITER, ControllerService
from .readers import plain_text


class RecordSetWriter:
    """One record set being written: `write` each batch, then `close` once."""

    def write(self, batch: pa.RecordBatch) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class RecordWriter(ControllerService):
    """A writer service: `open` a `RecordSetWriter` on `sink` for `schema`."""

    kind = RECORD_WRITER
    mime_type = "application/octet-stream"

    def open(self, sink: BinaryIO, schema: pa.Schema) -> RecordSetWriter:
        raise NotImplementedError

    def fit(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """`batch` as this writer takes it: a field whose values were of several types
        (read as JSON text, `readers.lenient_schema`) as plain text. The JSON writer
        writes such values as they were."""
        return plain_text(batch)

    def each_record(self, batch: pa.RecordBatch) -> list[bytes]:
        """Each record of `batch` as a document of its own (a Kafka message each): by
        default a record set of one record, opened, written and closed."""
        documents = []
        for row in range(batch.num_rows):
            sink = io.BytesIO()
            written = self.open(sink, batch.schema)
            written.write(batch.slice(row, 1))
            written.close()
            documents.append(sink.getvalue())
        return documents
