"""QueueShard on local storage: swap order against the WAL, orphans, recovery, state."""

from __future__ import annotations

import threading

import pytest

from flow.flowfile import FlowFile
from flow.queue import FlowFileQueue
from flow.shard import QueueShard, open_shard
from repositories.flowfile import Delete, Put, WalHooks
from repositories.storage import LocalStorage
from repositories.swap import SwapHooks


class Log(WalHooks, SwapHooks):
    def __init__(self):
        self.calls = []

    def before_journal_write(self, path):
        self.calls.append("wal write")

    def after_sync(self, path):
        self.calls.append("wal synced")

    def after_swap_sync(self, path):
        self.calls.append("swap file synced")


def flowfiles(n, queue="q", start=0):
    return [FlowFile(f"id-{i}", {"i": str(i)}, None, queue, 1, 1_000 + i, 1_000, 0) for i in range(start, start + n)]


def open_(root, hooks=None, threshold=4, batch=2):
    queue = FlowFileQueue("q", swap_threshold=threshold, swap_batch=batch)
    shard = open_shard(LocalStorage(), root, "s", [queue], checkpoint_interval=None, wal_hooks=hooks, swap_hooks=hooks)
    return queue, shard


def commit(shard, queue, items):
    shard.wal.update([Put(f.to_record()) for f in items])
    queue.put_all(items)
    shard.maintain(queue)


def test_the_swap_file_is_synced_before_the_wal_records_it(tmp_path):
    log = Log()
    queue, shard = open_(str(tmp_path), log)
    shard.recover()
    commit(shard, queue, flowfiles(4))
    log.calls.clear()
    commit(shard, queue, flowfiles(2, start=4))
    assert log.calls[0:2] == ["wal write", "wal synced"]  # the Puts
    assert log.calls[2:] == ["swap file synced", "wal write", "wal synced"]  # then the SwapOut
    assert queue.summary().swap_files == 1 and set(shard.wal.swap_files) == {shard.swap_store.locations()[0]}


def test_restart_registers_swapped_flowfiles_and_deletes_orphaned_swap_files(tmp_path):
    queue, shard = open_(str(tmp_path))
    shard.recover()
    commit(shard, queue, flowfiles(10))
    assert queue.summary().swap_files == 3 and queue.in_memory() == 4
    orphan = shard.swap_store.write("q", [f.to_record() for f in flowfiles(2, start=100)])  # never in the WAL
    shard.wal.close()

    queue, shard = open_(str(tmp_path))
    report = shard.recover()
    assert report.orphaned_swap_files == [orphan.location]
    assert (report.flowfiles, report.swapped_flowfiles, report.swap_files) == (4, 6, 3)
    assert queue.count == 10 and queue.in_memory() == 4
    seen = []
    while queue.count:
        polled, _ = shard.poll(queue, 3)
        queue.acknowledge(polled)
        shard.wal.update([Delete(f.id) for f in polled])
        seen += [int(f.attributes["i"]) for f in polled]
    assert seen == list(range(10)), "FIFO across swap-out, restart and swap-in"
    assert shard.swap_store.locations() == [] and shard.wal.swap_files == {}
    shard.wal.close()


def test_a_crash_after_swap_in_before_the_file_is_deleted_loads_nothing_twice(tmp_path):
    queue, shard = open_(str(tmp_path))
    shard.recover()
    commit(shard, queue, flowfiles(8))
    (location, *_) = shard.swap_store.locations()
    data = LocalStorage().read(location)
    polled, _ = shard.poll(queue, 4)  # drains memory: swaps one file back in, deletes it
    queue.requeue(polled)
    assert location not in shard.swap_store.locations()
    with open(location, "wb") as handle:  # as if the delete never happened
        handle.write(data)
    shard.wal.close()
    queue, shard = open_(str(tmp_path))
    report = shard.recover()
    assert location in report.orphaned_swap_files
    assert queue.count == 8


def test_unknown_queue_in_the_wal_is_refused_with_nothing_dropped(tmp_path):
    queue, shard = open_(str(tmp_path))
    shard.recover()
    commit(shard, queue, flowfiles(1))
    shard.wal.close()
    other = FlowFileQueue("renamed")
    shard = open_shard(LocalStorage(), str(tmp_path), "s", [other], checkpoint_interval=None)
    with pytest.raises(Exception, match="connections the flow does not define: 'q' \\(1 FlowFiles\\)"):
        shard.recover()


def test_processor_state_and_in_memory_shard():
    shard = QueueShard("mem", [FlowFileQueue("q")])
    assert not shard.durable and shard.recover().flowfiles == 0
    shard.set_state_committed("p", {"a": "1"})
    assert shard.get_state("p") == {"a": "1"}
    record = QueueShard.state_record("p", {"a": "1"}, 5)
    assert record.queue == "__state__" and record.id == "__state__/p"


