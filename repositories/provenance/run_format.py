"""The sorted-run file: one indexed field's rows, sorted, as an Arrow IPC file.

A shard (`index`) indexes events in sorted runs rather than one tantivy document per
event: each event file indexed gives one run of each of three kinds, and runs of a
shard are merged LSM-style (`sorted_runs`):
    uuid      (key, id) of every uuid an event names, sorted by (key, id)
    filename  (key, id) of every event with a filename, sorted by (key, id)
    fields    (id, time, type, component, relationship) of every event, sorted by id
A run lives in the shard's directory, under ``runs/``, named

    <field>-<lowest first id:020d>-<highest first id:020d>.run

after the event files it indexes (a run of one file: both ids are that file's first
id). `<field>` is ``uuid``, ``filename`` or ``fields``. A name that does not parse is
not a run.

The file is an Arrow IPC file (Arrow's "file format", version 5 of its metadata), its
buffers uncompressed so that it is read by memory-mapping it, without copy:

    offset 0      b"ARROW1\\0\\0"            magic (6 bytes) and 2 bytes of padding
    8             the schema message        flatbuffer, with the metadata below
    ...           dictionary batches        of a fields run: the values of its three
                                            dictionary columns
    ...           one record batch message  the columns, 64-byte aligned
    ...           the footer                flatbuffer: schema and the batch's offset
    end - 10      footer length             int32, little-endian
    end - 6       b"ARROW1"                 magic

The schema of a uuid or filename run (`KEY_SCHEMA`), in this order, none nullable:
    key      utf8    the uuid's index key (`index_documents.uuid_key`) or the filename
    id       uint64  the event id
A query by uuid or filename with a time range decides a hit by its event file's time
range (in the shard manifest), and reads the time of a hit of a file that straddles a
bound from the fields runs, which hold it for every event (`index.time_range_verdicts`).
Runs of version 1 (`KEY_SCHEMA_V1`) had a third column, ``time_ms int64``, the event's
time: 17 bytes per event over a uuid and a filename run (index bytes per event on the
benchmark's mix: 110 with it, 93 without). They are still read (the column is not
used), and a merge writes their rows into a run of this version.
Rows are sorted by (key, id) in byte order of the key's UTF-8, with no two rows equal:
an event that names one key twice (a uuid that is also its own child, two uuids that
share a key) has one row for it.

The schema of a fields run (`FIELDS_SCHEMA`), one row per event, sorted by id:
    id            uint64                     the event id
    time_ms       int64                      the event's time
    type          dictionary<int32, utf8>    the event type's NiFi name
    component     dictionary<int32, utf8>    the component id
    relationship  dictionary<int32, utf8>    the relationship; null when the event has
                                             none or an empty one (never indexed)

Schema metadata (UTF-8 keys and values):
    custody.run.version  "2" ("1": the uuid and filename runs have a time column)
    custody.run.field    "uuid" or "filename"
    custody.run.files    the first ids of the event files indexed, comma-separated,
                         increasing

A run is written whole as ``<name>.partial``, fsynced, renamed to its name, and the
directory fsynced; only then may a shard manifest list it (see `index`). Arrow checks
the magic, the footer's length and the flatbuffers when it opens the file, and every
offset and dictionary index when it is read (full validation); a file that fails, or
whose metadata is not this, is damaged (`CorruptFileError`). There is no checksum: a
bit flipped inside a key, an id or a time is not detected (a uuid hit is checked
against the event it names, `reading`; a filename hit is not).
"""

from __future__ import annotations

import os
import re

import pyarrow as pa
import pyarrow.ipc as ipc

from . import files
from .errors import CorruptFileError

VERSION = "2"
_VERSION_1 = "1"
FIELDS = ("uuid", "filename", "fields")
KEY_FIELDS = ("uuid", "filename")
DIRECTORY = "runs"
SUFFIX = ".run"
PARTIAL = ".partial"

