"""Parquet records: `ParquetReader` and `ParquetRecordSetWriter`, named as NiFi's are.

A Parquet file keeps its metadata in a footer at its end, so the reader needs the
content whole and seekable: it is copied to a spooled temporary file (in memory up to
`SPOOL_IN_MEMORY`, on the local temporary directory beyond), then read a row group
at a time. The schema is the file's; a given Avro schema picks and orders the
columns (casting them where Arrow can), as NiFi's readers do.

The writer buffers batches into row groups (`row_group_size` rows, or 64 MB of
Arrow data, whichever comes first) and writes the footer when it is closed.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from typing import BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq

from ..processor import PropertyDescriptor
from .errors import RecordError
from .readers import SCHEMA_PROPERTIES, Opener, RecordReader, fit_batch
from .writers import RecordSetWriter, RecordWriter

SPOOL_IN_MEMORY = 64 << 20
ROW_GROUP_BYTES = 64 << 20
_COPY = 1 << 20


class ParquetReader(RecordReader):
    type_name = "ParquetReader"
    description = "Reads the records of a Parquet file."
    properties = SCHEMA_PROPERTIES

    def batches(self, open_stream: Opener, schema: pa.Schema | None) -> Iterator[pa.RecordBatch]:
        with tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY) as spool:
            with open_stream() as stream:
                shutil.copyfileobj(stream, spool, _COPY)
            if spool.tell() == 0:
                return
            spool.seek(0)
            try:
                parquet = pq.ParquetFile(spool)
            except (pa.ArrowInvalid, OSError) as error:
                raise RecordError(f"not a Parquet file: {error}") from None
            record = 0
            columns = None
            if schema is not None:
                missing = [name for name in schema.names if name not in parquet.schema_arrow.names]
                columns = [name for name in schema.names if name not in missing]
            try:
                for batch in parquet.iter_batches(columns=columns):
                    if schema is not None:
                        batch = fit_batch(batch, schema, record, _nulls)
                    record += batch.num_rows
                    yield batch
            except (pa.ArrowInvalid, OSError) as error:
                raise RecordError(f"the Parquet file cannot be read: {error}", record=record) from None

    def infer_schema(self, open_stream: Opener) -> pa.Schema:
        for batch in self.batches(open_stream, None):
            return batch.schema
        return pa.schema([])


def _nulls(field: pa.Field, rows: int) -> pa.Array:
    """A column the file lacks: null in every record."""
    return pa.nulls(rows, field.type)


class ParquetRecordSetWriter(RecordWriter):
    type_name = "ParquetRecordSetWriter"
    description = "Writes records as one Parquet file."
    mime_type = "application/vnd.apache.parquet"
    properties = (
        PropertyDescriptor(
            "compression_type", "choice", default="snappy", choices=("snappy", "zstd", "gzip", "lz4", "none")
        ),
        PropertyDescriptor(
            "row_group_size",
            "integer",
            default=1_000_000,
            minimum=1,
            description="the most rows in one row group (also at most 64 MB of Arrow data)",
        ),
    )

    def open(self, sink: BinaryIO, schema: pa.Schema) -> RecordSetWriter:
        return _ParquetSetWriter(sink, schema, self.config["compression_type"], self.config["row_group_size"])


class _ParquetSetWriter(RecordSetWriter):
    def __init__(self, sink: BinaryIO, schema: pa.Schema, compression: str, rows: int):
        try:
            self.writer = pq.ParquetWriter(sink, schema, compression=compression)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as error:
            raise RecordError(f"cannot be written as Parquet: {error}") from None
        self.rows = rows
        self.pending: list[pa.RecordBatch] = []
        self.pending_rows = self.pending_bytes = 0

    def write(self, batch: pa.RecordBatch) -> None:
        self.pending.append(batch)
        self.pending_rows += batch.num_rows
        self.pending_bytes += batch.nbytes
        if self.pending_rows >= self.rows or self.pending_bytes >= ROW_GROUP_BYTES:
            self._flush(whole=self.pending_bytes >= ROW_GROUP_BYTES)

    def _flush(self, whole: bool) -> None:
        """Write full row groups of what is pending (all of it when `whole`)."""
        if not self.pending:
            return
        table = pa.Table.from_batches(self.pending)
        try:
            while table.num_rows >= self.rows or (whole and table.num_rows):
                self.writer.write_table(table.slice(0, self.rows), row_group_size=self.rows)
                table = table.slice(self.rows)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as error:
            raise RecordError(f"cannot be written as Parquet: {error}") from None
        self.pending = table.to_batches()
        self.pending_rows, self.pending_bytes = table.num_rows, table.nbytes

    def close(self) -> None:
        self._flush(whole=True)
        self.writer.close()
