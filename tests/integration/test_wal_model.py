"""Model-based test of the FlowFile WAL on both backends (Hypothesis, stateful).

Random sequences of updates, checkpoints, clean restarts and crashes (the WAL object
abandoned without close, its leases recovered as an adopter would). After every
restart the recovered map must equal the model of committed transactions.
"""

from __future__ import annotations

import itertools
import time

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

from repositories.claims import ContentClaim, ResourceClaim
from repositories.flowfile import Delete, FlowFileRecord, Put, SwapFile, SwapIn, SwapOut, WriteAheadLog

IDS = [f"ff-{n}" for n in range(12)]
_directories = itertools.count()

text = st.text(alphabet=st.characters(codec="utf-8"), max_size=8)
records = st.builds(
    FlowFileRecord,
    id=st.sampled_from(IDS),
    attributes=st.dictionaries(text, text, max_size=4),
    content_claim=st.one_of(
        st.none(),
        st.builds(
            ContentClaim,
            st.builds(ResourceClaim, st.just("c1"), st.integers(0, 3), st.sampled_from(["r1", "r2"])),
            st.integers(0, 10**6),
            st.integers(0, 10**6),
        ),
    ),
    queue=st.sampled_from(["q1", "q2"]),
    size=st.integers(0, 2**40),
    entry_date=st.integers(0, 2**42),
    lineage_start_date=st.integers(0, 2**42),
    penalty_expiration=st.integers(0, 2**42),
)


def recover_leases(storage, directory: str, deadline_seconds: float = 60.0) -> None:
    """What an adopter does before reading: close every file a dead writer held."""
    for status in storage.list(directory):
        if status.is_dir:
            continue
        delay, deadline = 0.05, time.monotonic() + deadline_seconds
        while not storage.recover_lease(status.path):
            if time.monotonic() > deadline:
                raise TimeoutError(f"lease of {status.path} not recovered in {deadline_seconds}s")
            time.sleep(delay)  # backoff between polls of the NameNode, not a stand-in for a condition
            delay = min(delay * 2, 1.0)


class WalMachine(RuleBasedStateMachine):
    store = None  # set by the test

    @initialize(partitions=st.integers(1, 3))
    def open(self, partitions):
        self.directory = f"{self.store.root}/wal-{next(_directories)}"
        self.partitions = partitions
        self.model: dict = {}
        self.swaps: dict = {}
        self.swap_names = itertools.count()
        self.wal = self._reopen()

    def _reopen(self):
        wal = WriteAheadLog(self.store.storage, self.directory, partitions=self.partitions, checkpoint_interval=None)
        assert wal.recover() == self.model
        assert wal.swap_files == self.swaps
        return wal

    @rule(batch=st.lists(records, min_size=1, max_size=4))
    def put(self, batch):
        self.wal.update([Put(record) for record in batch])
        for record in batch:
            self.model[record.id] = record

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def delete(self, data):
        record_id = data.draw(st.sampled_from(sorted(self.model)))
        self.wal.update([Delete(record_id)])
        del self.model[record_id]

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def swap_out(self, data):
        ids = data.draw(st.lists(st.sampled_from(sorted(self.model)), min_size=1, max_size=3, unique=True))
        swap = SwapFile(f"swap/{next(self.swap_names)}", "q1", len(ids), sum(self.model[i].size for i in ids))
        self.wal.update([SwapOut(swap, tuple(ids))])
        self.swaps[swap.location] = swap
        self.swapped = getattr(self, "swapped", {})
        self.swapped[swap.location] = [self.model.pop(i) for i in ids]

    @precondition(lambda self: self.swaps)
    @rule(data=st.data())
    def swap_in(self, data):
        location = data.draw(st.sampled_from(sorted(self.swaps)))
        back = [record for record in self.swapped.pop(location) if record.id not in self.model]
        self.wal.update([SwapIn(location)] + [Put(record) for record in back])
        del self.swaps[location]
        for record in back:
            self.model[record.id] = record

    @rule()
    def checkpoint(self):
        self.wal.checkpoint()

    @rule()
    def restart(self):
        self.wal.close()
        self.wal = self._reopen()

    @rule(partitions=st.integers(1, 3))
    def crash_and_adopt(self, partitions):
        # Abandon the writer mid-flight, as a SIGKILL would; the next owner recovers
        # the leases, possibly with another partition count.
        self.wal = None
        recover_leases(self.store.storage, self.directory)
        self.partitions = partitions
        self.wal = self._reopen()

    @invariant()
    def memory_matches_model(self):
        if getattr(self, "wal", None) is not None:
            assert self.wal.records == self.model

    def teardown(self):
        if getattr(self, "wal", None) is not None:
            self.wal.close()


@pytest.mark.parametrize("backend", ["local", pytest.param("hdfs", marks=[pytest.mark.hdfs, pytest.mark.slow])])
def test_wal_matches_model(request, backend):
    store = request.getfixturevalue(f"{backend}_store")
    machine = type("WalMachineOn" + backend.title(), (WalMachine,), {"store": store})
    examples = settings().max_examples if backend == "local" else max(5, settings().max_examples // 6)
    run_state_machine_as_test(machine, settings=settings(settings(), max_examples=examples, stateful_step_count=25))
