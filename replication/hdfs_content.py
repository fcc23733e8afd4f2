"""The HDFS content repository: the same `ContentRepository`, with resource files on HDFS.

Layout: `<base>/content/<node>/<container>/<section>/<resource-id>` (see
`repositories.content.format`), so any node can read any node's claims, e.g. after
a takeover, with `open_hdfs_content_reader`.

Writes go through the `Storage` (hdfs-native; `sync()` is hsync); reads go through the
storage's pyarrow filesystem (hdfs-native's fsspec under `pyarrow.fs.PyFileSystem`).

Why a synced claim may not be readable yet: hdfs-native cannot read the unfinished
last block of a file that is still open for writing. Two modes follow from that:

* By default (`keep_open=False`) a claim is complete when its bytes are hsync'd *and*
  its resource file is closed: `close_resources_on_sync` is on, and every sync closes
  the resource files nobody is writing. Simple, and every synced claim is readable
  by anyone, but each session commit then pays a create and a close per resource
  file (the close waits for the NameNode to complete the file: tens of ms).
* With `keep_open=True` (a clustered node) resource files stay open across commits,
  as the WAL's do: a commit costs one hsync per open resource (and its checksum
  file, side by side), and a resource file is closed when it is full or retired, on a
  background thread. A claim in a resource that is still open is durable but not yet
  readable from HDFS; whoever reads it from there must first make its resource
  readable: its own node stops appending to it and closes it
  (`ReplicatingContentRepository.seal`), and a reader of a dead node's content
  recovers the file's lease (below). A node never recovers the lease on its own live
  files: that would fence itself.

A file left open by a node that died (or whose close failed after the claims were
hsynced) reads only to its last finished block until its lease is recovered: a reader
of a dead node's content does that (`open_hdfs_content_reader(...,
recover_open_files=True)`), for a resource file and its checksum file together.

Sections are created on first use, not 1024 at start-up (each mkdir is a NameNode
round trip).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable

from repositories.claims import ResourceClaim
from repositories.content.archive import ArchivePolicy
from repositories.content.config import ContentRepositoryConfig
from repositories.content.read_windows import ReadWindows
from repositories.content.repository import ContentRepository
from repositories.content.resource_io import StorageResourceIO
from repositories.storage.protocol import Storage, join

DEFAULT_HDFS_CONFIG = ContentRepositoryConfig(
    close_resources_on_sync=True,
    # The HDFS cluster's capacity is not this node's to police: age off by time only.
    archive=ArchivePolicy(max_usage=None),
    write_buffer_size=1 << 20,
)


def hdfs_content_root(base: str, node: str) -> str:
    ResourceClaim(node, 0, "probe")  # a node id is a path component: same rules as a container
    return join(base, "content", node)


def open_hdfs_content_repository(
    storage: Storage,
    base: str,
    node: str,
    containers: Iterable[str] = ("default",),
    config: ContentRepositoryConfig | None = None,
    *,
    clock: Callable[[], float] = time.time,
    name: str | None = None,
    prepare: bool = True,
    recover_open_files: bool = False,
    keep_open: bool = False,
    cache: ReadWindows | None = None,
) -> ContentRepository:
    """`keep_open`: resource files stay open across syncs (see the module docstring).
    `cache`: files read a window at a time and kept (`repositories.content.read_windows`),
    for a reader of a dead writer's files only."""
    config = dataclasses.replace(
        config or DEFAULT_HDFS_CONFIG, close_resources_on_sync=not keep_open, close_in_background=keep_open
    )
    root = hdfs_content_root(base, node)
    roots = {container: join(root, container) for container in containers}
    return ContentRepository(
        roots,
        StorageResourceIO(storage, recover_open_files=recover_open_files, cache=cache),
        config,
        clock=clock,
        name=name or f"hdfs:{node}",
        prepare=prepare,
    )


def open_hdfs_content_reader(
    storage: Storage,
    base: str,
    node: str,
    containers: Iterable[str] = ("default",),
    *,
    recover_open_files: bool = False,
    cache: ReadWindows | None = None,
) -> ContentRepository:
    """Another node's claims on HDFS, for reading (after a takeover). Creates nothing.

    `recover_open_files`: only when that node is dead (its incarnation was taken over).
    A claim in a file the node left open (its close failed after the claim was hsynced)
    is unreadable to hdfs-native until the file's lease is recovered; the reader then
    recovers it, which would also fence a writer that is still alive. `cache`: only
    then too: its files are read a window at a time, and the next claims of a window
    from memory (`repositories.content.read_windows`)."""
    return open_hdfs_content_repository(
        storage,
        base,
        node,
        containers,
        name=f"hdfs:{node}(adopted)",
        prepare=False,
        recover_open_files=recover_open_files,
        cache=cache,
    )
