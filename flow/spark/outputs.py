"""Spark's result files become the outputs' content without the node copying them.

Spark writes a batch's result into the batch's staging directory. Each part file then
gets a checksum file beside it (`<part>.crc`, in the content repository's
`checksum_format`: one claim from offset 0, in blocks of the repository's checksum
block size), and the content store moves both into a container as a new resource
(`ContentRepository.take_file`: two renames).

* By reference (a clustered node, `flow.spark.by_reference`): the executors write
  the checksum files, on HDFS; the DataNodes sync a file when it closes.
* On the standalone node, whose content repository and staging are on the same local
  disk (`local_taker`): the node reads each part file once to write its checksum file,
  and syncs both to disk before they are moved, since a session commit syncs only
  the resources its content repository wrote itself. A part file that cannot be moved
  (staging on another device) is copied in instead, as before.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from repositories.content.checksum_format import pack_header
from repositories.content.checksums import BlockChecksummer
from repositories.content.format import CHECKSUM_SUFFIX

if TYPE_CHECKING:
    from flow.session import ProcessSession
    from repositories.content import ContentStore
    from repositories.storage import Storage

READ_CHUNK = 1 << 20


def checksum_file(storage: Storage, path: str, block_size: int, *, sync: bool = False) -> str:
    """Write the checksum file of the whole file at `path` beside it, as a content
    writer makes it for a claim at offset 0 (header, then a record per block); its
    path. With `sync` (local disk), both files are on disk when it returns."""
    target = path + CHECKSUM_SUFFIX
    checksummer = BlockChecksummer(0, block_size)
    with storage.open_read(path) as source, storage.create(target, overwrite=True) as out:
        out.write(pack_header(block_size))
        while chunk := source.read(READ_CHUNK):
            checksummer.update(chunk)
            out.write(checksummer.take())
        checksummer.finish()
        out.write(checksummer.take())
        if sync:
            os.fsync(source.fileno())
            out.sync()
    return target


def local_taker(session: ProcessSession, staging, directory: str):
    """The session's content repository when it can take the part files of the batch
    staged at `directory` by renaming them: staging and every content container on
    the same local filesystem, as on a standalone node. None otherwise (the node then
    copies the part files in)."""
    content = session.content_store
    io = getattr(content, "io", None)
    if not callable(getattr(content, "take_file", None)) or io is None:
        return None
    if getattr(io.storage, "scheme", None) != "file" or getattr(staging.storage, "scheme", None) != "file":
        return None
    try:
        device = os.stat(directory).st_dev
        if any(os.stat(root).st_dev != device for root in content.containers.values()):
            return None
    except OSError:
        return None
    return content


def checksum_local_parts(content: ContentStore, staging, paths) -> list[tuple[str, str]]:
    """(path, checksum file) of each of `paths`, written and synced by the node."""
    block_size = content.config.checksum_block_size
    return [(path, checksum_file(staging.storage, path, block_size, sync=True)) for path in paths]
