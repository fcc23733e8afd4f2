"""The leader: kazoo's `Election` on `leader/`, and a thin runner around
`cluster.core.reassignment.decide`.

While it leads, it watches `nodes/` and `shards/` (kazoo ChildrenWatch) and, on any
change or every `period` seconds, reads the cluster, decides, and carries out the
instructions in order: write the plan first, then the moves (each a
compare-and-set), then mark the plan done. A leader that dies between any two of
these leaves ZooKeeper in a state from which the next leader's `decide` continues.

Named fault seams (`LeaderHooks`) let a test stop the leader right after a plan
was written or between two moves, and kill it there.

With a `storage`, the leader also collects garbage (`collector`): a few
seconds after it is elected (`FIRST_COLLECTION`, so that a failover that elected it
is decided first), then every `collect_interval` seconds while it leads and may
act, on a thread of its own (HDFS may be slow; failover decisions must not wait for
it). The first round is early because leaders can be short-lived: in the drills a
leader lived 21 s on average, rarely long enough to reach a 30 s interval, and done
plans and retired shards piled up. The thread ends with the leadership; a round in
progress stops before its next deletion. On a thread of its own too, it finishes
decommissions and collects what was kept for nodes away past the retention (`kept`),
and gives no new shard to a decommissioned node still up (`LeaderView.draining`).

The leader also drives the cluster's rolling deploy, if one is running (`rolling`),
on a thread of its own that ends with the leadership.

While another leads, a contender reads the leader's heartbeat every `period`: if the
leader dies and this one is elected, the plan for the dead leader still says when it
was last heard of (`FailoverPlan.last_seen_at`, the start of the failover's detection
phase). Any other death the leader hears of itself, reading every member each round.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from repositories.instruments import Counter
from repositories.seams import FaultSeams

from ..core.collection import DEFAULT_INTERVAL, DEFAULT_RETENTION
from ..core.decommission import DEFAULT_ABSENT_NODE_RETENTION, draining
from ..core.heartbeat import Heartbeat
from ..core.planner import DEFAULT_POLICY
from ..core.reassignment import (
    ExecuteMove,
    FinishPlan,
    LeaderView,
    RetireSplitParent,
    RevisePlan,
    WritePlan,
    decide,
    step_of_instruction,
)
from ..core.story import StoryEntry, tag
from ..errors import ClusterError, OwnershipConflict
from ..zk.decommissions import DecommissionRecords
from .collector import ContentCollector
from .kept import KeptDirectories
from .rolling import RollDriver

if TYPE_CHECKING:
    from repositories.storage import Storage

log = logging.getLogger(__name__)

FIRST_COLLECTION = 5.0  # seconds from election to the first collection round


class LeaderHooks(FaultSeams):
    """Named fault seams of the leader: a test stops or kills it at these points."""

    def plan_written(self, plan_id: str) -> None:
        """The plan's znode is written; none of its moves is made yet."""

    def before_move(self, plan_id: str, shard: str) -> None:
        """The next move's compare-and-set is about to be sent."""

    def after_move(self, plan_id: str, shard: str) -> None:
        """The move is made; the plan is not marked done yet."""


HEARD_KEPT = 256  # heartbeats of other incarnations a contender keeps (`Leader.heard`)
LEADER_RECHECK = 10.0  # seconds between two askings of who leads, while hearing the leader


def newest_beats(*sources: dict, limit: int | None = None) -> dict:
    """incarnation -> its newest heartbeat (highest sequence) among `sources`; with
    `limit`, only that many, the most recently sent."""
    newest: dict = {}
    for source in sources:
        for name, beat in source.items():
            if name not in newest or beat.sequence > newest[name].sequence:
                newest[name] = beat
    if limit is not None and len(newest) > limit:
        kept = sorted(newest.items(), key=lambda item: item[1].sent_at, reverse=True)[:limit]
        newest = dict(kept)
    return newest


