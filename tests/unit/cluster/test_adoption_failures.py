"""Every adoption ends: how a failed attempt is judged (`core.adoption_failures`,
`failover.adoption.failure_kind`) and what a HELD shard is in the ownership state
machine and to the leader, without ZooKeeper or HDFS."""

from __future__ import annotations

import pytest
from kazoo.exceptions import ConnectionLoss

from cluster.core import ownership as own
from cluster.core.adoption_failures import (
    RECHECK_FIRST,
    RECHECK_MAX,
    FailureKind,
    HoldShard,
    RetryLater,
    after_failure,
    recheck_delay,
)
from cluster.core.failovers import taken_over_at
from cluster.core.heartbeat import Heartbeat
from cluster.core.ownership import Refusal, ShardOwnership, ShardState
from cluster.core.reassignment import ExecuteMove, LeaderView, decide
from cluster.core.story import tag
from cluster.core.transitions import check_transition
from cluster.errors import FenceTimeout, OwnershipConflict, WorkGateClosed
from cluster.failover.adoption import failure_kind
from cluster.zk.kazoo_errors import translate
from flow.errors import FlowDefinitionError, QueueRecoveryError
from repositories.flowfile import (
    CheckpointError,
    CorruptJournalError,
    CorruptRecordError,
    CorruptSnapshotError,
    Damage,
    NotAWriteAheadLogError,
    StaleEpochError,
    UnknownSerDeError,
    WalDamagedError,
    WriteAheadLogPoisonedError,
)
from repositories.storage import StorageFileNotFound, StoragePermissionDenied, StorageUnavailable

BOUND = 120.0
STEP = "n3-17:failover/move-n3-17@17"


# -- the decision ----------------------------------------------------------------------------
def test_a_permanent_failure_holds_the_shard_at_the_first_attempt():
    decision = after_failure(
        FailureKind.PERMANENT,
        "WalDamagedError: the FlowFile WAL ... is damaged",
        held=False,
        adopting_for=0.4,
        bound=BOUND,
    )
    assert decision == HoldShard("WalDamagedError: the FlowFile WAL ... is damaged", RECHECK_FIRST)


@pytest.mark.parametrize("adopting_for", [0.0, 119.0, 121.0, 3600.0])
def test_a_transient_failure_is_tried_again_every_second_for_as_long_as_it_lasts(adopting_for):
    # HDFS or ZooKeeper cannot serve the shard: nothing of it can be read, so it stays ADOPTING.
    assert after_failure(
        FailureKind.TRANSIENT, "StorageUnavailable: ...", held=False, adopting_for=adopting_for, bound=BOUND
    ) == RetryLater(1.0)


def test_an_unknown_failure_is_tried_again_until_the_lease_recovery_bound_then_held():
    assert after_failure(
        FailureKind.UNKNOWN, "KeyError: 'q'", held=False, adopting_for=119.9, bound=BOUND
    ) == RetryLater(1.0)
    decision = after_failure(FailureKind.UNKNOWN, "KeyError: 'q'", held=False, adopting_for=120.0, bound=BOUND)
    assert isinstance(decision, HoldShard)
    assert decision.reason.startswith("KeyError: 'q' (still failing after 120s") and "bound of 120s" in decision.reason


@pytest.mark.parametrize("kind", list(FailureKind))
def test_a_held_shard_that_still_fails_is_tried_again_later_and_later(kind):
    delays = [after_failure(kind, "x", held=True, adopting_for=5000.0, bound=BOUND, rechecks=n).after for n in range(8)]
    assert delays == [30.0, 60.0, 120.0, 240.0, 480.0, 600.0, 600.0, 600.0]


@pytest.mark.parametrize("kind", [FailureKind.PERMANENT, FailureKind.UNKNOWN])
def test_a_recheck_that_read_the_shard_and_failed_holds_it_again_with_what_it_found(kind):
    # Held again at once, whatever the bound: the record must say why it is held now.
    decision = after_failure(kind, "QueueRecoveryError: no queue 'q'", held=True, adopting_for=1.0, bound=BOUND)
    assert decision == HoldShard("QueueRecoveryError: no queue 'q'", RECHECK_FIRST)


def test_a_recheck_that_could_not_read_the_shard_leaves_the_reason_it_is_held_for():
    decision = after_failure(
        FailureKind.TRANSIENT, "StorageUnavailable: ...", held=True, adopting_for=1.0, bound=BOUND, rechecks=1
    )
    assert decision == RetryLater(2 * RECHECK_FIRST)


