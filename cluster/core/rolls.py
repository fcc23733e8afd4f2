"""A rolling flow deploy as a state machine kept in ZooKeeper: the model and every
decision about it, no I/O, no clock (times come in).

The node that receives a deploy checks the flow, publishes it as the cluster's flow
and writes a new `Roll` (`new_roll`). From then on the roll lives in one znode
(`cluster.zk.operator`), and two kinds of actors move it on, each by a
compare-and-set of the value these functions return:

* the **leader** drives it (`advance`): one member at a time, the leader last (so
  leadership moves once), it asks the member to offload, waits until its shards are
  adopted, asks it to connect, and waits until its new incarnation runs the new
  version. A leader that finds a roll another leader drove takes it over, saying
  after what (`take_over`), and then finishes it, or aborts it when it cannot be
  finished as it was asked (the cluster's flow changed since; a step ran out of time).
  The leader's own step makes it leave the cluster, so every roll of two or more
  members is finished by a leader that took it over.
* each **member** acts on its own step (`member_action`): it offloads itself when its
  step says `offloading`, and connects again once its step is past that. No call goes
  from node to node: nothing needs the operator's token after the roll was accepted.

Roll states: running, then done or failed (as the admin API always said); `outcome`
says who finished or aborted it and after what, e.g. "finished by leader n2-9 after
n1-4 died" or "aborted by leader n3-7 after n1-4 died: ..." (a leader leaving for its
own step is how every roll ends, and is in `notes`, not in the outcome).

Step states: waiting -> offloading -> connecting -> done; skipped (already on the
version, or not a member any more); failed (the roll stops there).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from .heartbeat import Heartbeat
from .incarnation import Incarnation
from .ownership import ShardOwnership, ShardState

RUNNING, DONE, FAILED = "running", "done", "failed"
WAITING, SKIPPED, OFFLOADING, CONNECTING, STEP_DONE, STEP_FAILED = (
    "waiting",
    "skipped",
    "offloading",
    "connecting",
    "done",
    "failed",
)
IN_PROGRESS = (OFFLOADING, CONNECTING)
DEFAULT_STEP_TIMEOUT = 180.0  # seconds for an offload, and for a connect, of one member
NOTES_LIMIT = 40
OWN_STEP = "left the cluster for its own step"


@dataclass(frozen=True)
class RollStep:
    incarnation: str  # the member as the roll found it
    node: str
    admin: str = ""
    state: str = WAITING
    detail: str = ""
    new_incarnation: str | None = None
    since: float | None = None  # when the step entered its state (offloading, connecting)
    offloaded: bool = False  # the roll asked this member to offload: it connects again whatever happens


@dataclass(frozen=True)
class Roll:
    roll_id: str
    version: str  # the flow version (a hash of the document: `flows.FlowSnapshot`)
    received_by: str  # the incarnation whose admin API took the deploy
    started_at: float
    steps: tuple[RollStep, ...]
    state: str = RUNNING
    driver: str | None = None  # the leader driving it now (None: not picked up yet)
    error: str | None = None
    outcome: str | None = None
    finished_at: float | None = None
    step_timeout: float = DEFAULT_STEP_TIMEOUT
    # Drivers that left while it ran, and why: "n1-4 died", "n1-4 left for its own step".
    handovers: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def to_json(self) -> bytes:
        body = {key: value for key, value in vars(self).items() if key not in ("steps", "handovers", "notes")}
        body["steps"] = [vars(step).copy() for step in self.steps]
        body["handovers"], body["notes"] = list(self.handovers), list(self.notes)
        return json.dumps(body, sort_keys=True).encode()

    @classmethod
    def from_json(cls, data: bytes) -> Roll:
        body = json.loads(data.decode())
        if not isinstance(body, dict):
            raise ValueError("a roll is a JSON object")
        steps = tuple(RollStep(**step) for step in body.pop("steps"))
        handovers, notes = tuple(body.pop("handovers", ())), tuple(body.pop("notes", ()))
        return cls(steps=steps, handovers=handovers, notes=notes, **body)


@dataclass(frozen=True)
class RollView:
    """What the leader reads before it decides: itself, the time, the live members,
    the shards, and the cluster's flow version now."""

    leader: str
    now: float
    members: dict[str, Heartbeat]
    shards: dict[str, ShardOwnership]
    cluster_version: str | None


def roll_order(members: dict[str, Heartbeat], leader: str | None) -> list[str]:
    """Members by name, the leader last: leadership moves once."""
    return sorted(members, key=lambda incarnation: (incarnation == leader, members[incarnation].node, incarnation))


