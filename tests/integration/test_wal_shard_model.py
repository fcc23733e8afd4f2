"""Model-based fault-injection test of a durable shard (Hypothesis, stateful).

A `QueueShard` with its WAL and swap store, a content repository and a
`DurableCommitter` (tests/durable_shard.py) run commits that create, rewrite and drop
FlowFiles with content; the queue's small swap threshold makes them swap out and in
all the time; checkpoints run in between. The storage under the WAL and the swap files
(tests/storage_faults.py) fails any create, write, sync, close, rename or delete,
before or after it reached the storage, or crashes there; a crash can also come
between two steps. A crash drops everything in memory, then the shard is reopened and
recovered from storage.

The model holds the FlowFiles (id -> content) of the acknowledged commits, and the
commits whose outcome is unknown (`CommitError.wal_written`, or a crash in flight),
which may each be replayed, whole, until a later commit is acknowledged: the WAL may
acknowledge nothing while one of them can still be replayed. A commit must be acknowledged
whenever no fault is armed: the WAL recovers from a failure by itself, no timer
involved. Checked after every step: the shard holds exactly the model (no acknowledged FlowFile lost, no rolled-back or
processed one back), every FlowFile's content is readable, and no resource has fewer
claimants than FlowFiles referencing it (exactly as many when nothing is unknown).
After each crash: the recovered shard is the model with some of its unknown commits
applied, each swap file the WAL names exists and no other is left (orphans removed),
and no live FlowFile's content is missing.

Local disk runs 200 examples (30 to 60 s on two shared cores), HDFS 8; CUSTODY_LONG=1
runs 2000 and 60. A random search finds a narrow window only by chance, so the
defects found once (by hand or by this search) are pinned below as scripted sequences.
"""

from __future__ import annotations

import itertools
import os

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from flow.errors import CommitError
from repositories.flowfile import CheckpointError
from tests.durable_shard import DurableShard
from tests.storage_faults import OPERATIONS, Crash, Fault, FaultyStorage, UnbufferedLocalStorage

LONG = os.environ.get("CUSTODY_LONG", "") not in ("", "0")
_shards = itertools.count()

payloads = st.binary(min_size=1, max_size=12)
# Weighted towards the calls that run on every commit and every roll, so that armed
# faults strike soon; every operation and path stays possible.
operations = st.sampled_from(OPERATIONS + ("write", "sync", "sync", "create"))
faults = st.builds(
    Fault,
    operation=operations,
    when=st.sampled_from(["before", "after"]),
    path=st.sampled_from(["journal", "journal", "snapshot", "swap", ""]),
    skip=st.sampled_from([0, 0, 1, 2, 4]),
    times=st.sampled_from([1, 1, 2, None]),
)
# A failed write or sync of a transaction, and a failure of the roll that follows it
# (of its snapshot, or of the journals it resets): the narrow window of an unknown outcome.
transaction_faults = st.builds(
    Fault,
    operation=st.sampled_from(["write", "sync"]),
    when=st.sampled_from(["before", "after"]),
    path=st.sampled_from(["journal", "journal", "swap"]),
    skip=st.sampled_from([0, 1]),
)
roll_faults = st.builds(
    Fault,
    operation=operations,
    when=st.sampled_from(["before", "after"]),
    path=st.sampled_from(["snapshot", "journal"]),
    times=st.sampled_from([1, 2, None]),
)
keeps = st.sampled_from([0.0, 0.5, 1.0])


def applied(model: dict, effects: dict) -> dict:
    """The model after a commit: each id gets its new content, or is gone (None)."""
    result = dict(model)
    for flowfile_id, content in effects.items():
        if content is None:
            result.pop(flowfile_id, None)
        else:
            result[flowfile_id] = content
    return result