def test_recheck_delay_doubles_up_to_its_cap_and_never_overflows():
    assert recheck_delay(0) == RECHECK_FIRST and recheck_delay(1) == 2 * RECHECK_FIRST
    assert recheck_delay(10**6) == RECHECK_MAX
    assert recheck_delay(2, first=1.0, longest=3.0) == 3.0


@pytest.mark.parametrize("adopting_for", [0.0, 60.0, 119.0, 120.0, 500.0])
@pytest.mark.parametrize("kind", [FailureKind.PERMANENT, FailureKind.UNKNOWN])
def test_no_attempt_keeps_a_shard_adopting_past_the_bound_and_one_retry(kind, adopting_for):
    """The issue's bound, for every failure that is not a service's outage: an attempt
    that begins at `adopting_for` either holds the shard, or retries at most one
    interval later, before the bound."""
    decision = after_failure(kind, "x", held=False, adopting_for=adopting_for, bound=BOUND)
    assert isinstance(decision, HoldShard) or (adopting_for < BOUND and decision.after <= 1.0)


# -- telling the failures apart ----------------------------------------------------------------
def damaged():
    return WalDamagedError("/c1/shards/n3-17-fenced-18/wal", [Damage("/w/journal-1", "the journal is missing")])


def raised_from(error, cause):
    try:
        try:
            raise cause
        except BaseException as inner:
            raise error from inner
    except BaseException as outer:
        return outer


@pytest.mark.parametrize(
    "error",
    [
        damaged(),
        CorruptSnapshotError("/w/snapshot", 0, "file is empty"),
        CorruptJournalError("/w/journal-0", 8, None, "journal header: bad CRC"),
        NotAWriteAheadLogError("/w/notes.txt", 0, "not a WAL file"),
        UnknownSerDeError("/w/journal-0", 20, "other", 9, "FlowFileSerDe 1..3"),
        CorruptRecordError("ff-1", "bad head"),
        StaleEpochError("/w/journal-0", 19, 18),
        QueueRecoveryError("shard n3-17: the FlowFile WAL holds FlowFiles for connections the flow does not define"),
        FlowDefinitionError("unknown processor type 'PutKafka'"),
        raised_from(RuntimeError("recovering the queues failed"), CorruptSnapshotError("/w/snapshot", 0, "bad")),
    ],
    ids=lambda error: type(error).__name__,
)
def test_damage_and_a_flow_that_cannot_hold_the_shard_are_permanent(error):
    assert failure_kind(error) is FailureKind.PERMANENT


@pytest.mark.parametrize(
    "error",
    [
        StorageUnavailable("cannot read hdfs:/w/journal-0: HDFS is unavailable", "/w/journal-0"),
        StoragePermissionDenied("cannot create hdfs:/w: HDFS refuses it", "/w"),
        TimeoutError("the NameNode timed out"),
        translate(ConnectionLoss(), "ShardRegistry.mark_adopted"),  # as ZooKeeper trouble leaves cluster.zk
        WorkGateClosed("SUSPENDED"),
        OwnershipConflict("shard n3-17", "version 3", "version 4"),
        FenceTimeout("n3-17", "/w/journal-0", 120.0),
        raised_from(
            CheckpointError("restoration of /w failed: the forced checkpoint failed"),
            StorageUnavailable("hsync failed", "/w/journal-0"),
        ),
        WriteAheadLogPoisonedError("/w", None),
    ],
    ids=lambda error: type(error).__name__,
)
def test_a_services_trouble_is_transient(error):
    assert failure_kind(error) is FailureKind.TRANSIENT


@pytest.mark.parametrize(
    "error",
    [KeyError("q"), ValueError("odd"), StorageFileNotFound("gone", "/w/x")],
    ids=lambda error: type(error).__name__,
)
def test_anything_else_is_unknown_and_a_missing_file_too(error):
    assert failure_kind(error) is FailureKind.UNKNOWN


# -- HELD in the ownership state machine --------------------------------------------------------
def adopting() -> ShardOwnership:
    home = own.new_shard("n3-17", "n3-17", 17, at=1.0, flow="f" * 16)
    return own.reassign(home, "n1-3", expected_epoch=17, at=2.0, reason="n3-17 died", step=STEP)


