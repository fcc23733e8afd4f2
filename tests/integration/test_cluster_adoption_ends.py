"""Adoption always ends, with the cluster deciding: a dead incarnation's shard is
adopted, or held for an operator with the reason in its history and in the failover
plan's notes, within the lease-recovery bound plus 10 s; never left ADOPTING.

The dead incarnation is a real `ClusterMember` in a process of its own
(`tests.dead_owner member`): it joins, opens its home shard, commits, and is
SIGKILLed. The survivor is a `ClusterMember` in this process (it leads, and adopts)
whose runtime recovers the shard's queues from its WAL (`QueueShard`) and delivers
them (deletes them) once started. Real ZooKeeper, real HDFS.

The node-level case (a `custody node` adopting a shard whose flow.json its dead owner
left empty, as in the compose drill) is `test_a_node_adopts_a_shard_whose_flow_json_was_cut_short`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from cluster.core.adoption_failures import RETRY_INTERVAL
from cluster.core.ownership import ShardState
from cluster.failover.adoption import WalOptions
from cluster.failover.fencing import DEFAULT_FENCE_TIMEOUT
from cluster.failover.member import ClusterMember, MemberConfig
from cluster.services.process import wait_until
from cluster.zk.store import ClusterStore
from flow.queue import FlowFileQueue
from flow.shard import QueueShard
from replication.hdfs_storage import HdfsStorage
from repositories.flowfile import Delete
from repositories.swap import SwapStore
from tests.dead_owner import QUEUE, OwnerProcess

pytestmark = [pytest.mark.zookeeper, pytest.mark.hdfs]
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SESSION_TIMEOUT = 4.0
RECORDS = 20
BOUND = DEFAULT_FENCE_TIMEOUT + 10.0


class DrainingRuntime:
    """A shard runtime: `recover` rebuilds the queue from the shard's WAL and swap files
    (what fails on a damaged WAL), `start` delivers every FlowFile (deletes it)."""

    def __init__(self, handle):
        self.handle, self.shard, self.delivered = handle, None, 0

    def recover(self) -> None:
        handle = self.handle
        self.shard = QueueShard(
            handle.shard,
            [FlowFileQueue(QUEUE)],
            wal=handle.open_wal(),
            swap_store=SwapStore(handle.storage, handle.swap_directory),
        )
        self.shard.recover()

    def start(self) -> None:
        ids = [record_id for record_id, record in self.shard.wal.records.items() if record.queue == QUEUE]
        if ids:
            self.shard.wal.update([Delete(record_id) for record_id in ids])
        self.delivered = len(ids)

    def stop(self) -> None:
        if self.shard is not None:
            try:
                self.shard.wal.close()
            except Exception:  # noqa: BLE001 - as FlowRuntime: a retired shard's files may be collected already
                pass

    def pause(self) -> None: ...

    def resume(self) -> None: ...

    def abort_open_sessions(self) -> None: ...

    def drained(self) -> bool:
        return self.shard is not None and not self.shard.wal.records

    def holds_hand_over_state(self) -> bool:
        return False

    def load(self) -> dict:
        return {}

    def active_threads(self) -> int:
        return 0


def dead_owner(
    zk_hosts, hdfs_cluster, root: str, scenario: str, *extra: str, credentials: str | None = None
) -> OwnerProcess:
    return OwnerProcess(
        [
            "member",
            "--zk",
            zk_hosts,
            "--url",
            hdfs_cluster.url,
            "--root",
            root,
            "--records",
            str(RECORDS),
            "--scenario",
            scenario,
            "--session-timeout",
            str(SESSION_TIMEOUT),
            *extra,
            *(["--credentials", credentials] if credentials else []),
            *(arg for key, value in hdfs_cluster.client_config.items() for arg in ("--hdfs-config", f"{key}={value}")),
        ],
        REPO,
    )


def shard_of(lines: list[str]) -> str:
    """The dead owner's incarnation (its home shard), from what it said."""
    return next(line.split()[1] for line in lines if line.startswith("SHARD "))


def closed(owner: OwnerProcess) -> None:
    print(f"---- the dead owner's stderr ----\n{owner.close()}")


def entered(shard, state: ShardState, epoch: int) -> float:
    """When the shard's history says it entered `state` at `epoch` (leader's or adopter's clock)."""
    return next(entry.at for entry in shard.history if entry.state is state and entry.epoch == epoch)