class ShardMachine(RuleBasedStateMachine):
    store = None  # StoreRoot of the backend, set by the test
    content_root = None  # a local directory for the content repositories, set by the test

    @initialize(partitions=st.integers(1, 3))
    def open(self, partitions):
        number = next(_shards)
        root = f"{self.store.root}/shard-{number}"
        self.store.storage.mkdir(root)
        inner = UnbufferedLocalStorage() if self.store.storage.scheme == "file" else self.store.storage
        self.storage = FaultyStorage(inner)
        self.durable = DurableShard(
            self.storage, root, os.path.join(self.content_root, f"content-{number}"), partitions=partitions
        )
        self.model: dict = {}
        self.unknown: list[dict] = []  # effects of commits of unknown outcome, oldest first
        self.crash_keep = 0.0
        self.steps_since_restart = 0

    # -- steps -----------------------------------------------------------------------

    def _commit(self, action) -> None:
        """Run a step that commits; update the model from how it ended."""
        effects: dict = {}
        storage_works = not self.storage.faults
        try:
            action(effects)
            acknowledged = True
        except Crash:
            acknowledged = None  # in flight: applied whole or not at all
        except CommitError as error:
            # No timer has to pass, and no checkpoint has to be asked for, after a
            # failure: once the storage works, the next commit goes through.
            assert not storage_works, f"the storage works, yet the commit failed: {error}"
            acknowledged = None if error.wal_written else False
        if self.storage.crashed:  # whatever the code under test made of the crash
            acknowledged = None
        if acknowledged is None:
            self.unknown.append(effects)
        elif acknowledged and effects:  # a WAL transaction was acknowledged: nothing earlier is replayable now
            self.model = applied(self.model, effects)
            self.unknown.clear()
        if self.storage.crashed:
            self._recover(self.crash_keep)
        else:
            self.durable.collect()

    @rule(contents=st.lists(payloads, min_size=1, max_size=4))
    def create(self, contents):
        self._commit(lambda effects: self.durable.create(contents, effects))

    @precondition(lambda self: self.model)
    @rule(decisions=st.lists(st.one_of(st.none(), payloads), min_size=1, max_size=4))
    def process(self, decisions):
        self._commit(lambda effects: self.durable.process(decisions, effects))

    @precondition(lambda self: self.model)
    @rule(count=st.integers(1, 6))
    def drop(self, count):
        self._commit(lambda effects: self.durable.process([None] * count, effects))

    @rule()
    def checkpoint(self):
        try:
            self.durable.shard.wal.checkpoint()
            if not self.storage.crashed:
                self.unknown.clear()  # a checkpoint is a roll: it settles every unknown outcome
        except (CheckpointError, Crash):
            pass
        if self.storage.crashed:
            self._recover(self.crash_keep)

    @rule(fault=faults)
    def fail(self, fault):
        self.storage.arm(fault)

    @rule(fault=transaction_faults, roll=roll_faults)
    def fail_and_fail_the_roll(self, fault, roll):
        self.storage.arm(fault)
        self.storage.arm(roll)

    @rule(fault=faults, keep=keeps)
    def crash_there(self, fault, keep):
        fault.crash, fault.times, self.crash_keep = True, 1, keep
        self.storage.arm(fault)

    @precondition(lambda self: self.unknown or self.steps_since_restart >= 3)
    @rule(keep=keeps)
    def crash(self, keep):
        self._recover(keep)

    @rule()
    def repair(self):
        self.storage.disarm()

    # -- checks ----------------------------------------------------------------------

    def _recover(self, keep: float) -> None:
        self.steps_since_restart = 0
        self.durable.restart(keep)
        recovered = self.durable.live()  # raises if a live FlowFile's content is gone
        candidates = [applied_all(self.model, chosen) for chosen in subsets(self.unknown)]
        assert recovered in candidates, (
            f"recovered {sorted(recovered)}, expected the model {sorted(self.model)} with some of the "
            f"commits of unknown outcome {self.unknown}"
        )
        shard = self.durable.shard
        assert set(shard.swap_store.locations()) == set(shard.wal.swap_files), "a swap file missing or orphaned"
        assert not self.durable.content_recovery.missing
        self.model, self.unknown = recovered, []

    @invariant()
    def shard_holds_the_model(self):
        if not hasattr(self, "durable"):
            return
        self.steps_since_restart += 1
        assert self.durable.live() == self.model
        assert self.durable.queue.count == len(self.model)
        content, claimants = self.durable.content, self.durable.claimants()
        counted = {resource: content.claimant_count(resource) for resource in claimants}
        assert all(counted[resource] >= claimants[resource] for resource in claimants), (counted, claimants)
        if not self.unknown:
            assert counted == claimants

    def teardown(self):
        if hasattr(self, "durable"):
            self.durable.close()


