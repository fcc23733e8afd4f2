"""Adoption always ends, on real HDFS: a shard whose flow.json, WAL journal, WAL
snapshot or swap file is missing, empty, cut short, or still open under its dead
writer's lease is recovered, adopted empty, or held for an operator with the reason,
within the lease-recovery bound plus 10 s.

The crash cases come from a real writer (`tests.dead_owner`), a process of its own
that opens its home shard as a node does, commits records (each one acknowledged on
stdout) and is stopped between creating a file and syncing it: SIGKILLed with part of
the write made durable first (the file ends cut short), or SIGSTOPped with nothing of
it synced (the file is empty, and still open under a lease nobody will renew or give
up). The damage cases (no crash leaves them) damage a finished shard's files.

The adopter is what a clustered node does with a shard moved to it, without
ZooKeeper: fence it (`adopt_shard`: rename, recover every file's lease), choose its
flow (`flow_without_its_file` when flow.json cannot be used, as
`ClusteredNode._definition_for` does), recover its queues from its WAL and swap files
(`QueueShard`), and on failure judge the error as the member does
(`failure_kind`, `after_failure`).
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field

import pytest

from cluster.core import ownership as own
from cluster.core.adoption_failures import HoldShard, after_failure
from cluster.core.flows import FlowSnapshot, UnreadableFlow, flow_without_its_file
from cluster.core.layout import ClusterLayout
from cluster.failover.adoption import WalOptions, adopt_shard, failure_kind, open_home_shard
from cluster.failover.fencing import DEFAULT_FENCE_TIMEOUT, fence
from flow.queue import FlowFileQueue
from flow.shard import QueueShard
from repositories.flowfile import Put, SwapFile, SwapOut
from repositories.swap import SwapError, SwapStore
from tests.dead_owner import FLOW as WRITER_FLOW
from tests.dead_owner import QUEUE, OwnerProcess, record

pytestmark = [pytest.mark.hdfs]
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OPTIONS = WalOptions(partitions=2, checkpoint_interval=None)
EPOCH = 17
RECORDS = 20
BOUND = DEFAULT_FENCE_TIMEOUT + 10.0  # the issue's: no shard stays ADOPTING longer
# The adopter's own flow: not the writer's (its flow.json, when unreadable, cannot be
# stood in for by a flow of the same version), but with the writer's queue.
OWN_FLOW = FlowSnapshot({"name": "adopter", "processors": [], "connections": []})


@pytest.fixture
def layout(hdfs_store):
    layout = ClusterLayout("c1", hdfs_store.root)
    hdfs_store.storage.mkdir(layout.hdfs_shards, parents=True)
    return layout


@dataclass
class Outcome:
    """How one adoption ended: "adopted" (records and swapped FlowFiles recovered) or
    "held" (`reason`); and what it noted, found and took."""

    kind: str
    records: set[str] = field(default_factory=set)  # live FlowFile ids
    swapped: set[str] = field(default_factory=set)  # FlowFile ids in swap files the queue registered
    note: str | None = None
    reason: str = ""
    orphaned_swap_files: list[str] = field(default_factory=list)
    unreadable_swap_files: list[str] = field(default_factory=list)
    seconds: float = 0.0


def adopt_like_a_node(storage, layout, shard: str, *, queues=(QUEUE,)) -> Outcome:
    """Adopt `shard` (ACTIVE at EPOCH, its owner dead) as a clustered node's member and
    runtime would; return how it ended. `queues`: the queues this node's flow defines."""
    started = time.monotonic()
    moved = own.reassign(
        own.new_shard(shard, shard, EPOCH, at=0.0, flow=FlowSnapshot(WRITER_FLOW).version),
        "n1-30",
        expected_epoch=EPOCH,
        at=1.0,
    )
    try:
        handle = adopt_shard(storage, layout, moved, OPTIONS)
        try:
            snapshot, problem = handle.flow_snapshot(), None
        except UnreadableFlow as error:
            snapshot, problem = None, str(error)
        note = None
        if snapshot is None:
            note = flow_without_its_file(
                problem=problem, recorded=moved.flow, own=OWN_FLOW.version, known=(), queued=handle.queued_flowfiles
            ).note
        store = SwapStore(storage, handle.swap_directory)
        queue_shard = QueueShard(
            shard, [FlowFileQueue(queue) for queue in queues], wal=handle.open_wal(), swap_store=store
        )
        try:
            report = queue_shard.recover()
            records = {record_id for record_id, value in queue_shard.wal.records.items() if value.queue == QUEUE}
            swapped, unreadable = set(), list(report.unreadable_swap_files)
            for location in queue_shard.wal.swap_files:
                if location in unreadable:
                    continue
                try:  # what a swap-in reads; one that fails is set aside then, with an alarm
                    swapped |= {value.id for value in store.read(location)[1]}
                except SwapError:
                    unreadable.append(location)
        finally:
            queue_shard.wal.close()
        return Outcome(
            "adopted",
            records,
            swapped,
            note,
            orphaned_swap_files=report.orphaned_swap_files,
            unreadable_swap_files=unreadable,
            seconds=time.monotonic() - started,
        )
    except Exception as error:  # noqa: BLE001 - judged as the member judges it
        spent = time.monotonic() - started
        decision = after_failure(
            failure_kind(error),
            f"{type(error).__name__}: {error}",
            held=False,
            adopting_for=spent,
            bound=DEFAULT_FENCE_TIMEOUT,
        )
        assert isinstance(decision, HoldShard), f"a failure that would be retried for ever: {error!r}"
        return Outcome("held", reason=decision.reason, seconds=spent)


