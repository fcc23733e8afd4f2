"""Files taken in whole as resources: content written outside the repository, on its
own storage, becomes a claim without a byte being copied.

Spark's executors write a query's result as files on the same HDFS as a clustered
node's content, and compute each file's checksum file (`checksum_format`, one claim
from offset 0) as they do. `take_file` then moves both into a container as a new
resource holding one claim, the whole file:

  1. a fresh resource name (`ResourceAllocator.next_resource`): unique as every
     other resource id, so a dead node's adopter reads it like any other claim;
  2. the checksum file is renamed into its section first, then the resource file
     (the order `format` gives: a reader finds the checksum file beside the resource
     file; a crash between the two leaves a checksum file without its resource,
     which no claim references);
  3. the claim counts one claimant, as a claim a writer closed does: the session
     that took it holds it, and releases it if it rolls back.

The files must be complete and closed: nothing is appended to a taken resource, and
it never enters `open`. It is collected as any other resource once its claimant
count falls to 0. A file and its checksum file are validated before anything moves:
the checksum file's header must be whole and its records must cover the file
exactly, or the take is refused (`ContentRepositoryError`) and both stay where they
are.
"""

from __future__ import annotations

from collections.abc import Mapping

from repositories.claims import ContentClaim
from repositories.storage import StorageError

from .checksum_format import ChecksumFormatError, record_offset, unpack_header, unpack_record
from .errors import ContentRepositoryError, translate_storage_error
from .format import checksum_path, resource_path
from .resource_io import ResourceIO
from .resources import ResourceTable
from .writing import ResourceAllocator


def take_file(
    table: ResourceTable,
    allocator: ResourceAllocator,
    roots: Mapping[str, str],
    resource_io: ResourceIO,
    path: str,
    checksums: str,
) -> ContentClaim:
    """The claim of the whole file at `path` (with its checksum file at `checksums`),
    moved into this repository as a new resource (see the module docstring)."""
    table.check_open()
    storage = resource_io.storage
    try:
        length = storage.status(path).length
        checksum_bytes = storage.read(checksums)
    except StorageError as error:
        raise translate_storage_error(error, path=path) from error
    _check_covers(checksum_bytes, length, path, checksums)
    resource = allocator.next_resource()
    root = roots[resource.container]
    try:
        resource_io.ensure_section(root, resource.section)
        storage.rename(checksums, checksum_path(root, resource))
        storage.rename(path, resource_path(root, resource))
    except StorageError as error:
        raise translate_storage_error(error, claim=resource, path=path) from error
    table.claimants.increment(resource)
    return ContentClaim(resource, 0, length)


def _check_covers(data: bytes, length: int, path: str, checksums: str) -> None:
    """Refuse a checksum file whose header is not whole or whose records do not cover
    the `length` bytes of the file one after another from offset 0."""
    try:
        unpack_header(data)
    except ChecksumFormatError as error:
        raise ContentRepositoryError(
            f"{checksums} is not a usable checksum file for {path}: {error.reason}; the file was not taken"
        ) from None
    covered = 0
    index = 0
    while record_offset(index + 1) <= len(data):
        block = unpack_record(data, record_offset(index))
        if block is None or block.start != covered:
            raise ContentRepositoryError(
                f"{checksums}: record {index} is damaged or out of place (expected "
                f"a block at offset {covered}); the file {path} was not taken"
            )
        covered = block.end
        index += 1
    if covered != length or len(data) != record_offset(index):
        raise ContentRepositoryError(
            f"{checksums} covers {covered} bytes of {path}, which holds {length}; the file was not taken"
        )