def subsets(items: list) -> list[list]:
    return [list(chosen) for size in range(len(items) + 1) for chosen in itertools.combinations(items, size)]


def applied_all(model: dict, effects_list: list) -> dict:
    for effects in effects_list:
        model = applied(model, effects)
    return model


@pytest.mark.parametrize("backend", ["local", pytest.param("hdfs", marks=[pytest.mark.hdfs, pytest.mark.slow])])
def test_shard_under_storage_faults_and_crashes_matches_the_model(request, backend, tmp_path):
    store = request.getfixturevalue(f"{backend}_store")
    machine = type("ShardMachineOn" + backend.title(), (ShardMachine,), {"store": store, "content_root": str(tmp_path)})
    if backend == "local":
        examples = 2000 if LONG else 200
    else:
        examples = 60 if LONG else 8
    run_state_machine_as_test(machine, settings=settings(settings(), max_examples=examples, stateful_step_count=30))


# -- pinned sequences: defects found once, replayed step by step ----------------------


def run_pinned(local_store, tmp_path, partitions: int, steps: list) -> None:
    machine_class = type("PinnedShardMachine", (ShardMachine,), {"store": local_store, "content_root": str(tmp_path)})
    machine = machine_class()
    try:
        machine.open(partitions=partitions)
        machine.shard_holds_the_model()
        for name, arguments in steps:
            getattr(machine, name)(**arguments)
            machine.shard_holds_the_model()
    finally:
        machine.teardown()


def test_pinned_a_swap_out_whose_sync_fails_after_the_write(local_store, tmp_path):
    """The SwapOut's bytes reach the journal and its sync fails; the batch is processed
    and deleted; a crash must not bring it back (before: it came back from the swap
    file, its content already collected)."""
    run_pinned(
        local_store,
        tmp_path,
        2,
        [
            ("create", {"contents": [b"a", b"b", b"c", b"d"]}),
            ("fail", {"fault": Fault("sync", "after", path="journal", skip=1)}),  # the Puts' passes
            ("create", {"contents": [b"e", b"f"]}),  # the Puts, then the swap-out
            *[("process", {"decisions": [None, None, None]})] * 3,
            ("crash", {"keep": 1.0}),
        ],
    )


def test_pinned_a_failed_commit_is_not_replayed_after_a_later_one_was_acknowledged(local_store, tmp_path):
    """X's and Y's syncs fail after their bytes reached the journals (X's healed by a
    checkpoint at once, Y's not), Z commits on the third partition; a crash must not
    bring back what was reported failed (before: Y came back)."""
    run_pinned(
        local_store,
        tmp_path,
        3,
        [
            ("create", {"contents": [b"0"]}),
            ("fail", {"fault": Fault("sync", "after", path="journal")}),
            ("fail", {"fault": Fault("sync", "after", path="journal", skip=3)}),  # past a checkpoint's 3 journal resets
            ("create", {"contents": [b"X"]}),
            ("create", {"contents": [b"Y"]}),
            ("create", {"contents": [b"Z"]}),
            ("crash", {"keep": 1.0}),
        ],
    )


