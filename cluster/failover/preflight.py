"""Before a node takes an incarnation: can it write to the cluster's HDFS at all?

An incarnation is a promise to the cluster: a member znode, a home shard, a WAL on
HDFS. Taken while HDFS is still starting (NameNode in safe mode, no DataNode
registered yet), it dies at once and leaves a dead incarnation and a shard for the
leader to retire, and a node that retries every second leaves dozens. So the node
first writes, hsyncs and deletes a small probe file, `<root>/<cluster>/probes/<node>`,
which needs what a WAL commit needs (a NameNode that takes writes and a pipeline of
DataNodes). Only when that works does it take an incarnation; until then it waits with
backoff (`cluster.node.lifecycle`) under none.
"""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING

from ..core.layout import ClusterLayout
from ..errors import StorageUnavailable

if TYPE_CHECKING:
    from repositories.storage import Storage

PROBE = b"custody write probe\n"


def probe_storage(storage: Storage, layout: ClusterLayout, node: str) -> None:
    """Write, hsync, close and delete the node's probe file; `StorageUnavailable` if any
    step fails. Also makes the cluster's shard directory, as joining needs it."""
    path = layout.probe_file(node)
    try:
        storage.mkdir(layout.hdfs_shards, parents=True, exist_ok=True)
        storage.mkdir(posixpath.dirname(path), parents=True, exist_ok=True)
        probe = storage.create(path, overwrite=True)
        try:
            probe.write(PROBE)
            probe.sync()
        finally:
            probe.close()
        storage.delete(path)
    except Exception as error:  # noqa: BLE001 - every storage failure means "not yet"
        raise StorageUnavailable(path, error) from error