# -- a writer killed or stopped between creating a file and syncing it -------------------------
@dataclass(frozen=True)
class Crash:
    scenario: str
    legacy_flow: bool = False

    def __str__(self) -> str:
        return self.scenario + ("-legacy" if self.legacy_flow else "")


CRASHES = [
    Crash("flow", legacy_flow=True),
    Crash("flow"),
    Crash("first-partial"),
    Crash("first-journal"),
    Crash("frame"),
    Crash("partial"),
    Crash("journal-reset"),
    Crash("swap"),
]
STOPS = {"SIGKILL": (signal.SIGKILL, 0.5), "SIGSTOP": (signal.SIGSTOP, 0.0)}  # signal, durable part of the write


def start_writer(hdfs_cluster, layout, shard: str, crash: Crash, prefix: float) -> OwnerProcess:
    return OwnerProcess(
        [
            "wal",
            "--url",
            hdfs_cluster.url,
            "--root",
            layout.hdfs_root,
            "--shard",
            shard,
            "--epoch",
            str(EPOCH),
            "--records",
            str(RECORDS),
            "--scenario",
            crash.scenario,
            "--prefix",
            str(prefix),
            *(["--legacy-flow"] if crash.legacy_flow else []),
            *(arg for key, value in hdfs_cluster.client_config.items() for arg in ("--hdfs-config", f"{key}={value}")),
        ],
        REPO,
    )


def run_until_stalled(writer: OwnerProcess) -> tuple[set[str], tuple[str, int, int]]:
    """The ids the writer acknowledged, and the file it stalled in (path, bytes synced,
    bytes written)."""
    lines = writer.until("STALLED ")
    acknowledged = {f"ff-{line.split()[1]}" for line in lines if line.startswith("A ")}
    _, path, synced, written = lines[-1].split(" ")
    return acknowledged, (path, int(synced), int(written))