def test_pinned_an_unknown_outcome_settled_by_the_next_commit(local_store, tmp_path):
    """X's sync and the roll after it fail (unknown outcome); the next commit, on other
    FlowFiles, rolls first, which settles X; a crash in the middle of a later commit's
    sync. X must never come back (before: it was replayed beside the next commit)."""
    run_pinned(
        local_store,
        tmp_path,
        2,
        [
            ("create", {"contents": [b"0", b"1", b"2"]}),
            ("fail", {"fault": Fault("sync", "after", path="journal")}),
            ("fail", {"fault": Fault("create", "before", path="snapshot.partial")}),
            ("process", {"decisions": [b"X", None]}),  # rewrites the first, drops the second
            ("process", {"decisions": [None]}),  # drops the first only
            ("crash_there", {"fault": Fault("sync", "before", path="journal"), "keep": 0.5}),
            ("create", {"contents": [b"Z"]}),
        ],
    )


def test_pinned_a_crash_while_a_commit_of_unknown_outcome_is_unsettled(local_store, tmp_path):
    """A commit's sync and every roll fail: its outcome is unknown, so its content must
    survive until the WAL settles it, and a crash then may replay it, whole. Then the
    same again, but the storage is repaired and a commit on other FlowFiles goes
    through before the crash: the first must not come back (before: it did)."""
    unknown_commit = [
        (
            "fail_and_fail_the_roll",
            {
                "fault": Fault("sync", "after", path="journal"),
                "roll": Fault("create", "before", path="snapshot", times=None),
            },
        ),
        ("process", {"decisions": [b"rewritten", None]}),  # rewrites the first, drops the second
        ("create", {"contents": [b"refused"]}),
    ]
    run_pinned(
        local_store,
        tmp_path,
        2,
        [
            ("create", {"contents": [b"0", b"1", b"2"]}),
            *unknown_commit,
            ("crash", {"keep": 1.0}),
            *unknown_commit,
            ("repair", {}),
            ("process", {"decisions": [None]}),  # drops the first only
            ("crash", {"keep": 1.0}),
        ],
    )


def test_pinned_a_crash_while_a_swap_out_of_unknown_outcome_is_unsettled(local_store, tmp_path):
    """A SwapOut's sync and every roll fail: a recovery may replay the SwapOut, so its
    swap file must stay until the WAL settles it. Then the same again, but the storage
    is repaired and the batch is processed before the crash: it must not come back
    (before: it did, from the swap file)."""
    unknown_swap_out = [
        (
            "fail_and_fail_the_roll",
            {
                "fault": Fault("sync", "after", path="journal", skip=1),
                "roll": Fault("create", "before", path="snapshot", times=None),
            },
        ),
        ("create", {"contents": [b"e", b"f"]}),  # the Puts, then the swap-out
    ]
    run_pinned(
        local_store,
        tmp_path,
        2,
        [
            ("create", {"contents": [b"a", b"b", b"c", b"d"]}),
            *unknown_swap_out,
            ("crash", {"keep": 1.0}),
            *[("drop", {"count": 6})] * 2,
            ("create", {"contents": [b"a", b"b", b"c", b"d"]}),
            *unknown_swap_out,
            ("repair", {}),
            *[("drop", {"count": 6})] * 3,
            ("crash", {"keep": 1.0}),
        ],
    )


def test_pinned_a_checkpoint_that_failed_past_the_snapshot_delete_then_a_crash_in_the_next(local_store, tmp_path):
    """Found by the search: a checkpoint fails after deleting the snapshot (its rename
    fails); the next one crashes right after creating .partial again. The state must
    survive (before: .partial, its only copy, was truncated)."""
    run_pinned(
        local_store,
        tmp_path,
        1,
        [
            ("create", {"contents": [b"a", b"b"]}),
            ("fail", {"fault": Fault("rename", "before", path="snapshot")}),
            ("checkpoint", {}),
            ("crash_there", {"fault": Fault("create", "after", path="snapshot"), "keep": 0.0}),
            ("checkpoint", {}),
        ],
    )