def test_a_refused_swap_out_keeps_the_batch_in_memory_and_its_file_for_recovery_to_judge(tmp_path):
    queue, shard = open_(str(tmp_path))
    shard.recover()
    commit(shard, queue, flowfiles(4))

    def refuse(updates):
        raise OSError("storage down")

    real_update = shard.wal.update
    shard.wal.update = refuse
    queue.put_all(flowfiles(2, start=4))
    shard.maintain(queue)  # must not raise: swapping is not part of any commit
    assert queue.count == 6 and queue.in_memory() == 6 and queue.summary().swap_files == 0
    assert shard.swap_failures == 1
    # The failed write might still be on disk (a sync that failed after the bytes left):
    # the file stays for a recovery that replays it.
    (written,) = shard.swap_store.locations()
    shard.wal.update = real_update
    shard.wal.close()
    queue, again = open_(str(tmp_path))
    report = again.recover()  # this WAL never recorded it: an orphan, removed
    assert report.orphaned_swap_files == [written] and again.swap_store.locations() == []
    assert queue.count == 4


def test_after_a_failed_swap_out_a_poll_retries_the_swap_policy_with_no_new_flowfiles_arriving(tmp_path):
    # Seen in a drill: a DataNode restart failed a swap-out just as the workload ended;
    # the batch went back to staging, the consumer drained what was active, and with
    # nothing new arriving (the only other trigger) the rest stayed queued for good.
    queue, shard = open_(str(tmp_path))
    shard.recover()
    real_update = shard.wal.update

    def refuse(updates):
        if any(type(update).__name__ == "SwapOut" for update in updates):
            raise OSError("storage down")
        return real_update(updates)

    shard.wal.update = refuse
    commit(shard, queue, flowfiles(10))
    assert shard.swap_failures >= 1 and queue.in_memory() == 10
    shard.wal.update = real_update  # storage is back; nothing else arrives
    delivered = []
    for _ in range(20):
        polled, expired = shard.poll(queue, 3)
        if not polled:
            break
        queue.acknowledge(polled)
        delivered += [f.id for f in polled]
    assert sorted(delivered) == sorted(f"id-{i}" for i in range(10))
    assert queue.count == 0


# -- processor state as entries -----------------------------------------------------------


def reopened(root):
    return open_(root)[1]


def apply_state(shard, component, state, **options):
    updates = shard.state_updates(component, state, 5, **options)
    if updates:
        shard.wal.update(updates)
    shard.set_state_committed(component, state)
    return updates


def test_a_state_commit_writes_the_entries_it_changed_and_recovery_assembles_them(tmp_path):
    _, shard = open_(str(tmp_path))
    shard.recover()
    ledger = {f"key:{n}": str(n) for n in range(500)}
    assert len(apply_state(shard, "listen", {"intake.layout": "2", **ledger})) == 501
    changed = {"intake.layout": "2", **{k: v for k, v in ledger.items() if k != "key:0"}, "key:new": "9"}
    updates = apply_state(shard, "listen", changed)
    assert sorted((type(u).__name__, getattr(u, "record_id", None) or u.record.id) for u in updates) == [
        ("Delete", "__state__/listen\0key:0"),
        ("Put", "__state__/listen\0key:new"),
    ]
    assert apply_state(shard, "listen", changed) == []  # nothing changed, nothing written
    shard.wal.close()
    again = reopened(str(tmp_path))
    assert again.recover().states == 1 and again.get_state("listen") == changed


def test_a_whole_state_record_of_the_release_before_is_read_and_replaced_by_entries_in_one_transaction(tmp_path):
    _, shard = open_(str(tmp_path))
    shard.recover()
    old = {"intake.layout": "1", "key:a": "1", "key:b": "2"}
    shard.wal.update([Put(QueueShard.state_record("listen", old, 5).to_record())])
    shard.wal.close()
    shard = reopened(str(tmp_path))
    shard.recover()
    assert shard.get_state("listen") == old
    new = {"intake.layout": "2", "key:a": "1", "key:c": "3:Xo2nUdtlBNA"}
    updates = apply_state(shard, "listen", new)
    assert isinstance(updates[0], Delete) and updates[0].record_id == "__state__/listen"
    assert len(updates) == 4  # the old record out, every entry in
    shard.wal.close()
    again = reopened(str(tmp_path))
    again.recover()
    assert again.get_state("listen") == new and "__state__/listen" not in again.wal.records


