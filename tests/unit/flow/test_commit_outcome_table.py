"""What a durable commit does when it fails at each stage, for each class of error.

`OBSERVED` is the table of outcomes, in what a test can see: what the committer
counts, what becomes of the session and its FlowFiles, and of the commit's provenance
outbox slot. It was written against the committer as it was before its stages and
outcome table were named, and it is checked twice: against a real commit driven
through every stage and error (with fakes of the repositories, no I/O), and against
the pure table `flow.commit_outcome.commit_outcome`."""

from __future__ import annotations

import pytest

from flow.commit import CommitHooks
from flow.commit_outcome import (
    COMMITTED,
    FAILED,
    REFUSED,
    UNKNOWN,
    Fate,
    Outcome,
    Slot,
    Stage,
    WalHolds,
    commit_outcome,
)
from flow.errors import CommitError
from flow.flowfile import FlowFile
from flow.shard import OUTBOX_QUEUE
from repositories.flowfile import OutcomeUnknownError, WriteAheadLogPoisonedError

from .test_session import Recorder, durable_env


class Crash(BaseException):
    """A simulated crash: not an `Exception`, so nothing on the way handles it."""


ERRORS = {
    "wal outcome unknown": lambda: OutcomeUnknownError("/wal", 7, OSError("sync failed"), OSError("roll failed")),
    "wal refused": lambda: WriteAheadLogPoisonedError("/wal", OSError("roll failed")),
    "other exception": lambda: RuntimeError("boom"),
    "crash": lambda: Crash("simulated"),
}

# What becomes of the session (and its FlowFiles).
ROLLED_BACK = "rolled back"  # polled FlowFiles back in their queue, its content released: retried
ROLLED_BACK_HELD = "rolled back, content held"  # the same, but its content is released when the WAL settles
COMMITTED_SESSION = "committed"  # the WAL holds it and memory follows (or a restart rebuilds it); on_success ran
LEFT = "left"  # closed without a rollback, the error propagated as is: the WAL may hold it; a restart decides
# What becomes of the outbox slot the commit took.
NO_SLOT = "none taken"
RETURNED = "returned"
WHEN_SETTLED = "returned when the WAL settles"
KEPT = "kept"

_STAGES = ("records", "events", "admit content", "content sync", "admit wal", "wal write", "after wal", "apply")


def _row(stage, *, wal=None, other=None, crash=None, unknown=None):
    """wal: the outcome of a `WriteAheadLogError` that is not `OutcomeUnknownError`
    (`unknown`), both defaulting to `other`'s."""
    return {
        ("wal outcome unknown", stage): unknown or wal or other,
        ("wal refused", stage): wal or other,
        ("other exception", stage): other,
        ("crash", stage): crash,
    }


OBSERVED = {
    **_row("records", other=(None, LEFT, NO_SLOT), crash=(None, LEFT, NO_SLOT)),
    **_row("events", other=(REFUSED, ROLLED_BACK, RETURNED), crash=(None, LEFT, KEPT)),
    **_row("admit content", other=(REFUSED, ROLLED_BACK, RETURNED), crash=(None, LEFT, KEPT)),
    **_row("content sync", other=(FAILED, ROLLED_BACK, RETURNED), crash=(None, LEFT, KEPT)),
    **_row("admit wal", other=(REFUSED, ROLLED_BACK, RETURNED), crash=(None, LEFT, KEPT)),
    **_row(
        "wal write",
        unknown=(UNKNOWN, ROLLED_BACK_HELD, WHEN_SETTLED),
        wal=(FAILED, ROLLED_BACK, RETURNED),
        other=(UNKNOWN, ROLLED_BACK_HELD, WHEN_SETTLED),
        crash=(None, LEFT, KEPT),
    ),
    **_row("after wal", other=(None, LEFT, KEPT), crash=(None, LEFT, KEPT)),
    **_row("apply", other=(COMMITTED, COMMITTED_SESSION, RETURNED), crash=(None, LEFT, RETURNED)),
}
CASES = sorted(OBSERVED, key=lambda case: (_STAGES.index(case[1]), list(ERRORS).index(case[0])))


class Faults(Recorder):
    """The repositories' fakes, failing at one stage of the commit."""

    def __init__(self):
        super().__init__()
        self.at: dict[str, BaseException] = {}
        self.slots: list[str] = []  # the outbox record of each WAL transaction
        self.slot_taken = False

    def fail(self, stage: str) -> None:
        if stage in self.at:
            raise self.at.pop(stage)

    def peek_next_event_id(self):
        self.slot_taken = True  # asked for the outbox record, once a slot is taken
        self.fail("events")
        return 0

    def sync(self):
        self.fail("content sync")
        super().sync()

    def update(self, updates, sync=True):
        self.fail("wal write")
        self.slots += [
            u.record.id for u in updates if getattr(u, "record", None) and u.record.id.startswith(OUTBOX_QUEUE)
        ]
        super().update(updates, sync)

    def register_batch(self, batch):
        self.fail("apply")
        super().register_batch(batch)

    def register_rows_later(self, rows, done):
        self.fail("apply")
        super().register_rows_later(rows, done)


class Gate:
    def __init__(self, faults: Faults):
        self.faults, self.admits, self.failures = faults, 0, []

    def admit(self, component_id):
        self.admits += 1
        self.faults.fail("admit content" if self.admits == 1 else "admit wal")

    def committed(self, component_id):
        pass

    def failed(self, component_id, error):
        self.failures.append(error)


