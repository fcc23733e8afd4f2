"""Warm the block recovery of DataNodes that have just started.

Every takeover waits for HDFS's lease recovery of the dead owner's open files, and a
lease recovery is a block recovery: a DataNode (the primary) calls each other DataNode
holding a replica over InterDatanodeProtocol, then tells the NameNode. The first such
call between two DataNode processes costs far more than the later ones: the called
DataNode accepts its first connection of that protocol and both run the recovery code
for the first time (0.2-0.5 s a pair on a quiet 2-core machine, up to 2 s while ten
nodes start beside it; a few milliseconds afterwards). A DataNode of a running
cluster made those calls long ago; one the harness has just started has not, so
without this the first takeover after `custody services up`, a drill's start or a
DataNode's restart measured the DataNodes' warm-up instead of a takeover.

So the harness, once its DataNodes have registered, does what a takeover does until
every DataNode has been the primary of a recovery (and so has called each other one):
a round writes `FILES_PER_ROUND` files with a replica on every DataNode, hsynced by one
client, has another client recover their leases while the first still holds them, and
deletes them. The NameNode makes the replica whose DataNode heartbeat last the
primary, so the leases are asked for half a heartbeat apart, not in one burst. Which
DataNode led a recovery the harness reads from the DataNodes' logs (the metrics on
/jmx are cached for seconds). At most `MAX_ROUNDS` rounds; a second or two at
start, nothing after. It writes only under `WARM_DIRECTORY`, and deletes what it wrote.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from .process import wait_until

log = logging.getLogger(__name__)

FILES_PER_ROUND = 6
MAX_ROUNDS = 20
ASK_SPACING = 0.05  # half a DataNode heartbeat (100 ms): each ask may find another one latest
WARM_DIRECTORY = "/tmp/custody-harness-warmup"
# The warm-up's files are a few bytes: small blocks, so that the NameNode, which needs
# room for a whole block of the file's size on a DataNode, places them on a nearly
# full one too.
BLOCK_SIZE = 1 << 20
# A DataNode a test froze (SIGSTOP) fails the warm-up in seconds, not hdfs-native's minute.
CLIENT_CONFIG = {"dfs.client.socket-timeout": "5000"}


@dataclass(frozen=True)
class Warmup:
    rounds: int
    primaries: tuple[int, ...]  # per DataNode, how many recoveries it was the primary of
    seconds: float

    @property
    def complete(self) -> bool:
        return all(self.primaries)


def warm_block_recovery(
    url: str,
    recoveries_led: Callable[[], list[int]],
    *,
    files_per_round: int = FILES_PER_ROUND,
    max_rounds: int = MAX_ROUNDS,
    timeout: float = 60.0,
) -> Warmup:
    """Warm the block recovery of the DataNodes of the HDFS at `url` until each has been
    a primary, or `max_rounds` rounds. `recoveries_led()`: per DataNode, how many
    block recoveries it has led so far. Raises `ServiceError`
    when HDFS does not close a round's files within `timeout`."""
    import hdfs_native

    started = time.monotonic()
    writer_client = hdfs_native.Client(url, CLIENT_CONFIG)
    recoverer = hdfs_native.Client(url, CLIENT_CONFIG)  # another client name: a lease holder may not recover its own
    primaries = [0] * len(recoveries_led())
    rounds = 0
    while rounds < max_rounds and not all(primaries):
        before = recoveries_led()
        _recover_one_round(writer_client, recoverer, len(primaries), files_per_round, timeout)
        rounds += 1
        for index, (was, now) in enumerate(zip(before, recoveries_led(), strict=True)):
            primaries[index] += now - was
    return Warmup(rounds, tuple(primaries), time.monotonic() - started)


def _recover_one_round(writer_client, recoverer, replication: int, files: int, timeout: float) -> None:
    import hdfs_native

    directory = f"{WARM_DIRECTORY}/{uuid.uuid4().hex[:12]}"
    writer_client.mkdirs(directory, create_parent=True)
    paths = [f"{directory}/{index}" for index in range(files)]
    writers = []
    try:
        for path in paths:
            writer = writer_client.create(
                path, hdfs_native.WriteOptions(replication=replication, block_size=BLOCK_SIZE)
            )
            writer.write(b"warm")
            writer.hsync()
            writers.append(writer)
        pending = []
        for path in paths:
            if not recoverer.recover_lease(path):
                pending.append(path)
            time.sleep(ASK_SPACING)  # a heartbeat apart: see the module's docstring

        def all_closed() -> bool:
            pending[:] = [path for path in pending if not recoverer.recover_lease(path)]
            return not pending

        wait_until(all_closed, timeout, f"HDFS to recover the leases of {files} warm-up files", interval=0.05)
    finally:
        for writer in writers:
            try:
                writer.close()  # refused once its lease was recovered: that is the point
            except Exception:  # noqa: BLE001
                pass
        try:
            recoverer.delete(directory, recursive=True)
        except Exception as error:  # noqa: BLE001 - a leftover under WARM_DIRECTORY only
            log.info("could not delete the warm-up files in %s: %s", directory, error)
