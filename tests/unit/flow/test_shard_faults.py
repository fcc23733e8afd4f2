"""A shard, its committer and its WAL under storage faults: what a failed write may
leave behind must never come back after a crash.

Each test drives a `DurableShard` (tests/durable_shard.py) over a `FaultyStorage`,
crashes it, and compares what recovery brings back with what the commits answered.
"""

from __future__ import annotations

import pytest

from flow.errors import CommitError
from tests.durable_shard import DurableShard
from tests.storage_faults import Fault, FaultyStorage, UnbufferedLocalStorage


@pytest.fixture
def durable(tmp_path):
    (tmp_path / "shard").mkdir()
    shard = DurableShard(
        FaultyStorage(UnbufferedLocalStorage()), str(tmp_path / "shard"), str(tmp_path / "content"), partitions=3
    )
    yield shard
    shard.close()


def answered(step) -> dict | None:
    """The effects of a commit that was acknowledged, or None if it raised CommitError."""
    try:
        return step()
    except CommitError:
        return None


@pytest.mark.parametrize("roll_fails", [False, True], ids=["roll-succeeds", "roll-fails-once"])
def test_a_swap_out_whose_sync_failed_after_the_write_never_brings_processed_flowfiles_back(durable, roll_fails):
    """The SwapOut reaches the journal and its sync fails (a dying DataNode); the batch
    is then processed and deleted. A crash must not bring the batch back from the swap
    file, nor leave the file behind."""
    storage = durable.storage
    model = durable.create([b"a", b"b", b"c", b"d"])  # the queue's threshold
    storage.arm(Fault("sync", "after", path="journal", skip=1))  # the Puts' sync passes, the SwapOut's fails
    if roll_fails:
        storage.arm(Fault("create", "before", path="snapshot.partial"))
    model.update(durable.create([b"e", b"f"]))
    assert [(operation, when) for operation, when, _ in storage.injected][:1] == [("sync", "after")]
    for _ in range(6):  # process everything, swapped or not
        changes = answered(lambda: durable.process([None] * 3)) or {}
        for flowfile_id in changes:
            del model[flowfile_id]
        durable.collect()
    assert model == {} and durable.queue.count == 0
    durable.restart(keep=1.0)  # crash: every byte written stays
    assert durable.live() == {}
    assert durable.shard.wal.swap_files == {} and durable.shard.swap_store.locations() == []
    assert not durable.content_recovery.missing


@pytest.mark.parametrize("rolls_failing", [0, 1, 2])
def test_a_commit_that_failed_is_never_recovered_once_a_later_one_was_acknowledged(durable, rolls_failing):
    """The syncs of X and the next transaction fail after their bytes reached the
    journal (X's is healed at once if a checkpoint works, the other not), and the first
    `rolls_failing` checkpoints fail; then Z, and W once the storage works again, on
    other partitions. Whatever each commit answered, a crash must bring back exactly
    the acknowledged ones, and W must be acknowledged (no timer has to pass first)."""
    storage = durable.storage
    model = durable.create([b"0"])
    storage.arm(Fault("sync", "after", path="journal"))  # X's
    # The next transaction's: after the 3 syncs of the journals a checkpoint resets.
    storage.arm(Fault("sync", "after", path="journal", skip=3))
    if rolls_failing:
        storage.arm(Fault("create", "before", path="snapshot.partial", times=rolls_failing))
    answers = [answered(lambda payload=payload: durable.create([payload])) for payload in (b"X", b"Y", b"Z")]
    storage.disarm()
    answers.append(durable.create([b"W"]))
    for effects in answers:
        model.update(effects or {})
    durable.collect()
    assert durable.live() == model  # memory never holds a failed commit
    durable.restart(keep=1.0)  # crash: every byte written stays
    assert durable.live() == model
    assert not durable.content_recovery.missing
    assert durable.claimants() == {
        resource: durable.content.claimant_count(resource) for resource in durable.claimants()
    }