KEY_SCHEMA = pa.schema(
    [
        pa.field("key", pa.string(), nullable=False),
        pa.field("id", pa.uint64(), nullable=False),
    ]
)
KEY_SCHEMA_V1 = KEY_SCHEMA.append(pa.field("time_ms", pa.int64(), nullable=False))
_DICTIONARY = pa.dictionary(pa.int32(), pa.string())
FIELDS_SCHEMA = pa.schema(
    [
        pa.field("id", pa.uint64(), nullable=False),
        pa.field("time_ms", pa.int64(), nullable=False),
        pa.field("type", _DICTIONARY, nullable=False),
        pa.field("component", _DICTIONARY, nullable=False),
        pa.field("relationship", _DICTIONARY),
    ]
)


def schema_of(field: str, version: str = VERSION) -> pa.Schema:
    """The schema of a run of `field` written by format `version` (this one's by default)."""
    if field == "fields":
        return FIELDS_SCHEMA
    return KEY_SCHEMA_V1 if version == _VERSION_1 else KEY_SCHEMA


_VERSION_KEY = b"custody.run.version"
_FIELD_KEY = b"custody.run.field"
_FILES_KEY = b"custody.run.files"
_NAME = re.compile(r"^(uuid|filename|fields)-([0-9]{20})-([0-9]{20})\.run\Z")


def run_name(field: str, first_ids: list[int]) -> str:
    """The name of the run of `field` indexing the event files starting at `first_ids`."""
    if field not in FIELDS or not first_ids:
        raise ValueError(f"no run of field {field!r} over files {first_ids!r}")
    return f"{field}-{min(first_ids):020d}-{max(first_ids):020d}{SUFFIX}"


def parse_name(name: str) -> tuple[str, int, int] | None:
    """(field, lowest first id, highest first id) of a run's file name, else None."""
    match = _NAME.match(name)
    if match is None:
        return None
    return match.group(1), int(match.group(2)), int(match.group(3))


def write_run(directory: str, field: str, first_ids: list[int], rows: pa.Table) -> str:
    """Write `rows` (sorted, in `schema_of(field)`) as the run of `field` over `first_ids`, whole:
    partial file, fsync, rename, fsync of the directory. Returns the run's name."""
    name = run_name(field, first_ids)
    path = os.path.join(directory, name)
    metadata = {
        _VERSION_KEY: VERSION.encode(),
        _FIELD_KEY: field.encode(),
        _FILES_KEY: ",".join(str(i) for i in sorted(first_ids)).encode(),
    }
    schema = schema_of(field)
    table = rows.select(schema.names).cast(schema).replace_schema_metadata(metadata)
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=max(1, table.num_rows))
    files.delete(path + PARTIAL)
    files.write_new(path + PARTIAL, [sink.getvalue()])
    files.rename(path + PARTIAL, path)
    files.fsync_directory(directory)
    return name


def read_run(path: str, field: str) -> pa.Table:
    """The rows of the run at `path` (memory-mapped: no copy), in the schema of the
    version that wrote it; CorruptFileError if it is not a run of `field`."""
    try:
        source = pa.memory_map(path)
        table = ipc.open_file(source).read_all()
        # Every offset and dictionary index within its buffer: a damaged run is refused
        # here rather than read out of bounds by a lookup.
        table.validate(full=True)
    except (pa.ArrowInvalid, OSError, ValueError) as error:
        if isinstance(error, FileNotFoundError):
            raise
        raise _damaged(path, f"Arrow cannot read it: {error}") from None
    metadata = table.schema.metadata or {}
    version = metadata.get(_VERSION_KEY)
    if (
        version not in (VERSION.encode(), _VERSION_1.encode())
        or metadata.get(_FIELD_KEY) != field.encode()
        or not table.schema.remove_metadata().equals(schema_of(field, version.decode()))
    ):
        raise _damaged(path, "its schema or metadata is not that of a sorted run")
    return table.combine_chunks() if table.column("id").num_chunks != 1 else table


def _damaged(path: str, reason: str) -> CorruptFileError:
    return CorruptFileError(
        path,
        f"{reason}. The index is built from the event files: move the shard's directory "
        "away, and the next start indexes its event files again",
    )