def test_after_a_commit_of_unknown_outcome_the_next_state_is_written_whole(tmp_path):
    _, shard = open_(str(tmp_path))
    shard.recover()
    apply_state(shard, "p", {"a": "1", "b": "2"})
    # A transaction that may or may not be replayed put entry c: memory never saw it.
    shard.wal.update([Put(FlowFile("__state__/p\0c", {"c": "3"}, None, "__state__", 0, 5, 5, 0).to_record())])
    updates = apply_state(shard, "p", {"a": "1", "b": "2"}, written=["__state__/p\0c"], whole=True)
    assert sorted(type(u).__name__ for u in updates) == ["Delete", "Put", "Put"]
    shard.wal.close()
    again = reopened(str(tmp_path))
    again.recover()
    assert again.get_state("p") == {"a": "1", "b": "2"}


def test_recovered_flowfiles_stay_in_memory_and_only_arrivals_beyond_them_are_swapped_out(tmp_path):
    """Recovered FlowFiles above the swap threshold stay in memory through recovery and
    after it (writing them out would be on a takeover's critical path); FlowFiles that
    arrive beyond them are swapped out; as the queue drains, the allowance falls back
    to the threshold."""
    queue, shard = open_(str(tmp_path), threshold=100, batch=50)
    shard.recover()
    commit(shard, queue, flowfiles(12))  # under that threshold: all in memory
    shard.wal.close()

    log = Log()
    queue, shard = open_(str(tmp_path), log, threshold=4, batch=2)
    report = shard.recover()
    assert report.flowfiles == 12 and queue.in_memory() == 12 and queue.summary().swap_files == 0
    assert "swap file synced" not in log.calls and shard.swap_store.locations() == []
    commit(shard, queue, flowfiles(2, start=12))
    assert queue.summary().swap_files == 1 and queue.in_memory() == 12 and queue.count == 14
    assert "swap file synced" in log.calls
    # Drained to 3, under the threshold of 4: the next arrivals stay behind the swap
    # file, in order, and the allowance is the threshold again.
    taken, _ = queue.poll(9)
    queue.acknowledge(taken)
    commit(shard, queue, flowfiles(6, start=14))
    assert queue.count == 11 and queue.summary().swap_files == 4 and queue.in_memory() == 3


class MeetingStorage(LocalStorage):
    """Reads of swap files wait until `readers` of them are reading at once (or the
    barrier's deadline passes, which fails the read)."""

    def __init__(self, readers):
        super().__init__()
        self.meeting = threading.Barrier(readers, timeout=10)

    def read(self, path, offset=0, length=None):
        if path.endswith(".swap"):
            self.meeting.wait()
        return super().read(path, offset, length)


def test_recovery_reads_the_swap_files_summaries_side_by_side(tmp_path):
    """On HDFS each summary costs round trips; a takeover waits for all of them. Three
    swap files: each read waits until the other two are reading too, so a recovery that
    read them one after another would find every one unreadable."""
    queue, shard = open_(str(tmp_path))
    shard.recover()
    commit(shard, queue, flowfiles(10))
    assert queue.summary().swap_files == 3
    shard.wal.close()

    queue = FlowFileQueue("q", swap_threshold=4, swap_batch=2)
    shard = open_shard(MeetingStorage(3), str(tmp_path), "s", [queue], checkpoint_interval=None)
    report = shard.recover()
    assert (report.swap_files, report.swapped_flowfiles, report.swap_files_without_claims) == (3, 6, [])
    assert queue.count == 10 and report.unreadable_swap_files == []
    shard.wal.close()


def test_recovery_names_the_claims_of_each_queues_first_flowfiles_in_the_order_they_are_taken(tmp_path):
    from flow.shard import HEAD_FLOWFILES
    from repositories.claims import ContentClaim, ResourceClaim

    queue = FlowFileQueue("q")
    shard = open_shard(LocalStorage(), str(tmp_path), "s", [queue], checkpoint_interval=None)
    shard.recover()
    count = HEAD_FLOWFILES + 20
    claims = [ContentClaim(ResourceClaim("dead-1", 0, "r"), i, 1) for i in range(count)]
    # Entered newest first in the WAL: recovery orders them by entry date.
    items = [
        FlowFile(f"id-{i}", {}, claims[i] if i % 10 else None, "q", 1, 1_000 + i, 1_000, 0)
        for i in reversed(range(count))
    ]
    shard.wal.update([Put(f.to_record()) for f in items])
    shard.wal.close()
    queue = FlowFileQueue("q")
    shard = open_shard(LocalStorage(), str(tmp_path), "s", [queue], checkpoint_interval=None)
    report = shard.recover()
    assert report.heads == [claims[i] for i in range(HEAD_FLOWFILES) if i % 10]  # no claim: nothing to read
    polled, _ = queue.poll(HEAD_FLOWFILES)
    assert [f.content_claim for f in polled if f.content_claim is not None] == report.heads
    shard.wal.close()