def test_a_damaged_wal_holds_the_shard_with_its_reason_until_an_operator_accepts_the_damage(
    zk_hosts, zk_client, hdfs_cluster, hdfs_store
):
    storage = hdfs_store.storage
    owner = dead_owner(zk_hosts, hdfs_cluster, hdfs_store.root, "clean")
    config = MemberConfig(
        zk_hosts=zk_hosts,
        cluster="c1",
        node="n1",
        session_timeout=SESSION_TIMEOUT,
        hdfs_root=hdfs_store.root,
        wal=WalOptions(partitions=2, checkpoint_interval=None),
        held_recheck=2.0,
    )
    survivor = ClusterMember(config, HdfsStorage(hdfs_cluster.url, hdfs_cluster.client_config), DrainingRuntime)
    store = ClusterStore(zk_client, survivor.layout)
    try:
        lines = owner.until("READY")
        victim = shard_of(lines)
        assert sum(line.startswith("A ") for line in lines) == RECORDS
        survivor.start()
        # Damage no crash explains: a journal of the set deleted (its transactions were
        # acknowledged). Then the owner dies.
        wal = survivor.layout.wal_directory(survivor.layout.shard_directory(victim))
        assert storage.delete(f"{wal}/journal-1")
        owner.signal(signal.SIGKILL)
        epoch = int(victim.rsplit("-", 1)[1]) + 1

        def shard():
            return store.shards.read(victim)[0]

        wait_until(
            lambda: shard().state is ShardState.HELD,
            BOUND + SESSION_TIMEOUT + 30,
            f"{victim}'s shard to be held, not left adopting",
        )
        held = shard()
        assert (held.owner, held.epoch) == (survivor.incarnation.id, epoch)
        assert entered(held, ShardState.HELD, epoch) - entered(held, ShardState.ADOPTING, epoch) < BOUND
        reason = held.history[-1].reason
        assert reason.startswith(f"held by {survivor.incarnation.id}: WalDamagedError: ") and "journal-1" in reason
        assert "custody wal fsck --accept-damage" in reason
        wait_until(
            lambda: any(
                f"holds {victim} at epoch {epoch} for an operator: WalDamagedError" in note
                for note in store.plans.read(victim)[0].notes
            ),
            30,
            "the plan to note the hold",
        )
        assert survivor.instruments.adoptions.snapshot()["held"] == 1
        # Held, it is only rechecked (every `held_recheck`, counted apart from retries), not
        # retried every RETRY_INTERVAL: a window of three retry intervals would see three.
        time.sleep(3 * RETRY_INTERVAL)
        assert shard().state is ShardState.HELD and survivor.instruments.adoptions.snapshot()["retried"] == 0

        # The operator accepts the loss, on the fenced directory the reason names.
        fenced = survivor.layout.wal_directory(survivor.layout.fenced_directory(victim, epoch))
        fsck = subprocess.run(
            [sys.executable, "-m", "cluster.cli", "wal", "fsck", "--accept-damage", f"{hdfs_cluster.url}{fenced}"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert fsck.returncode == 0 and "DAMAGE accepted" in fsck.stdout, fsck.stdout + fsck.stderr
        wait_until(
            lambda: shard().state in (ShardState.DRAINING, ShardState.RETIRED),
            30,
            "the held shard to be adopted once it opens",
        )
        wait_until(lambda: shard().state is ShardState.RETIRED, 30, "the shard to drain and retire")
        notes = store.plans.read(victim)[0].notes
        assert any(f"adopted {victim} at epoch {epoch}: it could be opened at last" in note for note in notes), notes
    finally:
        closed(owner)
        survivor.stop()


def test_a_node_adopts_a_shard_whose_flow_json_was_cut_short(flow_cluster, hdfs_cluster):
    """The compose drill's hole: an owner created flow.json in place (as the release
    before this one did) and died before its sync, so flow.json is empty once its lease
    is recovered. Its adopter, a real `custody node`, must adopt it (empty: nothing of
    it was committed) and retire it, not retry it for ever."""
    cluster = flow_cluster
    n1 = cluster.start("n1", count=10)
    n1.wait("joined", timeout=90)
    owner = dead_owner(
        cluster.zk_hosts, hdfs_cluster, cluster.hdfs_root, "flow", "--legacy-flow", credentials=cluster.credentials_file
    )
    try:
        lines = owner.until("STALLED")
        victim = shard_of(lines if any(line.startswith("SHARD ") for line in lines) else owner.until("SHARD"))
        assert lines[-1].split()[1].endswith(f"/{victim}/flow.json")
        owner.signal(signal.SIGKILL)
        epoch = int(victim.rsplit("-", 1)[1]) + 1
        wait_until(
            lambda: (s := cluster.shard(victim)) is not None and s.state is ShardState.RETIRED,
            BOUND + SESSION_TIMEOUT + 30,
            f"{victim}'s shard to be adopted and retired, not left adopting",
        )
        shard = cluster.shard(victim)
        assert entered(shard, ShardState.DRAINING, epoch) - entered(shard, ShardState.ADOPTING, epoch) < BOUND
        plan = cluster.plan(victim)
        assert any("flow.json is unreadable" in note and "adopted empty" in note for note in plan.notes), plan.notes
    finally:
        closed(owner)
