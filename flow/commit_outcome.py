"""What a failed durable commit comes to: a pure function of the stage it reached and the error.

A durable commit (`flow.commit.DurableCommitter`) runs in three stages, and records
which `Stage` it is in as it goes:

* prepare - `RECORDS` (the WAL records of the transaction's FlowFiles, swap drops and
  state) and `EVENTS` (the provenance batch and its outbox record): nothing is asked,
  nothing is durable;
* make durable - `ADMIT_CONTENT` (the gate, then the `before_content_sync` seam),
  `CONTENT_SYNC`, `ADMIT_WAL` (the gate again, then `before_wal`), `WAL_WRITE` (the
  commit point) and `AFTER_WAL` (the gate hears of it, then the `after_wal` seam);
* apply - `APPLY`: memory (state, queues: acknowledge the sources, enqueue the
  destinations), claimant counts, provenance.

When a stage raises, `commit_outcome(stage, error)` says what follows, and the
committer does just that: what it counts, what the WAL holds, what becomes of the
session and its FlowFiles, and of the commit's provenance outbox slot. The table:

    stage           an Exception                               a crash (not an Exception)
    RECORDS         propagates, not counted                    propagates
    EVENTS          REFUSED, rolled back                       propagates, slot kept
    ADMIT_CONTENT   REFUSED, rolled back                       propagates, slot kept
    CONTENT_SYNC    FAILED, rolled back                        propagates, slot kept
    ADMIT_WAL       REFUSED, rolled back                       propagates, slot kept
    WAL_WRITE       the WAL refused it (a WriteAheadLogError   propagates, slot kept
                    but OutcomeUnknownError): FAILED, rolled
                    back; any other: UNKNOWN, rolled back,
                    what it references held until the WAL
                    settles it (slot too)
    AFTER_WAL       propagates, slot kept                      propagates, slot kept
    APPLY           COMMITTED: the commit stands (logged)      propagates, slot returned

"Rolled back": `CommitError`, the session puts its FlowFiles back and is retried.
"Propagates": the error goes up as it is, and the session is closed without a rollback,
as after a crash: past the commit point the WAL holds the transaction and a restart
rebuilds memory from it (and provenance from the outbox record, which is why the slot
is kept); before it, a process that is dying needs nothing more. An error while the
records are built (none is expected: they are plain data) propagates the same way.
`on_success` runs after the commit stood, and is not a stage: an error it raises
propagates as it is.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

from repositories.flowfile import OutcomeUnknownError, WriteAheadLogError

# What `DurableCommitter.outcomes` counts.
COMMITTED = "committed"  # the WAL holds it (or it had nothing to write)
REFUSED = "refused"  # the gate (or a seam) refused it; no storage call failed
FAILED = "failed"  # the content sync or the WAL write failed; the WAL holds nothing of it
UNKNOWN = "unknown"  # the WAL did not confirm it; the next roll decides
OUTCOMES = (COMMITTED, REFUSED, FAILED, UNKNOWN)


class Stage(enum.Enum):
    """How far a durable commit got, in the order it goes (see the module docstring)."""

    RECORDS = "records"
    EVENTS = "events"
    ADMIT_CONTENT = "admit content"
    CONTENT_SYNC = "content sync"
    ADMIT_WAL = "admit wal"
    WAL_WRITE = "wal write"
    AFTER_WAL = "after wal"
    APPLY = "apply"


class WalHolds(enum.Enum):
    """What the WAL holds of the transaction."""

    NOTHING = "nothing"
    TRANSACTION = "the transaction"
    UNKNOWN = "unknown until the WAL settles it"  # a recovery may replay it until the WAL rolls


class Fate(enum.Enum):
    """What becomes of the session and its FlowFiles."""

    ROLLED_BACK = "rolled back"  # CommitError: FlowFiles back in their queues, retried
    STANDS = "stands"  # committed: the error is logged, on_success runs
    PROPAGATES = "propagates"  # the error goes up as it is; closed without a rollback


class Slot(enum.Enum):
    """What becomes of the commit's provenance outbox slot, if it took one."""

    RETURN = "returned"
    RETURN_WHEN_SETTLED = "returned when the WAL settles the transaction"  # a replay brings its record back
    KEEP = "kept"  # its record may be all that is left of the events: a restart registers them


class Outcome(NamedTuple):
    counted: str | None  # one of OUTCOMES, or None: not counted
    wal: WalHolds
    session: Fate
    slot: Slot


STOOD = Outcome(COMMITTED, WalHolds.TRANSACTION, Fate.STANDS, Slot.RETURN)
_REFUSED = Outcome(REFUSED, WalHolds.NOTHING, Fate.ROLLED_BACK, Slot.RETURN)
_FAILED = Outcome(FAILED, WalHolds.NOTHING, Fate.ROLLED_BACK, Slot.RETURN)
_UNKNOWN = Outcome(UNKNOWN, WalHolds.UNKNOWN, Fate.ROLLED_BACK, Slot.RETURN_WHEN_SETTLED)

# An Exception at each stage but the WAL write (whose outcome depends on the error).
_OF_EXCEPTION = {
    Stage.RECORDS: Outcome(None, WalHolds.NOTHING, Fate.PROPAGATES, Slot.KEEP),
    Stage.EVENTS: _REFUSED,
    Stage.ADMIT_CONTENT: _REFUSED,
    Stage.CONTENT_SYNC: _FAILED,
    Stage.ADMIT_WAL: _REFUSED,
    Stage.AFTER_WAL: Outcome(None, WalHolds.TRANSACTION, Fate.PROPAGATES, Slot.KEEP),
    Stage.APPLY: STOOD,
}
# A crash (not an Exception: a test's simulated one, SystemExit): nothing more is done.
_WAL_AT_CRASH = {
    Stage.WAL_WRITE: WalHolds.UNKNOWN,
    Stage.AFTER_WAL: WalHolds.TRANSACTION,
    Stage.APPLY: WalHolds.TRANSACTION,
}
_OF_CRASH = {
    stage: Outcome(
        None,
        _WAL_AT_CRASH.get(stage, WalHolds.NOTHING),
        Fate.PROPAGATES,
        Slot.RETURN if stage is Stage.APPLY else Slot.KEEP,
    )  # APPLY returns it on the way out
    for stage in Stage
}


def commit_outcome(stage: Stage, error: BaseException) -> Outcome:
    """What follows when `stage` of a durable commit raises `error` (the module's table)."""
    if not isinstance(error, Exception):
        return _OF_CRASH[stage]
    if stage is Stage.WAL_WRITE:
        # The WAL refused the transaction with nothing written, unless it says the outcome
        # is unknown; an error that is not the WAL's says nothing, so it counts as unknown.
        if isinstance(error, WriteAheadLogError) and not isinstance(error, OutcomeUnknownError):
            return _FAILED
        return _UNKNOWN
    return _OF_EXCEPTION[stage]
