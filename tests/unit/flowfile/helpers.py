"""Shared builders for the FlowFile WAL tests."""

from __future__ import annotations

from repositories.claims import ContentClaim, ResourceClaim
from repositories.flowfile import FlowFileRecord, WriteAheadLog


def make_record(n: int, version: int = 0, queue: str = "q1") -> FlowFileRecord:
    resource = ResourceClaim("default", n % 7, f"res-{n // 5}")
    attributes = {f"attr{j}": f"value-{n}-{j}-v{version}" for j in range(3)}
    attributes["filename"] = f"file-{n}.txt"
    return FlowFileRecord(
        f"ff-{n}", attributes, ContentClaim(resource, n * 10, 10 + version), queue, 10 + version, 1_000 + n, 900, 0
    )


def open_wal(storage, directory: str, **options) -> WriteAheadLog:
    options.setdefault("partitions", 2)
    options.setdefault("checkpoint_interval", None)
    return WriteAheadLog(storage, directory, **options)
