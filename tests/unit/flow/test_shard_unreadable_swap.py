"""QueueShard with swap files that cannot be read, on local storage, with the queue's
clock driven by the test: a damaged file never stops its queue (quarantined, set aside,
in alarm, retried with backoff and read back once repaired, exactly once); a restart
neither forgets nor waits on it; a moved or copied shard directory reads its own swap
files and never touches another's."""

from __future__ import annotations

import logging
import os
import shutil

from flow.flowfile import FlowFile
from flow.queue import FlowFileQueue
from flow.queue_drop import drop_queue
from flow.shard import open_shard
from flow.unreadable_swap import ReadFailure, RetryBackoff
from repositories.claims import ContentClaim, ResourceClaim
from repositories.flowfile import Delete, Put
from repositories.storage import LocalStorage
from tests.durable_shard import DurableShard

BACKOFF = RetryBackoff(first_ms=1_000, max_ms=4_000)
RESOURCES = [ResourceClaim("c", 1, f"r{n}") for n in range(3)]


class Clock:
    def __init__(self):
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def open_(root, clock):
    queue = FlowFileQueue("q", swap_threshold=4, swap_batch=2, clock_ms=clock)
    shard = open_shard(LocalStorage(), root, "s", [queue], checkpoint_interval=None, retry_backoff=BACKOFF)
    return queue, shard


def flowfiles(n):
    # Each in a resource of its own pair, so a swap file's claims are its own.
    return [
        FlowFile(f"id-{i}", {"i": str(i)}, ContentClaim(RESOURCES[i % 3], i, 1), "q", 1, 1_000 + i, 1_000, 0)
        for i in range(n)
    ]


def filled(root, clock, n=10):
    """A recovered shard holding `n` FlowFiles: 4 in memory, the rest in swap files of 2
    (oldest first). Returns (queue, shard, swap file locations oldest first)."""
    queue, shard = open_(root, clock)
    shard.recover()
    items = flowfiles(n)
    shard.wal.update([Put(f.to_record()) for f in items])
    queue.put_all(items)
    shard.maintain(queue)
    locations = [summary.location for summary in queue.swap_summaries()]
    assert queue.in_memory() == 4 and len(locations) == (n - 4) // 2
    return queue, shard, locations


def drain(shard, queue) -> list[str]:
    """Poll until nothing comes, each batch deleted from the WAL as a processor's commit does."""
    taken = []
    while True:
        polled, expired = shard.poll(queue, 100)
        if not polled and not expired:
            return taken
        shard.wal.update([Delete(f.id) for f in polled + expired])
        queue.acknowledge(polled + expired)
        taken += [f.id for f in polled + expired]


def flip_a_record_byte(path):
    data = bytearray(open(path, "rb").read())
    data[-8] ^= 0x01  # in the records part: the summary still reads
    with open(path, "wb") as handle:
        handle.write(bytes(data))


def swap_files_of(root) -> dict[str, bytes]:
    swap = os.path.join(root, "swap")
    return {name: open(os.path.join(swap, name), "rb").read() for name in os.listdir(swap)}


def warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "flow.shard" and r.levelno >= logging.WARNING]