def environment():
    faults = Faults()
    env = durable_env(faults)
    env.gate = Gate(faults)
    env.committer.gate = env.gate
    env.committer.hooks = CommitHooks(after_wal=lambda component: faults.fail("after wal"))
    original = env.shard.state_updates

    def state_updates(*args, **kwargs):
        faults.fail("records")
        return original(*args, **kwargs)

    env.shard.state_updates = state_updates
    return env, faults


def commit(env, succeeded: list) -> None:
    """A session that takes a queued FlowFile, writes its content and state, and commits
    (the session and the FlowFile are kept in `env.last`)."""
    env.gate.admits = 0
    env.incoming.put(FlowFile.new(env.clock()).in_queue(env.incoming.id))
    session = env.session()
    flowfile = session.write_bytes(session.get(), b"out")
    session.set_state({"seen": flowfile.id})
    session.transfer(flowfile, "success")
    env.last = session, flowfile
    session.commit_async(lambda: succeeded.append(flowfile.id))


def observe(error_name: str, stage: str) -> tuple:
    env, faults = environment()
    commit(env, [])  # a first commit, so that the next has a committed state to build on
    faults.slot_taken = False
    error = faults.at[stage] = ERRORS[error_name]()
    before = env.committer.outcomes.snapshot()
    succeeded: list = []
    raised = None
    try:
        commit(env, succeeded)
    except BaseException as caught:  # noqa: BLE001 - what propagates is what is observed
        raised = caught
    assert stage not in faults.at, f"the commit never reached {stage}"
    after = env.committer.outcomes.snapshot()
    counted = [outcome for outcome, count in after.items() if count != before[outcome]]
    assert len(counted) <= 1 and all(after[outcome] == before[outcome] + 1 for outcome in counted)
    # The session and its FlowFiles.
    session, flowfile = env.last
    held_content = env.content.inner.claimant_count(flowfile.content_claim)
    back_in_queue = env.incoming.has_available()
    if session.is_committed:
        assert raised is None and succeeded == [flowfile.id] and not back_in_queue
        fate = COMMITTED_SESSION
    elif back_in_queue:
        assert isinstance(raised, CommitError) and raised.__cause__ is error and env.gate.failures[-1] is error
        assert succeeded == [] and session.is_closed and raised.wal_written == bool(held_content)
        fate = ROLLED_BACK_HELD if held_content else ROLLED_BACK
    else:
        assert raised is error and succeeded == [] and session.is_closed
        assert env.gate.failures == []
        fate = LEFT
    # The slot: the next commit takes slot 0 again if it was returned.
    taken = faults.slot_taken
    next_slots = []
    for _ in range(2):
        commit(env, [])
        next_slots.append(faults.slots[-1])
        faults.settle()
    slot = {(0, 0): RETURNED, (1, 0): WHEN_SETTLED, (1, 1): KEPT}[tuple(int(s.rsplit("/", 1)[1]) for s in next_slots)]
    if not taken:
        assert slot == RETURNED
        slot = NO_SLOT
    assert env.content.inner.claimant_count(flowfile.content_claim) == (fate != ROLLED_BACK_HELD) * held_content, (
        "content held until the WAL settled is released then"
    )
    return (counted or [None])[0], fate, slot


@pytest.mark.parametrize("error_name, stage", CASES)
def test_a_commit_failing_at_each_stage_has_the_outcome_of_the_table(error_name, stage):
    assert observe(error_name, stage) == OBSERVED[error_name, stage]


# -- the pure table -----------------------------------------------------------------

_SESSION = {Fate.ROLLED_BACK: ROLLED_BACK, Fate.STANDS: COMMITTED_SESSION, Fate.PROPAGATES: LEFT}
_SLOT = {Slot.RETURN: RETURNED, Slot.RETURN_WHEN_SETTLED: WHEN_SETTLED, Slot.KEEP: KEPT}


def as_observed(stage: Stage, outcome: Outcome) -> tuple:
    """What a test of a real commit sees of `outcome` (a commit takes its slot in EVENTS)."""
    session = _SESSION[outcome.session]
    if outcome.session is Fate.ROLLED_BACK and outcome.wal is WalHolds.UNKNOWN:
        session = ROLLED_BACK_HELD
    return outcome.counted, session, NO_SLOT if stage is Stage.RECORDS else _SLOT[outcome.slot]


def test_the_stages_are_those_of_the_table_in_order():
    assert [stage.value for stage in Stage] == list(_STAGES)


@pytest.mark.parametrize("error_name, stage", CASES)
def test_the_pure_table_gives_what_a_real_commit_does(error_name, stage):
    outcome = commit_outcome(Stage(stage), ERRORS[error_name]())
    assert as_observed(Stage(stage), outcome) == OBSERVED[error_name, stage]


@pytest.mark.parametrize("stage", list(Stage))
def test_what_the_wal_holds_follows_the_commit_point(stage):
    """Before the WAL write it holds nothing, after it the transaction; at it, whatever
    the WAL says (unknown unless it refused the transaction)."""
    for make in ERRORS.values():
        error = make()
        wal = commit_outcome(stage, error).wal
        if stage is Stage.WAL_WRITE:
            refused = isinstance(error, WriteAheadLogPoisonedError) and isinstance(error, Exception)
            assert wal is (WalHolds.NOTHING if refused else WalHolds.UNKNOWN)
        elif list(Stage).index(stage) < list(Stage).index(Stage.WAL_WRITE):
            assert wal is WalHolds.NOTHING
        else:
            assert wal is WalHolds.TRANSACTION