class Leader:
    """Lock plan: `_changed` (an Event) is the only state shared with kazoo's watch
    threads; `_story_lock` guards `story` (the election and collector threads both
    record); `_heard_lock` guards `_heard` (written by `heard`: from the member's thread
    that reads the members, and from the thread that hears the leader while this one
    only contends). Everything else is touched by the election thread alone; the collector
    thread uses only `collector` and its own leadership Event."""

    def __init__(
        self,
        store,
        incarnation: str,
        *,
        policy: str = DEFAULT_POLICY,
        period: float = 1.0,
        may_act: Callable[[], bool] = lambda: True,
        hooks: LeaderHooks | None = None,
        wall_clock=time.time,
        story_limit: int = 200,
        storage: Storage | None = None,
        collect_interval: float = DEFAULT_INTERVAL,
        retention: float = DEFAULT_RETENTION,
        plans_led: Counter | None = None,
        absent_node_retention: float = DEFAULT_ABSENT_NODE_RETENTION,
        survivor: Callable[[], object | None] = lambda: None,
    ):
        self.store, self.layout, self.incarnation = store, store.layout, incarnation
        self.plans_led = plans_led if plans_led is not None else Counter()  # plans this leader wrote
        self.policy, self.period = policy, period
        self._may_act = may_act
        self.hooks = LeaderHooks.coerce(hooks)
        self._wall_clock = wall_clock
        self.registry = store.shards
        self.plans = store.plans
        self.decommissioned = DecommissionRecords(store.client, store.layout)
        self.election = store.election(incarnation)
        self.leading = threading.Event()
        self._stopped = threading.Event()
        self._changed = threading.Event()
        self._deposed = threading.Event()
        self._last_beats: dict = {}
        self._heard: dict = {}
        self._heard_lock = threading.Lock()
        self.story: list[StoryEntry] = []
        self._story_limit = story_limit
        self._story_lock = threading.Lock()
        self.collect_interval = collect_interval
        self.collector = (
            ContentCollector(store, storage, retention=retention, wall_clock=wall_clock)
            if storage is not None and collect_interval > 0
            else None
        )
        # Decommissions and the retention of kept directories (`kept`); `survivor()` is this
        # member's home shard runtime, which takes what a decommissioned node's sources took.
        self.kept = (
            KeptDirectories(
                store,
                storage,
                retention=absent_node_retention,
                survivor=survivor,
                wall_clock=wall_clock,
                record=self._record,
            )
            if storage is not None and collect_interval > 0
            else None
        )
        self._thread: threading.Thread | None = None
        self.rolls = RollDriver(
            store, incarnation, wall_clock=wall_clock, record=lambda kind, detail: self._record(kind, detail)
        )

    def start(self) -> None:
        self._thread = threading.Thread(target=self._campaign, name=f"leader {self.incarnation}", daemon=True)
        self._thread.start()
        hearing = threading.Thread(target=self._hear_the_leader, name=f"hearing the leader {self.incarnation}")
        hearing.daemon = True
        hearing.start()

    def stop(self) -> None:
        self._stopped.set()
        self._changed.set()
        try:
            self.election.cancel()
        except Exception:  # noqa: BLE001 - the session may be gone already
            pass
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    # -- the election --------------------------------------------------------------------
    def _campaign(self) -> None:
        try:
            self.election.run(self._lead)
        except Exception as error:  # noqa: BLE001 - session lost while contending
            if not self._stopped.is_set():
                log.warning("leader election of %s ended: %s", self.incarnation, error)

    def _lead(self) -> None:
        def on_lost() -> None:
            # The election's lock node died with the session: so did this leadership.
            self._deposed.set()
            self._changed.set()

        stop_listening = self.store.on_session_lost(on_lost)
        self.leading.set()
        self._record("elected", self.incarnation)
        log.info("%s is the leader", self.incarnation)
        self.store.ensure_paths()
        self.store.watch_members(self._on_change)
        self.store.watch_shards(self._on_change)
        leadership_over = threading.Event()
        if self.collector is not None:
            threading.Thread(
                target=self._collect_while_leading,
                args=(leadership_over,),
                name=f"collector {self.incarnation}",
                daemon=True,
            ).start()
        if self.kept is not None:
            threading.Thread(
                target=self.kept.run,
                args=(leadership_over, self._may_act),
                kwargs={"first": min(FIRST_COLLECTION, self.collect_interval)},
                name=f"kept directories {self.incarnation}",
                daemon=True,
            ).start()
        # The deploy duty: a rolling deploy is driven by whoever leads (`rolling`).
        threading.Thread(
            target=self.rolls.drive,
            args=(leadership_over, self._may_act),
            name=f"deploy duty {self.incarnation}",
            daemon=True,
        ).start()
        try:
            while not self._stopped.is_set() and not self._deposed.is_set():
                self._changed.wait(self.period)
                self._changed.clear()
                if self._stopped.is_set() or self._deposed.is_set():
                    break
                if not self._may_act():
                    continue
                try:
                    self.step()
                except (ClusterError, Exception) as error:  # noqa: BLE001 - decide again on the next change
                    log.warning("leader step failed, deciding again: %s: %s", type(error).__name__, error)
                    self._record("step-failed", str(error))
        finally:
            leadership_over.set()
            self.leading.clear()
            stop_listening()
            if self._deposed.is_set():
                log.warning("%s lost its session: it is no longer the leader", self.incarnation)
                self._record("deposed", "session lost")

    def _collect_while_leading(self, leadership_over: threading.Event) -> None:
        def keep_going() -> bool:
            return not leadership_over.is_set() and self._may_act()

        wait = min(FIRST_COLLECTION, self.collect_interval)
        while not leadership_over.wait(wait):
            wait = self.collect_interval
            if keep_going():
                plan = self.collector.collect(keep_going)
                if plan.containers or plan.shards or plan.plans:
                    self._record(
                        "collect",
                        f"containers {list(plan.containers)}, "
                        f"shards {[shard for shard, _ in plan.shards]}, "
                        f"plans {[plan_id for plan_id, _ in plan.plans]}",
                    )

    def _on_change(self, children) -> bool | None:
        self._changed.set()
        return False if self._stopped.is_set() else None

    def heard(self, beats: dict) -> None:
        """Heartbeats of the members, read by this member while it may not lead: when
        the leader dies and this one is elected, the plan for the dead leader still
        says when it was last heard of (`FailoverPlan.last_seen_at`)."""
        with self._heard_lock:
            self._heard = newest_beats(self._heard, beats, limit=HEARD_KEPT)

    def last_heard(self, incarnation: str) -> Heartbeat | None:
        """The newest heartbeat of `incarnation` that `heard` was given, if any."""
        with self._heard_lock:
            return self._heard.get(incarnation)

    def _hear_the_leader(self) -> None:
        """While another leads, read its heartbeat every `period`: one read (who leads is
        asked again every LEADER_RECHECK seconds, and once its znode is gone). If it dies
        and this one is elected, the plan for it says when it was last heard of to within
        a period; any other death the leader hears of itself, reading every member."""
        leader: str | None = None
        asked = float("-inf")
        while not self._stopped.wait(self.period):
            if self.leading.is_set():
                leader = None
                continue
            try:
                if leader is None or time.monotonic() - asked > LEADER_RECHECK:
                    asked = time.monotonic()
                    contenders = self.store.contenders()
                    leader = contenders[0] if contenders and contenders[0] != self.incarnation else None
                if leader is not None:
                    data, _ = self.store.client.get(self.layout.node(leader))
                    self.heard({leader: Heartbeat.from_json(data)})
            except Exception as error:  # noqa: BLE001 - it is gone, or ZooKeeper is away: ask again
                log.debug("the leader's heartbeat not read by %s: %s", self.incarnation, error)
                leader = None

    # -- one decision ------------------------------------------------------------------------
    def read_view(self) -> LeaderView:
        # Shards first, members second: a shard created after the shard listing is not
        # seen, and a shard that was seen has an owner that joined before it, which the
        # later member listing therefore includes. A live owner is never taken for dead.
        shards = {name: entry[0] for name, entry in self.registry.all().items()}
        live = self.store.members()
        # A dead incarnation's last beat matters while it still owns a shard (its plan
        # weighs what it had queued); forgotten after that, or the map grows for ever.
        owners = {shard.owner for shard in shards.values()}
        with self._heard_lock:
            heard = dict(self._heard)
        self._last_beats = {
            name: beat
            for name, beat in newest_beats(heard, self._last_beats, live).items()
            if name in live or name in owners
        }
        plans = {name: entry[0] for name, entry in self.plans.open_plans().items()}
        leaving = draining(self.decommissioned.names(), live)
        return LeaderView(
            self.incarnation, self._wall_clock(), live, shards, plans, dict(self._last_beats), self.policy, leaving
        )

    def step(self) -> list:
        view = self.read_view()
        instructions = decide(view)
        for instruction in instructions:
            if self._stopped.is_set() or self._deposed.is_set() or not self._may_act():
                break
            if not self._carry_out(instruction):
                break  # the world changed under us: read it again
        return instructions

    def _carry_out(self, instruction) -> bool:
        step = step_of_instruction(instruction)
        if isinstance(instruction, WritePlan):
            plan = replace(
                instruction.plan, notes=instruction.plan.notes + (f"{tag(step)} written by {self.incarnation}",)
            )
            if not self.plans.create(plan):
                return False
            self.plans_led.add()
            self._record("plan", f"{plan.plan_id}: {[(m.shard, m.targets) for m in plan.moves]}", step)
            log.info("%s plan %s written: %s", tag(step), plan.plan_id, [(m.shard, m.targets) for m in plan.moves])
            self.hooks.plan_written(plan.plan_id)
        elif isinstance(instruction, RevisePlan):
            revised = replace(instruction.plan, leader=self.incarnation)
            # Keep what adopters recorded since the plan was read (their first outputs, and
            # their notes: a shard held for an operator, a flow.json they could not use).
            merged = lambda current: replace(  # noqa: E731
                revised,
                resumed={**revised.resumed, **current.resumed},
                notes=revised.notes + tuple(note for note in current.notes if note not in revised.notes),
            )
            if self.plans.update(revised.plan_id, merged) is None:
                return False
            self._record("revise", f"{instruction.plan.plan_id}: {instruction.reason}", step)
            log.info("%s plan %s revised: %s", tag(step), revised.plan_id, instruction.reason)
        elif isinstance(instruction, ExecuteMove):
            move = instruction.move
            # Belt and braces: the owner's znode must really be gone right now.
            if self.store.is_member(move.from_owner):
                log.warning("%s not moving %s: its owner %s is alive again", tag(step), move.shard, move.from_owner)
                return False
            self.hooks.before_move(instruction.plan_id, move.shard)
            try:
                self.registry.move(move, reason=f"{move.from_owner} died", step=step)
            except OwnershipConflict as error:
                log.info("%s move of %s lost a race: %s", tag(step), move.shard, error)
                return False
            self._record("move", f"{move.shard} epoch {move.from_epoch}->{move.from_epoch + 1} to {move.targets}", step)
            log.info(
                "%s moved shard %s from %s to %s at epoch %d",
                tag(step),
                move.shard,
                move.from_owner,
                move.targets,
                move.from_epoch + 1,
            )
            self.hooks.after_move(instruction.plan_id, move.shard)
        elif isinstance(instruction, FinishPlan):
            at = self._wall_clock()

            def finish(plan):
                if plan.status != "open":
                    return plan
                moves = " ".join(tag(step_of_instruction(ExecuteMove(plan.plan_id, move))) for move in plan.moves)
                note = f"{tag(step)} done by {self.incarnation} after {moves or 'no move'}"
                return replace(plan, status="done", finished_at=at, notes=plan.notes + (note,))

            finished = self.plans.update(instruction.plan_id, finish)
            if finished is not None and finished.finished_at == at:
                self._record("done", instruction.plan_id, step)
                log.info("%s plan %s done", tag(step), instruction.plan_id)
        elif isinstance(instruction, RetireSplitParent):
            self.registry.retire_split_parent(instruction.shard)
            self._record("retire-split", instruction.shard, step)
            log.info("%s split parent %s retired: every slice is seeded", tag(step), instruction.shard)
        return True

    def _record(self, kind: str, detail: str, step: str = "") -> None:
        with self._story_lock:
            self.story.append(StoryEntry(self._wall_clock(), kind, detail, step))
            del self.story[: -self._story_limit]