def test_a_held_shard_keeps_owner_epoch_and_step_and_says_why():
    held = own.hold(adopting(), "n1-3", 18, at=3.0, reason="WalDamagedError: journal-1 is missing", step=STEP)
    assert (held.owner, held.epoch, held.state, held.flow) == ("n1-3", 18, ShardState.HELD, "f" * 16)
    # The reason, for the operator, ends in the step's tag as it always did.
    assert held.history[-1].reason == f"held by n1-3: WalDamagedError: journal-1 is missing {tag(STEP)}"
    assert held.step == STEP  # the adopter still finds the plan that moved it
    assert ShardOwnership.from_json(held.to_json()) == held


def test_a_held_shard_is_adopted_once_it_opens_and_then_drains():
    held = own.hold(adopting(), "n1-3", 18, at=3.0, reason="x")
    adopted = own.adopted(held, "n1-3", 18, at=4.0)
    assert adopted.state is ShardState.DRAINING
    assert adopted.history[-1].reason == "adopted by n1-3 once it could be opened"
    assert own.retire(adopted, "n1-3", 18, at=5.0).state is ShardState.RETIRED


def test_a_held_shard_whose_recheck_fails_for_another_reason_is_held_again_with_it():
    held = own.hold(adopting(), "n1-3", 18, at=3.0, reason="QueueRecoveryError: no queue 'q'", step=STEP)
    again = own.hold(held, "n1-3", 18, at=40.0, reason="WalDamagedError: journal-1 is missing", step=STEP)
    assert (again.owner, again.epoch, again.state, again.step) == ("n1-3", 18, ShardState.HELD, STEP)
    assert again.history[:-1] == held.history  # the first reason stays in the history...
    # ...and the newest entry, the one `custody cluster status` prints, says why it is held now.
    assert again.history[-1].reason == f"held by n1-3: WalDamagedError: journal-1 is missing {tag(STEP)}"
    assert again.history[-1].at == 40.0
    assert check_transition(held, again) is None
    # The same reason once more: the shard itself, nothing to write (its history is bounded).
    assert own.hold(again, "n1-3", 18, at=70.0, reason="WalDamagedError: journal-1 is missing", step=STEP) is again
    stale = own.hold(again, "n2-9", 18, at=70.0, reason="x")
    assert isinstance(stale, Refusal) and stale.stale


def test_only_its_owner_at_its_epoch_holds_a_shard_and_only_while_adopting_draining_or_held():
    moving = adopting()
    stale = own.hold(moving, "n2-9", 18, at=3.0, reason="x")
    assert isinstance(stale, Refusal) and stale.stale
    assert isinstance(own.hold(moving, "n1-3", 17, at=3.0, reason="x"), Refusal)
    draining = own.adopted(moving, "n1-3", 18, at=3.0)
    assert own.hold(draining, "n1-3", 18, at=4.0, reason="x").state is ShardState.HELD
    for state in (ShardState.ACTIVE, ShardState.RETIRED, ShardState.SPLIT):
        refused = own.hold(ShardOwnership("s", "n1-3", 18, state), "n1-3", 18, at=4.0, reason="x")
        # (a retired shard is nobody's: its claimant is told so, as by every transition)
        assert isinstance(refused, Refusal) and refused.stale is (state is ShardState.RETIRED), state
    assert isinstance(own.retire(own.hold(moving, "n1-3", 18, at=3.0, reason="x"), "n1-3", 18, at=4.0), Refusal)


def beat(name):
    return Heartbeat(name.split("-")[0], name, int(name.split("-")[1]), free_disk=100 << 30, max_threads=4)


def test_a_held_shard_whose_holder_died_moves_on_like_any_other():
    held = own.hold(adopting(), "n1-3", 18, at=3.0, reason="x")
    view = LeaderView("n2-9", 10.0, {"n2-9": beat("n2-9")}, {"n3-17": held}, {}, {})
    moves = [i for i in decide(view) if isinstance(i, ExecuteMove)]
    assert [(m.move.shard, m.move.from_owner, m.move.from_epoch, m.move.to) for m in moves] == [
        ("n3-17", "n1-3", 18, "n2-9")
    ]
    again = own.reassign(held, "n2-9", expected_epoch=18, at=11.0)
    assert (again.state, again.epoch) == (ShardState.ADOPTING, 19)
    # ...and while its holder lives, the leader leaves it alone.
    alive = LeaderView("n1-3", 10.0, {"n1-3": beat("n1-3")}, {"n3-17": held}, {}, {})
    assert decide(alive) == []


def test_a_held_shard_is_not_taken_over_until_it_runs():
    held = own.hold(adopting(), "n1-3", 18, at=3.0, reason="x")
    assert taken_over_at(held, 17) is None
    assert taken_over_at(own.adopted(held, "n1-3", 18, at=9.0), 17) == 9.0
