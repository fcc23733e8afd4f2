"""The identities of a Spark batch: pure functions of the FlowFiles it takes.

A Spark processor takes a batch of FlowFiles and, in the session commit that removes
them from their queue, creates its outputs. If the node dies or the shard moves before
that commit, the batch's FlowFiles are still queued and the processor (on this node or
on the adopter) runs them again. So that a rerun of the same FlowFiles is recognisably
the same batch, everything about a batch is derived from its input ids:

    batch = batch_id(ids)                    # 20 hex digits of SHA-256 over the sorted ids
    output_id(batch, 3)                      # the id of the output from partition 3
    staging_name(batch, epoch)               # "<batch>-e<epoch>": its staging directory

An output id is a version-5 UUID of the batch and the output's index. The same input
ids give the same output ids only when the output itself is the same on a rerun: the
processor sorts each output partition and fixes the number of partitions for that
(`deterministic`); without it, outputs get random ids.

The epoch in a staging name is the shard's: an adopter stages under a higher epoch
than the node it took the shard from, so two owners never write the same directory.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Iterable

# The namespace of output ids (a fixed, random UUID: output ids of Custody's Spark
# batches never collide with version-5 ids anyone else derives).
OUTPUT_NAMESPACE = uuid.UUID("6f1c2a53-3d1e-4b7a-9a55-0c8e2d4b7f10")
BATCH_ID_LENGTH = 20
_STAGING = re.compile(rf"^(?P<batch>[0-9a-f]{{{BATCH_ID_LENGTH}}})-e(?P<epoch>[0-9]+)\Z")  # `$` passes "\n"
_PART = re.compile(r"^part-(?P<index>\d+)")


def batch_id(flowfile_ids: Iterable[str]) -> str:
    """The batch of these FlowFiles, whatever order they came in."""
    ids = sorted(flowfile_ids)
    if not ids:
        raise ValueError("a batch needs at least one FlowFile")
    digest = hashlib.sha256("\n".join(ids).encode("utf-8")).hexdigest()
    return digest[:BATCH_ID_LENGTH]


def output_id(batch: str, index: int) -> str:
    """The id of the batch's output number `index`."""
    return str(uuid.uuid5(OUTPUT_NAMESPACE, f"{batch}/{index}"))


def staging_name(batch: str, epoch: int) -> str:
    return f"{batch}-e{epoch}"


def parse_staging_name(name: str) -> tuple[str, int] | None:
    """(batch, epoch) of a staging directory's name; None for any other name."""
    match = _STAGING.match(name)
    return (match["batch"], int(match["epoch"])) if match else None


def part_index(file_name: str) -> int | None:
    """The partition number of a file Spark wrote (`part-00003-<uuid>-c000.json`);
    None for its other files (`_SUCCESS`, `.crc` files)."""
    if file_name.startswith((".", "_")):
        return None
    match = _PART.match(file_name)
    return int(match["index"]) if match else None