def new_roll(
    version: str,
    members: dict[str, Heartbeat],
    leader: str | None,
    shard_flows: dict[str, str | None],
    *,
    received_by: str,
    at: float,
    step_timeout: float = DEFAULT_STEP_TIMEOUT,
) -> Roll:
    """The roll a deploy starts: every member in `roll_order`, those whose home shard
    already runs `version` skipped."""
    steps = []
    for incarnation in roll_order(members, leader):
        step = RollStep(incarnation, members[incarnation].node, members[incarnation].admin)
        if shard_flows.get(incarnation) == version:
            step = replace(step, state=SKIPPED, detail="already runs this version")
        steps.append(step)
    return Roll(
        f"{version}@{int(at * 1000)}",
        version,
        received_by,
        at,
        tuple(steps),
        step_timeout=step_timeout,
        notes=(f"received by {received_by}",),
    )


def may_start(current: Roll | None) -> str | None:
    """None when a new deploy may start; otherwise why not."""
    if current is not None and current.state == RUNNING:
        return (
            f"a deploy of flow version {current.version} is running (driven by "
            f"{current.driver or 'the leader, once it picks it up'}); wait for it"
        )
    return None


# -- the leader's decisions ------------------------------------------------------------------------
def advance(roll: Roll, view: RollView) -> Roll | None:
    """The next value of a running roll, or None when there is nothing to do yet. One
    transition per call: the caller writes it (compare-and-set) and calls again."""
    if roll.state != RUNNING:
        return None
    if roll.driver != view.leader:
        return take_over(roll, view)
    index = _current(roll)
    if index is None:
        return _finish(roll, view, DONE)
    step = roll.steps[index]
    if step.state == WAITING:
        return _begin(roll, index, view)
    if step.state == OFFLOADING:
        return _offloading(roll, index, view)
    return _connecting(roll, index, view)


def take_over(roll: Roll, view: RollView) -> Roll:
    """The leader picks up a roll it does not drive: a new one (no driver), or one whose
    driver left. It finishes the roll unless the cluster's flow is no longer the roll's
    version (another deploy, or an operator, changed it): then it aborts."""
    me, previous = view.leader, roll.driver
    if previous is None:
        taken = _note(replace(roll, driver=me), f"driven by leader {me}")
    else:
        why = _departure(roll, previous, view)
        taken = _note(
            replace(roll, driver=me, handovers=roll.handovers + (why,)), f"taken over by leader {me} after {why}"
        )
    if view.cluster_version != roll.version:
        now = view.cluster_version or "none"
        return _abort(taken, view, f"the cluster's flow is now version {now}, not {roll.version}")
    return taken


def _departure(roll: Roll, previous: str, view: RollView) -> str:
    if previous in view.members:
        return f"{previous} stopped leading"
    own = next((step for step in roll.steps if step.incarnation == previous), None)
    if own is not None and own.state in IN_PROGRESS:
        return f"{previous} {OWN_STEP}"
    return f"{previous} died"


def _current(roll: Roll) -> int | None:
    for index, step in enumerate(roll.steps):
        if step.state in IN_PROGRESS:
            return index
    for index, step in enumerate(roll.steps):
        if step.state == WAITING:
            return index
    return None


def _begin(roll: Roll, index: int, view: RollView) -> Roll:
    step = roll.steps[index]
    if step.incarnation not in view.members:
        return _step(
            roll,
            index,
            state=SKIPPED,
            detail="not a member any more (it died or left): its next incarnation runs the cluster's flow",
        )
    home = view.shards.get(step.incarnation)
    if home is not None and home.flow == roll.version:
        return _step(roll, index, state=SKIPPED, detail="already runs this version")
    others = [name for name in view.members if name != step.incarnation]
    if not others:
        return _fail(roll, index, view, "it is the only member: nobody could take its shards over")
    return _step(roll, index, state=OFFLOADING, detail="", since=view.now, offloaded=True)


def _offloading(roll: Roll, index: int, view: RollView) -> Roll | None:
    step = roll.steps[index]
    late = view.now - (step.since or view.now) > roll.step_timeout
    if step.incarnation in view.members:
        if late:
            return _fail(roll, index, view, f"still a member {roll.step_timeout:.0f} s after it was asked to offload")
        return None
    if owns_nothing(step.incarnation, view.shards):
        return _step(roll, index, state=CONNECTING, detail="offloaded", since=view.now)
    if late:
        return _fail(
            roll,
            index,
            view,
            f"its shards are still being adopted {roll.step_timeout:.0f} s after it was asked to offload",
        )
    return None


def _connecting(roll: Roll, index: int, view: RollView) -> Roll | None:
    step = roll.steps[index]
    joined = _next_incarnation(step, view)
    if joined is not None:
        home = view.shards.get(joined)
        if home is not None and home.flow == roll.version:
            return _step(roll, index, state=STEP_DONE, detail=f"runs {roll.version}", new_incarnation=joined)
        if home is not None and home.flow is not None:
            return _fail(
                roll,
                index,
                view,
                f"joined again as {joined} on flow version {home.flow}, not "
                f"{roll.version}: it cannot run it (its log says why)",
            )
    if view.now - (step.since or view.now) > roll.step_timeout:
        return _fail(
            roll,
            index,
            view,
            f"not running version {roll.version} {roll.step_timeout:.0f} s after it "
            "was asked to connect: is its process running?",
        )
    return None