@pytest.mark.parametrize("stop", list(STOPS))
@pytest.mark.parametrize("crash", CRASHES, ids=str)
def test_a_writer_stopped_between_create_and_sync_leaves_a_shard_whose_adoption_ends(
    hdfs_cluster, hdfs_store, layout, crash, stop
):
    storage = hdfs_store.storage
    shard = "n3-17"
    how, prefix = STOPS[stop]
    writer = start_writer(hdfs_cluster, layout, shard, crash, prefix)
    try:
        acknowledged, stalled = run_until_stalled(writer)
        writer.signal(how)
        if how == signal.SIGKILL:
            writer.process.wait(30)
        # The adopter's fence comes first (it is idempotent): the stalled file is closed
        # now, holding what was synced of it: nothing, or the durable prefix.
        fenced = fence(storage, layout, shard, EPOCH + 1).directory
        path, synced, written = stalled
        left = storage.status(fenced + path[len(layout.shard_directory(shard)) :]).length
        assert synced <= left < written, (stalled, left)
        if crash.scenario != "frame":  # a new file: empty (nothing synced), or cut short
            assert (synced == 0) is (prefix == 0), stalled
        outcome = adopt_like_a_node(storage, layout, shard)
    finally:
        writer.close()
    assert outcome.kind == "adopted", outcome
    assert outcome.seconds < BOUND, outcome
    # Nothing acknowledged is lost; nothing but the one transaction in flight is added.
    assert acknowledged <= outcome.records | outcome.swapped, sorted(acknowledged - outcome.records - outcome.swapped)
    in_flight = {f"ff-{RECORDS}"} if crash.scenario == "frame" else set()
    assert outcome.records | outcome.swapped <= acknowledged | in_flight
    if crash.scenario == "flow":
        # The owner died before it opened its WAL: nothing of the shard was ever committed.
        assert acknowledged == set() and outcome.records == set()
        flow_file = layout.flow_file(fenced)
        if crash.legacy_flow:  # created in place: empty or cut short, never whole
            size = storage.status(flow_file).length
            assert size == (0 if prefix == 0 else len(FlowSnapshot(WRITER_FLOW).encoded) // 2), size
            assert outcome.note.startswith("flow.json is unreadable: ") and "adopted empty" in outcome.note, outcome
        else:  # renamed into place only once whole: the temporary alone is there
            assert not storage.exists(flow_file) and storage.exists(flow_file + ".partial")
            assert outcome.note.startswith("flow.json is missing, and its WAL holds no FlowFile"), outcome
    else:
        assert outcome.note is None  # flow.json was whole
    if crash.scenario == "swap":
        # Written but never recorded: its FlowFiles are still the WAL's live records.
        assert [os.path.basename(orphan) for orphan in outcome.orphaned_swap_files] == [os.path.basename(path)]
    assert outcome.unreadable_swap_files == []


def test_a_shard_that_recovered_stays_whole_for_its_next_adopter(hdfs_cluster, hdfs_store, layout):
    """The adopter's recovery rewrote the shard at its epoch: the next adopter (the
    first died too) finds a clean WAL, and the same records."""
    storage = hdfs_store.storage
    writer = start_writer(hdfs_cluster, layout, "n3-17", Crash("journal-reset"), 0.5)
    try:
        acknowledged, _ = run_until_stalled(writer)
    finally:
        writer.close()
    first = adopt_like_a_node(storage, layout, "n3-17")
    moved_again = own.reassign(
        own.adopted(
            own.reassign(own.new_shard("n3-17", "n3-17", EPOCH, at=0.0), "n1-30", expected_epoch=EPOCH, at=1.0),
            "n1-30",
            EPOCH + 1,
            at=2.0,
        ),
        "n2-31",
        expected_epoch=EPOCH + 1,
        at=3.0,
    )
    handle = adopt_shard(storage, layout, moved_again, OPTIONS)
    wal = handle.open_wal()
    try:
        assert set(wal.recover()) == first.records == acknowledged
        assert wal.last_recovery.cuts == [] and wal.last_recovery.damage == []
    finally:
        wal.close()


# -- damage no crash leaves ------------------------------------------------------------------
def finished_shard(storage, layout, shard: str, *, swapped: int = 5) -> dict:
    """A shard its owner wrote and closed: RECORDS FlowFiles, the last `swapped` of them
    in a swap file; its files by kind."""
    handle = open_home_shard(
        storage,
        layout,
        own.new_shard(shard, shard, EPOCH, at=0.0, flow=FlowSnapshot(WRITER_FLOW).version),
        OPTIONS,
        FlowSnapshot(WRITER_FLOW),
    )
    wal = handle.open_wal()
    wal.recover()
    for index in range(RECORDS):
        wal.update([Put(record(index))])
    batch = [record(index) for index in range(RECORDS - swapped, RECORDS)]
    summary = SwapStore(storage, handle.swap_directory).write(QUEUE, batch)
    wal.update([SwapOut(SwapFile(summary.location, QUEUE, summary.count, summary.size), tuple(r.id for r in batch))])
    wal.checkpoint()  # the snapshot holds them all; then more commits go to the journals
    for index in range(RECORDS, RECORDS + 6):
        wal.update([Put(record(index))])
    wal.close()
    wal_directory = layout.wal_directory(handle.directory)
    return {
        "flow.json": layout.flow_file(handle.directory),
        "journal": f"{wal_directory}/journal-0",
        "snapshot": f"{wal_directory}/snapshot",
        "swap file": summary.location,
    }


def damage(storage, path: str, how: str) -> None:
    if how == "missing":
        storage.delete(path)
        return
    data = storage.read(path)
    with storage.create(path, overwrite=True) as out:
        out.write(b"" if how == "empty" else data[: len(data) // 2])
        out.sync()


ALL = {f"ff-{index}" for index in range(RECORDS + 6)}
SWAPPED = {f"ff-{index}" for index in range(RECORDS - 5, RECORDS)}


@pytest.mark.parametrize("how", ["missing", "empty", "cut short"])
@pytest.mark.parametrize("kind", ["flow.json", "journal", "snapshot", "swap file"])
def test_a_damaged_file_of_each_kind_ends_the_adoption_with_its_flowfiles_kept_or_the_shard_held(
    hdfs_store, layout, kind, how
):
    storage = hdfs_store.storage
    files = finished_shard(storage, layout, "n4-17")
    damage(storage, files[kind], how)
    outcome = adopt_like_a_node(storage, layout, "n4-17")
    assert outcome.seconds < BOUND, outcome
    if kind == "flow.json":
        # The WAL holds FlowFiles: they run with this node's flow, which has their queue.
        assert outcome.kind == "adopted" and outcome.records | outcome.swapped == ALL, outcome
        assert f"holds {len(ALL)} FlowFiles: they run with this node's flow" in outcome.note, outcome.note
    elif kind == "swap file":
        # Set aside with an alarm (and quarantined when it is there but corrupt); its
        # FlowFiles stay counted in their queue, the rest run.
        assert outcome.kind == "adopted" and outcome.records == ALL - SWAPPED, outcome
        assert len(outcome.unreadable_swap_files) == 1, outcome
    else:
        # Recovering would lose acknowledged FlowFiles without a word: held, with why.
        assert outcome.kind == "held", outcome
        expected = {
            "journal": "WalDamagedError",
            "snapshot": "WalDamagedError" if how == "missing" else "CorruptSnapshotError",
        }[kind]
        assert outcome.reason.startswith(expected), outcome.reason


def test_a_flowfile_in_a_queue_this_nodes_flow_lacks_holds_the_shard_and_drops_nothing(hdfs_store, layout):
    storage = hdfs_store.storage
    files = finished_shard(storage, layout, "n5-17")
    damage(storage, files["flow.json"], "cut short")
    outcome = adopt_like_a_node(storage, layout, "n5-17", queues=("other",))
    assert outcome.kind == "held" and outcome.reason.startswith("QueueRecoveryError: shard n5-17"), outcome
    assert "Nothing was dropped" in outcome.reason
    # ...and once a flow with the queue runs it, every FlowFile is there.
    again = own.reassign(own.new_shard("n5-17", "n1-30", EPOCH + 1, at=0.0), "n2-31", expected_epoch=EPOCH + 1, at=1.0)
    handle = adopt_shard(storage, layout, again, OPTIONS)
    queue_shard = QueueShard(
        "n5-17", [FlowFileQueue(QUEUE)], wal=handle.open_wal(), swap_store=SwapStore(storage, handle.swap_directory)
    )
    try:
        queue_shard.recover()
        assert queue_shard.queues[QUEUE].count == len(ALL)
    finally:
        queue_shard.wal.close()
