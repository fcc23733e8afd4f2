"""Verification of a whole resource file against its checksum file (what fsck runs).

`check_resource` reads the resource file once, block by block in the order of the
checksum records, and says what it found (`ResourceCheck`):

* `verified`   - every record is sound and every block matches its CRC;
* `damaged`    - some block does not match, or lies past the end of the resource file,
                 or its record is damaged, or records skip bytes, or the checksum file
                 is missing (format 1) or its header cannot be trusted. `failures` names
                 each bad range of the resource file, adjacent ones merged;
* `unverified` - a resource of format 0, which has no checksum file.

Bytes past the last record (`covered`) belong to no completed claim (an aborted writer's,
or a crash's): they are neither checked nor a failure. `records` holds the sound
records, packed, so that two replicas' copies can be compared without reading either
again: replicas that mirror the same claims write the same records.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from repositories.claims import ResourceClaim

from .checksum_format import ChecksumFormatError, pack_record
from .checksums import ChecksumRecords
from .format import must_have_checksums

VERIFIED = "verified"
DAMAGED = "damaged"
UNVERIFIED = "unverified"


@dataclass
class BlockFailure:
    """Bytes [start, end) of the resource file that cannot be trusted; `end` None: up to
    wherever the next sound record starts, which no record says."""

    start: int
    end: int | None
    reason: str

    def describe(self) -> str:
        span = f"bytes {self.start}..{self.end}" if self.end is not None else f"from byte {self.start}"
        return f"{span}: {self.reason}"


@dataclass
class ResourceCheck:
    resource: ResourceClaim
    replica: str
    archived: bool
    length: int  # bytes in the resource file
    status: str = VERIFIED
    covered: int = 0  # the records describe the bytes [0, covered)
    failures: list[BlockFailure] = field(default_factory=list)
    records: bytes = b""

    def fail(self, start: int, end: int | None, reason: str) -> None:
        last = self.failures[-1] if self.failures else None
        if last is not None and last.reason == reason and last.end == start and end is not None:
            last.end = end
        else:
            self.failures.append(BlockFailure(start, end, reason))
        self.status = DAMAGED


def check_resource(
    replica: str, resource: ResourceClaim, archived: bool, handle, size: int, checksum_handle, checksum_size: int
) -> ResourceCheck:
    """Check the resource file (`handle`, `size` bytes) against its checksum file
    (`checksum_handle`, or None if there is none). Reads the resource file once."""
    check = ResourceCheck(resource, replica, archived, size)
    if checksum_handle is None:
        if must_have_checksums(resource):
            check.fail(0, None, "the checksum file is missing")
        else:
            check.status = UNVERIFIED
        return check
    try:
        records = ChecksumRecords(checksum_handle, checksum_size)
    except ChecksumFormatError as error:
        check.fail(0, None, f"the checksum file is damaged at byte {error.offset}: {error.reason}")
        return check
    sound = bytearray()
    expected = 0  # the first claim of a resource starts at 0, each block where the last ended
    damaged_record: int | None = None
    position = 0
    handle.seek(0)
    for index, block in records.records():
        if block is None:
            if damaged_record is None:
                damaged_record = index
            continue
        if damaged_record is not None:
            check.fail(expected, block.start, f"checksum record {damaged_record} is damaged")
            damaged_record = None
        elif block.start != expected:
            low, high = sorted((expected, block.start))
            check.fail(low, high, f"the checksum records jump from byte {expected} to {block.start}")
        sound += pack_record(block)
        expected = block.end
        if block.end > size:
            check.fail(max(block.start, size), block.end, f"the resource file ends at byte {size}")
            continue
        if position != block.start:
            handle.seek(block.start)
        data = _read_exactly(handle, block.length)
        position = block.start + len(data)
        if len(data) < block.length:
            check.fail(block.start + len(data), block.end, f"the resource file reads only {position} bytes")
        elif records.block_crc(data) != block.crc:
            check.fail(block.start, block.end, "the bytes do not match their checksum")
    if damaged_record is not None:
        check.fail(expected, None, f"checksum record {damaged_record} is damaged")
    check.covered = expected
    check.records = bytes(sound)
    return check


def _read_exactly(handle, length: int) -> bytes:
    chunks, left = [], length
    while left > 0:
        chunk = handle.read(left)
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