def _next_incarnation(step: RollStep, view: RollView) -> str | None:
    """The live incarnation of the step's node after the one the roll found, once its
    home shard runs (its heartbeat names it)."""
    try:
        before = Incarnation.parse(step.incarnation).epoch
    except ValueError:
        before = -1
    for name, beat in sorted(view.members.items(), key=lambda item: -item[1].epoch):
        if beat.node == step.node and name != step.incarnation and beat.epoch > before and name in beat.owned_shards:
            return name
    return None


def owns_nothing(incarnation: str, shards: dict[str, ShardOwnership]) -> bool:
    """No shard names `incarnation` its owner, and none it owned is still being adopted
    (fenced and recovered by its new owner)."""
    for shard in shards.values():
        if shard.state is ShardState.RETIRED:
            continue
        if shard.owner == incarnation:
            return False
        if shard.state is ShardState.ADOPTING and any(entry.owner == incarnation for entry in shard.history):
            return False
    return True


def _step(roll: Roll, index: int, **changes: Any) -> Roll:
    steps = list(roll.steps)
    steps[index] = replace(steps[index], **changes)
    return replace(roll, steps=tuple(steps))


def _fail(roll: Roll, index: int, view: RollView, detail: str) -> Roll:
    return _fail_step(roll, index, detail, leader=view.leader, at=view.now)


def _fail_step(roll: Roll, index: int, detail: str, *, leader: str | None, at: float, **changes: Any) -> Roll:
    step = roll.steps[index]
    failed = _step(roll, index, state=STEP_FAILED, detail=detail, **changes)
    return _finish_at(failed, FAILED, leader=leader, at=at, error=f"{step.incarnation}: {detail}")


def _abort(roll: Roll, view: RollView, reason: str) -> Roll:
    index = next((i for i, step in enumerate(roll.steps) if step.state in IN_PROGRESS), None)
    if index is not None:
        roll = _step(roll, index, state=STEP_FAILED, detail=f"the roll was aborted: {reason}")
    return _finish(roll, view, FAILED, error=reason)


def _finish(roll: Roll, view: RollView, state: str, *, error: str | None = None) -> Roll:
    return _finish_at(roll, state, leader=view.leader, at=view.now, error=error)


def _finish_at(roll: Roll, state: str, *, leader: str | None, at: float, error: str | None = None) -> Roll:
    steps = tuple(
        replace(step, state=SKIPPED, detail="not reached: the roll stopped") if step.state == WAITING else step
        for step in roll.steps
    )
    # A leader leaving for its own step is how every roll ends; a death or a deposed
    # leader is what an operator wants to read in the outcome.
    unexpected = [why for why in roll.handovers if not why.endswith(OWN_STEP)]
    after = f" after {', '.join(unexpected)}" if unexpected else ""
    by = f" by leader {leader}" if leader else ""
    outcome = f"finished{by}{after}" if state == DONE else f"aborted{by}{after}: {error}"
    return _note(replace(roll, steps=steps, state=state, error=error, outcome=outcome, finished_at=at), outcome)


def _note(roll: Roll, note: str) -> Roll:
    return replace(roll, notes=(roll.notes + (note,))[-NOTES_LIMIT:])


# -- each member's decisions ---------------------------------------------------------------------
OFFLOAD, CONNECT = "offload", "connect"


def member_action(roll: Roll | None, *, incarnation: str | None, offloaded: str | None) -> str | None:
    """What a member does about the roll: OFFLOAD when its running incarnation's step
    says offloading; CONNECT when it is offloaded for a step of this roll and that step
    is past offloading (connecting, failed, or the roll ended), so that the roll never
    leaves a node out of the cluster; None otherwise (a node an operator offloaded by
    hand stays offloaded)."""
    if roll is None:
        return None
    for step in roll.steps:
        if incarnation is not None and offloaded is None and step.incarnation == incarnation:
            if step.state == OFFLOADING and roll.state == RUNNING:
                return OFFLOAD
        if offloaded is not None and step.incarnation == offloaded and step.offloaded:
            if step.state != OFFLOADING or roll.state != RUNNING:
                return CONNECT
    return None


def refuse_step(roll: Roll, incarnation: str, reason: str, *, at: float) -> Roll | None:
    """A member could not offload for its step (it was refused): the step fails and the
    roll stops, with its reason. None when the step is no longer offloading."""
    if roll.state != RUNNING:
        return None
    for index, step in enumerate(roll.steps):
        if step.incarnation == incarnation and step.state == OFFLOADING:
            return _fail_step(roll, index, reason, leader=roll.driver, at=at, offloaded=False)
    return None


def summary(roll: Roll) -> str:
    if roll.state == RUNNING:
        done = sum(step.state in (STEP_DONE, SKIPPED) for step in roll.steps)
        return (
            f"rolling version {roll.version}: {done} of {len(roll.steps)} members done, driven by "
            f"{roll.driver or 'nobody yet'}"
        )
    return roll.outcome or roll.state