def test_a_corrupt_file_is_quarantined_the_others_come_back_and_the_repaired_file_comes_back_once(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    clock, root = Clock(), str(tmp_path / "shard")
    queue, shard, (bad, *_rest) = filled(root, clock)
    original = open(bad, "rb").read()
    flip_a_record_byte(bad)

    delivered = drain(shard, queue)
    assert sorted(delivered) == sorted(f"id-{i}" for i in (0, 1, 2, 3, 6, 7, 8, 9))  # 4 and 5 were in `bad`
    quarantine = os.path.join(root, "swap-quarantine", os.path.basename(bad))
    assert not os.path.exists(bad) and open(quarantine, "rb").read()[:-8] == original[:-8]
    assert set(shard.wal.swap_files) == {quarantine}  # its FlowFiles stay recorded, at the new place
    (alarm,) = shard.unreadable_swap_files()
    assert (alarm.location, alarm.reason, alarm.quarantined, alarm.flowfiles) == (
        quarantine,
        ReadFailure.CORRUPT,
        True,
        2,
    )
    summary = queue.summary()
    assert (summary.count, summary.unreadable_count, summary.unreadable_files, summary.swapped_count) == (2, 2, 1, 2)
    assert not queue.has_swapped()  # the engine does not schedule for it until its retry is due

    failures = shard.swap_failures
    for _ in range(200):  # consumers keep polling: nothing is read before the retry is due
        assert shard.poll(queue, 100) == ([], [])
    assert shard.swap_failures == failures and len(warnings(caplog)) == 1

    clock.now = alarm.next_attempt_ms  # still damaged: one more attempt, one more line, a longer wait
    assert queue.has_swapped() and drain(shard, queue) == []
    (again,) = shard.unreadable_swap_files()
    assert again.failures == 2 and again.next_attempt_ms - clock.now == 2_000 and len(warnings(caplog)) == 2

    with open(quarantine, "wb") as handle:  # the operator puts a good copy in place
        handle.write(original)
    clock.now = again.next_attempt_ms
    assert sorted(drain(shard, queue)) == ["id-4", "id-5"]
    assert drain(shard, queue) == [] and queue.count == 0 and queue.summary().unreadable_count == 0
    assert shard.unreadable_swap_files() == [] and shard.wal.swap_files == {} and not os.path.exists(quarantine)
    assert len(warnings(caplog)) == 2 and any("readable again" in r.getMessage() for r in caplog.records)


def test_a_restart_finds_the_quarantined_file_set_aside_in_alarm_and_an_operator_retry_reads_it(tmp_path):
    clock, root = Clock(), str(tmp_path / "shard")
    queue, shard, (bad, *_rest) = filled(root, clock)
    original = open(bad, "rb").read()
    flip_a_record_byte(bad)
    assert len(drain(shard, queue)) == 8
    quarantine = shard.unreadable_swap_files()[0].location
    shard.wal.close()

    queue, shard = open_(root, clock)
    report = shard.recover()
    assert report.unreadable_swap_files == [quarantine] and report.swap_files == 1
    # Its summary reads: its FlowFiles' claims are counted (ids 4 and 5), their content kept.
    assert report.swap_files_without_claims == [] and sorted(c.resource.id for c in report.live_claims) == ["r1", "r2"]
    assert queue.count == 2 and queue.summary().unreadable_count == 2
    assert drain(shard, queue) == []  # due at once after a restart: tried, still damaged
    (alarm,) = shard.unreadable_swap_files()
    assert alarm.failures == 1 and alarm.quarantined and not queue.has_swapped()

    with open(quarantine, "wb") as handle:
        handle.write(original)
    assert shard.retry_unreadable_now() == 1 and queue.has_swapped()
    assert sorted(drain(shard, queue)) == ["id-4", "id-5"] and queue.count == 0


def test_a_summary_damaged_while_stopped_is_quarantined_at_start_and_its_claims_counted_when_read(tmp_path):
    clock, root = Clock(), str(tmp_path / "shard")
    queue, shard, (bad, *_rest) = filled(root, clock)
    shard.wal.close()
    original = open(bad, "rb").read()
    with open(bad, "r+b") as handle:
        handle.truncate(20)  # inside the summary header: count, claims, dates all lost

    queue, shard = open_(root, clock)
    report = shard.recover()
    quarantine = os.path.join(root, "swap-quarantine", os.path.basename(bad))
    assert report.unreadable_swap_files == report.swap_files_without_claims == [quarantine]
    assert set(shard.wal.swap_files) == {quarantine, *_rest}
    assert queue.count == 10  # counted from the WAL's record of it
    assert sorted(drain(shard, queue)) == sorted(f"id-{i}" for i in (0, 1, 2, 3, 6, 7, 8, 9))

    found = []
    shard.claims_found = found.extend
    with open(quarantine, "wb") as handle:
        handle.write(original)
    shard.retry_unreadable_now()
    assert sorted(drain(shard, queue)) == ["id-4", "id-5"]
    assert sorted((c.resource.id, c.offset) for c in found) == [("r1", 4), ("r2", 5)]


def test_a_file_quarantined_at_start_is_not_taken_for_a_copy_of_itself_and_an_orphan_beside_it_goes(tmp_path, caplog):
    """The swap directory is listed while the WAL recovers; a file the start quarantines
    moves after that listing, and the orphans are judged on the directory as it is."""
    caplog.set_level(logging.INFO)
    clock, root = Clock(), str(tmp_path / "shard")
    queue, shard, (bad, *rest) = filled(root, clock)
    shard.wal.close()
    with open(bad, "r+b") as handle:
        handle.truncate(20)
    orphan = os.path.join(os.path.dirname(bad), "written-never-recorded.swap")
    shutil.copy(rest[0], orphan)

    queue, shard = open_(root, clock)
    report = shard.recover()
    quarantine = os.path.join(root, "swap-quarantine", os.path.basename(bad))
    assert report.unreadable_swap_files == [quarantine] and report.orphaned_swap_files == [orphan]
    assert not os.path.exists(orphan) and not os.path.exists(bad) and os.path.exists(quarantine)
    assert not any("has the name of the quarantined" in line for line in warnings(caplog)), warnings(caplog)
    assert sorted(drain(shard, queue)) == sorted(f"id-{i}" for i in (0, 1, 2, 3, 6, 7, 8, 9))


def test_a_file_missing_at_start_does_not_stop_the_node_or_the_queue_and_is_read_once_put_back(tmp_path):
    clock, root = Clock(), str(tmp_path / "shard")
    queue, shard, (_first, missing, _last) = filled(root, clock)
    shard.wal.close()
    saved = tmp_path / "saved.swap"
    shutil.move(missing, saved)

    queue, shard = open_(root, clock)
    report = shard.recover()
    assert report.unreadable_swap_files == report.swap_files_without_claims == [missing]
    (alarm,) = shard.unreadable_swap_files()
    assert (alarm.reason, alarm.quarantined) == (ReadFailure.MISSING, False)
    assert sorted(drain(shard, queue)) == sorted(f"id-{i}" for i in (0, 1, 2, 3, 4, 5, 8, 9))
    shutil.move(saved, missing)
    clock.now = shard.unreadable_swap_files()[0].next_attempt_ms
    assert sorted(drain(shard, queue)) == ["id-6", "id-7"] and queue.count == 0


def test_a_crash_between_the_move_into_quarantine_and_its_wal_record_loses_nothing(tmp_path):
    clock, root = Clock(), str(tmp_path / "shard")
    queue, shard, (moved, *_rest) = filled(root, clock)
    shard.wal.close()
    os.makedirs(os.path.join(root, "swap-quarantine"))
    target = os.path.join(root, "swap-quarantine", os.path.basename(moved))
    os.rename(moved, target)  # renamed, then the process died before the WAL update

    queue, shard = open_(root, clock)
    report = shard.recover()
    assert report.orphaned_swap_files == [] and target in shard.wal.swap_files and moved not in shard.wal.swap_files
    assert sorted(drain(shard, queue)) == sorted(f"id-{i}" for i in range(10))  # the file itself was fine


def test_a_copied_shard_directory_reads_its_own_swap_files_and_leaves_the_originals_alone(tmp_path):
    clock, root, copy = Clock(), str(tmp_path / "shard"), str(tmp_path / "copy")
    queue, shard, locations = filled(root, clock)
    shard.wal.close()
    shutil.copytree(root, copy)
    before = swap_files_of(root)

    queue, shard = open_(copy, clock)
    report = shard.recover()
    assert report.orphaned_swap_files == [] and all(
        location.startswith(copy + "/swap/") for location in shard.wal.swap_files
    )
    assert sorted(drain(shard, queue)) == sorted(f"id-{i}" for i in range(10))
    shard.wal.close()
    assert swap_files_of(root) == before and len(before) == len(locations)

    queue, shard = open_(root, clock)  # the original still starts, whole
    shard.recover()
    assert sorted(drain(shard, queue)) == sorted(f"id-{i}" for i in range(10))


def test_a_drop_leaves_an_unreadable_file_quarantined_and_drops_the_rest(tmp_path):
    durable = DurableShard(LocalStorage(), str(tmp_path / "shard"), str(tmp_path / "content"))
    for n in range(9):
        durable.create([f"content {n}".encode()])
    bad = durable.queue.swap_summaries()[0].location
    flip_a_record_byte(bad)
    report = drop_queue(durable.shard, durable.queue, durable.committer)
    (alarm,) = durable.shard.unreadable_swap_files()
    assert alarm.quarantined and report.remaining == alarm.flowfiles == 2
    assert os.path.exists(alarm.location) and set(durable.shard.wal.swap_files) == {alarm.location}
    durable.shard.wal.close()
    durable.content.close()


def test_the_queue_counts_an_unreadable_file_but_it_applies_no_back_pressure(tmp_path):
    clock, root = Clock(), str(tmp_path / "shard")
    queue, shard, (bad, *_rest) = filled(root, clock)
    queue.back_pressure_count = 3
    flip_a_record_byte(bad)
    drain(shard, queue)
    assert queue.count == 2 and not queue.is_full()
    assert queue.summary().swapped_count == 2  # the numbers an operator sees still include them
