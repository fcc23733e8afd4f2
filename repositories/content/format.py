"""On-storage layout of the content repository (the same on local disk and on HDFS).

Content format 1 (this release; format 0 had no checksum files):

    <container-root>/                  one per configured directory (a disk), or on HDFS
                                       .../content/<node>/<container>/
        <section>/                     0 .. 1023, decimal; a resource goes to
                                       section = (sequence // 16) mod 1024
            <resource-id>              a resource claim: raw bytes of many FlowFiles,
                                       appended one after another, no framing
            <resource-id>.crc          its checksum file: a CRC per block of every
                                       claim (byte layout in `checksum_format`)
            archive/<resource-id>      a resource nobody references any more, kept
            archive/<resource-id>.crc  for replay until it is aged off, with its
                                       checksum file

A content claim is (resource claim, offset, length): the bytes [offset, offset+length)
of one resource file. The resource file carries no header and no framing, on purpose:
Spark and any other reader can read a claim straight from (path, offset, length), and
the bytes on local disk and on HDFS are identical, so replicas compare byte for byte.
The checksums live beside it, not in it, for the same reason. A checksum file moves
with its resource file (archive, delete, repair), the resource file first; a reader
looks for it beside the resource file, then in the other place, so a crash between
the two steps never hides it.

What makes a claim "whole" is not in the file: a claim exists only once its writer
closed it and it was synced (its resource file and its checksum file), and only the
FlowFile repository that recorded it refers to it. Bytes past the end of every
referenced claim are the remains of a writer that died; recovery truncates them and
their checksum records (local disk) or leaves them unreferenced until the resource is
destroyed (HDFS, which cannot truncate an open file).

Resource ids are `c1-<start-millis>-<random>-<sequence>`: unique across the cluster, so
an adopter can read a dead node's claims from HDFS without any renaming. The `c1-`
says the resource was written with checksums (format 1): its checksum file must
exist, and a missing one is damage. Format 0 wrote `<start-millis>-<random>-<sequence>`
and no checksum file: such resources are still read, unverified.
"""

from __future__ import annotations

import secrets
import time

from repositories.claims import SECTIONS_PER_CONTAINER, ResourceClaim
from repositories.storage.protocol import join

CONTENT_FORMAT_VERSION = 1
ARCHIVE_DIRECTORY = "archive"
CHECKSUM_SUFFIX = ".crc"
CHECKSUMMED_ID_PREFIX = "c1-"
DEFAULT_MAX_APPENDABLE_CLAIM_SIZE = 50 * 1024  # NiFi 2's nifi.content.claim.max.appendable.size
DEFAULT_ARCHIVE_RETENTION_S = 3 * 3600.0  # nifi.content.repository.archive.max.retention.period
DEFAULT_ARCHIVE_MAX_USAGE = 0.90  # nifi.content.repository.archive.max.usage.percentage


# Sixteen consecutive resources share a section before the next one is used: the
# sections still spread files (no directory grows past a few thousand entries), and a
# group commit of many new resource files fsyncs 1/16 as many directories.
RESOURCES_PER_SECTION_RUN = 16


def section_of(sequence: int) -> int:
    return (sequence // RESOURCES_PER_SECTION_RUN) % SECTIONS_PER_CONTAINER


def section_directory(container_root: str, section: int) -> str:
    return join(container_root, str(section))


def resource_path(container_root: str, resource: ResourceClaim) -> str:
    return join(container_root, str(resource.section), resource.id)


def archive_directory(container_root: str, section: int) -> str:
    return join(container_root, str(section), ARCHIVE_DIRECTORY)


def archive_path(container_root: str, resource: ResourceClaim) -> str:
    return join(container_root, str(resource.section), ARCHIVE_DIRECTORY, resource.id)


def checksum_name(resource: ResourceClaim) -> str:
    return resource.id + CHECKSUM_SUFFIX


def checksum_path(container_root: str, resource: ResourceClaim, archived: bool = False) -> str:
    """The checksum file of `resource`, beside its live (or archived) resource file."""
    if archived:
        return join(container_root, str(resource.section), ARCHIVE_DIRECTORY, checksum_name(resource))
    return join(container_root, str(resource.section), checksum_name(resource))


def resource_id_of_checksum_file(name: str) -> str | None:
    """The resource id a file name is the checksum file of, or None if it is not one."""
    return (
        name[: -len(CHECKSUM_SUFFIX)] if name.endswith(CHECKSUM_SUFFIX) and len(name) > len(CHECKSUM_SUFFIX) else None
    )


def must_have_checksums(resource: ResourceClaim) -> bool:
    """Whether the resource was written with checksums (format 1), so that a missing
    checksum file is damage; a format 0 resource has none and reads unverified."""
    return resource.id.startswith(CHECKSUMMED_ID_PREFIX)


class ResourceIdGenerator:
    """Hands out resource ids, unique across nodes and restarts (see the module doc)."""

    def __init__(self, start_ms: int | None = None):
        started_ms = int(time.time() * 1000) if start_ms is None else start_ms
        self._prefix = f"{CHECKSUMMED_ID_PREFIX}{started_ms}-{secrets.token_hex(3)}-"
        self._next = 0

    def next(self) -> tuple[int, str]:
        # Called under the repository lock: a plain counter is enough.
        sequence = self._next
        self._next += 1
        return sequence, f"{self._prefix}{sequence}"
