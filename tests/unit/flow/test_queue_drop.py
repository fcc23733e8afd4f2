"""Dropping a queue's FlowFiles (NiFi's "empty queue") through the shard's committer: in
memory and swapped out, with a DROP event each and claimant counts released; a crash
at any storage call of the drop neither loses a FlowFile that was not dropped nor
brings back one that was."""

from __future__ import annotations

import itertools

import pytest

from flow.commit import DurableCommitter
from flow.errors import CommitError
from flow.queue_drop import drop_queue
from repositories.content.errors import ContentNotFound
from repositories.provenance import EventType
from tests.durable_shard import QUEUE, DurableShard, RecordedProvenance
from tests.storage_faults import Crash, Fault, FaultyStorage, UnbufferedLocalStorage

PAYLOADS = [f"content {i}".encode() for i in range(9)]


class Recording:
    """The committer, remembering which FlowFiles each commit was about and which commits returned."""

    def __init__(self, inner):
        self.inner = inner
        self.batches: list[set[str]] = []
        self.acknowledged: list[set[str]] = []

    def commit(self, tx):
        batch = {row.flowfile_uuid for row in tx.events}
        self.batches.append(batch)
        self.inner.commit(tx)
        self.acknowledged.append(batch)


class Gate:
    """A commit gate that admits `allowed` commits and refuses the rest (a fenced shard)."""

    def __init__(self, allowed):
        self.allowed = allowed

    def admit(self, component_id):
        if self.allowed <= 0:
            raise RuntimeError("the shard was fenced")
        self.allowed -= 1

    def committed(self, component_id):
        pass

    def failed(self, component_id, error):
        pass


def make(root, **committer) -> tuple[DurableShard, RecordedProvenance, DurableCommitter]:
    root.mkdir()
    durable = DurableShard(FaultyStorage(UnbufferedLocalStorage()), str(root / "shard"), str(root / "content"))
    events = RecordedProvenance()
    return durable, events, DurableCommitter(durable.shard, durable.content, events, **committer)


def filled(durable) -> dict:
    created = {}
    for payload in PAYLOADS:  # one commit each, so the queue swaps as it grows
        created.update(durable.create([payload]))
    summary = durable.queue.summary()  # threshold 4, batch 2: every kind of place a FlowFile can wait
    assert (summary.active, summary.staging, summary.swapped_count, summary.swap_files) == (4, 1, 4, 2)
    return created


def test_a_drop_empties_memory_and_swap_files_with_a_drop_event_each_and_releases_the_content(tmp_path):
    durable, events, committer = make(tmp_path / "a")
    created = filled(durable)
    claims = {record.id: record.content_claim for record in durable.records().values()}
    report = drop_queue(durable.shard, durable.queue, committer, batch=3)
    assert (report.dropped, report.dropped_bytes) == (9, sum(map(len, PAYLOADS)))
    assert (report.swap_files, report.swapped_dropped, report.in_flight, report.remaining) == (2, 4, 0, 0)
    assert durable.queue.count == 0 and durable.queue.size == 0 and durable.queue.summary().swap_files == 0
    assert durable.records() == {} and durable.shard.wal.swap_files == {}
    assert durable.shard.swap_store.locations() == []
    drops = [e for e in events.events if e.event_type is EventType.DROP]
    assert sorted(e.flowfile_uuid for e in drops) == sorted(created) and len(events.events) == 9
    for event in drops:
        assert (event.component_id, event.component_type) == (QUEUE, "Connection")
        assert event.content_before == claims[event.flowfile_uuid] and event.size == len(created[event.flowfile_uuid])
    assert all(durable.content.claimant_count(claim) == 0 for claim in claims.values())
    durable.collect()
    with pytest.raises(ContentNotFound):
        durable.content.read(claims[drops[0].flowfile_uuid])
    durable.restart()
    assert durable.live() == {} and durable.queue.count == 0
    durable.close()


def test_flowfiles_a_running_task_holds_are_not_dropped(tmp_path):
    durable, _events, committer = make(tmp_path / "a")
    filled(durable)
    session = durable.session()
    held = {flowfile.id for flowfile in session.get_batch(2)}
    report = drop_queue(durable.shard, durable.queue, committer)
    assert (report.dropped, report.in_flight, report.remaining) == (7, 2, 2)
    session.rollback()
    assert {item.flowfile.id for item in durable.queue.snapshot().page(0, 10, 0).items} == held
    durable.restart()
    assert set(durable.live()) == held
    durable.close()


def test_a_refused_commit_puts_its_batch_back_and_earlier_batches_stay_dropped(tmp_path):
    durable, _events, committer = make(tmp_path / "a", gate=Gate(allowed=1))
    created = filled(durable)
    locations = durable.shard.swap_store.locations()
    with pytest.raises(CommitError, match="fenced"):
        drop_queue(durable.shard, durable.queue, committer)  # memory in one commit; the first swap file refused
    summary = durable.queue.summary()
    assert (summary.count, summary.swapped_count, summary.swap_files, summary.unacknowledged) == (4, 4, 2, 0)
    assert durable.shard.swap_store.locations() == locations == sorted(durable.shard.wal.swap_files)
    durable.restart()
    assert len(durable.live()) == 4 and set(durable.live()) < set(created)
    durable.close()


CRASH_POINTS = [(operation, when) for operation in ("write", "sync", "delete") for when in ("before", "after")]


@pytest.mark.parametrize("operation,when", CRASH_POINTS)
def test_a_crash_at_any_storage_call_of_a_drop_loses_nothing_kept_and_brings_back_nothing_dropped(
    tmp_path, operation, when
):
    """Crash at the 1st, 2nd, ... matching call of the drop, until the drop gets through
    without reaching one; after each crash the recovered shard holds whole batches of
    what was queued, none that a commit acknowledged, with their content, and a drop
    after the restart empties it for good."""
    for skip in itertools.count():
        durable, _events, committer = make(tmp_path / f"{skip}")
        created = filled(durable)
        recording = Recording(committer)
        fault = durable.storage.arm(Fault(operation, when, skip=skip, crash=True))
        try:
            drop_queue(durable.shard, durable.queue, recording, batch=3)
        except Crash:
            pass
        else:
            assert fault in durable.storage.faults, "the fault struck but the drop did not crash"
            durable.close()
            assert skip > 0, f"a drop makes no {operation} call: nothing was tested"
            return
        durable.restart(keep=0.5)
        recovered = durable.live()  # reads every content: none may be missing
        assert set(recovered) <= set(created) and all(recovered[i] == created[i] for i in recovered)
        for batch in recording.batches:
            assert batch <= set(recovered) or not batch & set(recovered), "a batch came back in part"
        for batch in recording.acknowledged:
            assert not batch & set(recovered), "a dropped FlowFile came back"
        assert durable.claimants() == {r: durable.content.claimant_count(r) for r in durable.claimants()}
        assert durable.shard.swap_store.locations() == sorted(durable.shard.wal.swap_files)
        assert durable.queue.count == len(recovered)
        drop_queue(durable.shard, durable.queue, DurableCommitter(durable.shard, durable.content, None))
        durable.restart()
        assert durable.live() == {} and durable.shard.swap_store.locations() == []
        durable.close()
