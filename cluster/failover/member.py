"""A cluster member: one incarnation of one node, from join to death.

    member = ClusterMember(MemberConfig(zk_hosts=..., cluster="c1", node="n1"), storage, runtime_factory)
    # (`clients=`: the node's `cluster.clients.ClientFactory`; by default one from the config)
    member.start()      # new incarnation, membership, home shard, leader campaign
    member.dead.wait()  # set when the incarnation ends (LOST, own expiry, "you are dead")
    member.stop()       # leave on purpose (the znode goes, the shards are taken over)

Order at start (it matters for the leader, see `cluster.core.reassignment`): a write
probe to HDFS (`preflight`: no incarnation is taken while HDFS cannot take a write);
new incarnation from the ZooKeeper counter; the ephemeral membership znode; only then the home
shard znode; then the HDFS directory and its WAL. A member adopts a shard when the
shard's znode names it owner in state ADOPTING (it watches `shards/`), on one of
`ADOPTION_WORKERS` threads: shards side by side, each shard (and the slices of one
divvied shard) one attempt at a time. Every attempt ends: the shard runs here, or the
attempt is tried again a second later (HDFS or ZooKeeper trouble), or the shard is
HELD for an operator with the reason, when no attempt can succeed (damage, a flow that
cannot hold it) or it kept failing past the lease-recovery bound
(`core.adoption_failures`); a held shard is tried again now and then (held again, with
the new reason, when that fails for another one), and runs once it opens.

A member never survives its session, not even while it is starting: a death during
`start` stops it at the next step (`IncarnationEnded`), with nothing of it running.
When the session guard says the session is over, or a heartbeat or claim is answered
"you are dead", it stops every runtime (which never write again), and `dead` is set. A process that wants to go on makes
a new `ClusterMember`: a new incarnation with a new shard (the failover protocol's
"return": the old incarnation never processes its old data again).

A death stops the incarnation within `DEATH_DEADLINE` of the decision, whatever HDFS
does. At once, on the thread that decided (`_die`), everything the incarnation writes
is abandoned rather than closed: its storage (`storage`, an
`repositories.storage.AbandonableStorage` over the node's) refuses every change and
lets every file it handed out go, unsynced and open (the adopter recovers their
leases), and each runtime shuts its gate and abandons its WAL (`ShardRuntime.abandon`):
from then on nothing is admitted, written or acknowledged. Then, on a thread of its
own, the runtimes, the leader, the heartbeat and the guard are stopped side by side;
the runtimes are waited for until the deadline (their processors let go of what they
hold: a listener's port), the others a moment more (`DEATH_GRACE_OTHERS`: they write
nothing to HDFS). Whatever is still ending then (a task stuck in an hsync until the
storage's deadline, a ZooKeeper call of a node cut off, which fails once the client is
closed, right after) is left to end on its own: nothing it does can write or
acknowledge. An orderly `stop()`
closes everything instead, one part after another, as long as that takes (bounded by
the node's shutdown deadline), unless a death overtakes it.
"""

from __future__ import annotations

import functools
import logging
import os
import queue
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from flow.engine import DEFAULT_THREADS
from flow.steps import Steps
from repositories.storage import AbandonableStorage

from ..clients import (
    DEFAULT_SESSION_TIMEOUT,
    ClientFactory,
    ZooKeeperSettings,
    granted_session_timeout,
    stop_quietly,
)
from ..core.adoption_failures import RECHECK_FIRST, RETRY_INTERVAL, RetryLater, after_failure
from ..core.decommission import DEFAULT_ABSENT_NODE_RETENTION
from ..core.flows import FlowSnapshot
from ..core.heartbeat import DEFAULT_CAPACITY_WEIGHT, Heartbeat, QueueLoad
from ..core.incarnation import Incarnation
from ..core.layout import DEFAULT_HDFS_ROOT, ClusterLayout
from ..core.ownership import ShardOwnership, ShardState
from ..core.planner import DEFAULT_POLICY
from ..core.plans import with_resumed
from ..core.story import tag
from ..errors import (
    ConfigurationRefused,
    FencedError,
    IncarnationEnded,
    OwnershipConflict,
    SessionTimeoutRefused,
    first_line,
)
from ..zk.membership import Membership
from ..zk.session import GuardCallbacks, SessionGuard
from ..zk.shards import ShardRegistry
from ..zk.store import ClusterStore
from .adoption import adopt_shard, describe_failure, failure_kind, open_home_shard
from .decommission import NodeDecommissioned, refuse_if_decommissioned, watch_decommission
from .fencing import DEFAULT_FENCE_TIMEOUT, DEFAULT_FIRST_WAIT, current_directory
from .instruments import ADOPTED, FENCED, HELD, RETRIED, FailoverInstruments
from .leader import Leader, LeaderHooks
from .liveness import LivenessListener, PeerWatch
from .preflight import probe_storage
from .runtime import PreviousShard, RuntimeFactory, ShardCallbacks, ShardHandle, WalOptions

log = logging.getLogger(__name__)

# A death is stopped within this long of its decision (the product's bound is 2 s: the
# rest is the margin for setting `dead` and for telling it).
DEATH_DEADLINE = 1.5
# Adoptions run side by side, one per shard (the slices of one dead shard one after
# another: each fences their parent): a survivor of several deaths (the leader and a
# node at once, a rack) adopts their shards together, not one after another.
ADOPTION_WORKERS = 4
# How soon an adoption whose shard (or parent) another worker is adopting is looked at again.
FAMILY_BUSY_RETRY = 0.05
# After a death's runtimes stopped, how long more it waits for its leader, heartbeat and
# guard threads: they write nothing to HDFS, and those of a node cut off from ZooKeeper
# wait in a call until the client is closed, which comes after `dead`.
DEATH_GRACE_OTHERS = 0.2


@dataclass
class MemberConfig:
    zk_hosts: str
    cluster: str
    node: str
    session_timeout: float = DEFAULT_SESSION_TIMEOUT
    heartbeat_interval: float = 1.0
    hdfs_root: str = DEFAULT_HDFS_ROOT
    admin: str = ""
    capacity_weight: float = DEFAULT_CAPACITY_WEIGHT
    max_threads: int = DEFAULT_THREADS
    local_directory: str = "/tmp"
    policy: str = DEFAULT_POLICY
    lead: bool = True
    wal: WalOptions = field(default_factory=WalOptions)
    flow: FlowSnapshot | None = None  # the flow this node runs, recorded with its home shard
    fence_first_wait: float = DEFAULT_FIRST_WAIT
    # The lease-recovery bound: a fence gives up after it (and is tried again), and an
    # adoption failing in a way nobody knows is held once it has lasted this long.
    fence_timeout: float = DEFAULT_FENCE_TIMEOUT
    held_recheck: float = RECHECK_FIRST  # seconds from holding a shard to its first recheck (then doubling)
    # As leader: how long a node may be away before what its adopters kept for it goes (`kept`).
    absent_node_retention: float = DEFAULT_ABSENT_NODE_RETENTION
    # The liveness port (`cluster.core.liveness`): bound on `liveness_bind`, advertised
    # with `liveness_host`. None: no port, and this member's crash waits for its session
    # (it still watches the others').
    liveness_bind: str | None = None
    liveness_host: str = ""
    liveness_port: int = 0


@dataclass
class _AdoptionAttempts:
    """This member's attempts at one shard at one epoch (`shard@epoch`), until it runs
    here or is not this member's any more."""

    first: float  # when the first attempt began (the member's monotonic clock)
    held: bool = False  # this member holds the shard (it marked it, or found it, HELD)
    rechecks: int = 0  # attempts since the shard was held
    recheck_due: bool = False  # the next attempt at the held shard is due


@dataclass
class MemberTimeline:
    """Wall-clock moments a drill reports (detection, takeover, resume)."""

    adopting_seen: dict[str, float] = field(default_factory=dict)
    adopted: dict[str, float] = field(default_factory=dict)
    retired: dict[str, float] = field(default_factory=dict)
    steps: dict[str, str | None] = field(default_factory=dict)  # "<shard>@<epoch>" -> the move's step id


class ClusterMember:
    """Lock plan: `_lock` guards `runtimes`, `handles` and `_adopting` (adoption workers,
    guard callbacks, stop). Runtimes' own methods are called outside it."""

    def __init__(
        self,
        config: MemberConfig,
        storage,
        runtime_factory: RuntimeFactory,
        *,
        clients: ClientFactory | None = None,
        leader_hooks: LeaderHooks | None = None,
        clock=time.monotonic,
        wall_clock=time.time,
        instruments: FailoverInstruments | None = None,
        on_connected: Callable[[], None] | None = None,
        on_fencing: Callable[[ShardOwnership], None] | None = None,
        on_leases_asked: Callable[[ShardOwnership], None] | None = None,
    ):
        self.config, self.runtime_factory = config, runtime_factory
        # The incarnation's own view of the node's storage: abandoned at its death.
        self.storage = AbandonableStorage(storage, name=f"an incarnation of {config.node}")
        # The node's: they count across its incarnations.
        self.instruments = instruments if instruments is not None else FailoverInstruments()
        self.clients = clients or ClientFactory(ZooKeeperSettings(config.zk_hosts, config.session_timeout))
        self.layout = ClusterLayout(config.cluster, config.hdfs_root)
        self._leader_hooks = leader_hooks
        self._on_connected = on_connected  # told once ZooKeeper answered, before anything is taken
        # Told as an adoption begins to fence a shard: work to run beside the fencing
        # (it must return at once, and a failure in it is its own to handle).
        self._on_fencing = on_fencing
        # Told once the fence has asked HDFS for the lease of each of the shard's files:
        # lease recoveries asked for from then on queue behind those (`fence`).
        self._on_leases_asked = on_leases_asked
        self._clock, self._wall_clock = clock, wall_clock
        self.client = None
        self.store: ClusterStore | None = None
        self.incarnation: Incarnation | None = None
        self.registry: ShardRegistry | None = None
        self.membership: Membership | None = None
        self.guard: SessionGuard | None = None
        self.leader: Leader | None = None
        self.liveness: LivenessListener | None = None
        self.peers: PeerWatch | None = None
        self._members_changed = threading.Event()
        self.runtimes: dict[str, object] = {}
        self.handles: dict[str, ShardHandle] = {}
        self.timeline = MemberTimeline()
        self.dead = threading.Event()
        self.death_reason = ""
        # Wall-clock moments: when the death was decided (None for an orderly stop), and
        # when the member was stopped (`dead` set).
        self.death_decided_at: float | None = None
        self.stopped_at: float | None = None
        self._death_deadline: float | None = None  # on the member's clock
        # Set when the incarnation ended on the node's configuration (a session timeout the
        # servers cut on a reconnect): rejoining cannot help, the operator must change it.
        self.refusal: ConfigurationRefused | None = None
        self._dying = ""  # the first reason given to `_die`, before the shutdown has finished
        self._lock = threading.Lock()
        self._adoptions: queue.Queue = queue.Queue()
        self._queued: set[str] = set()
        # Shards (or divvy parents) an adoption worker is adopting now: one at a time each.
        self._adopting: set[str] = set()
        # "<shard>@<epoch>" -> _AdoptionAttempts: touched by the adoption worker that has the
        # shard (`_adopting`: one at a time), and by a retry timer only to set `recheck_due`
        # (a flag: one assignment, no lock needed).
        self._attempts: dict[str, _AdoptionAttempts] = {}
        self._stopped = threading.Event()
        self._threads: list[threading.Thread] = []

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> Incarnation:
        config = self.config
        self.client = self.clients.start_zookeeper(timeout=max(30.0, config.session_timeout))
        if self._on_connected is not None:
            self._on_connected()
        granted = granted_session_timeout(self.client)
        if granted is not None and granted < config.session_timeout:
            # The ensemble would declare this node dead after `granted` seconds, while its
            # session guard would let it work until `session_timeout`: never start so.
            raise SessionTimeoutRefused(config.zk_hosts, config.session_timeout, granted)
        self.store = ClusterStore(self.client, self.layout, wall_clock=self._wall_clock)
        self.store.ensure_paths()
        refuse_if_decommissioned(self.store, config.node)  # before anything of an incarnation is taken
        probe_storage(self.storage, self.layout, config.node)  # before an incarnation is taken
        self.incarnation = self.store.new_incarnation(config.node)
        me = self.incarnation.id
        self.registry = self.store.shards
        self.guard = self.store.session_guard(
            me,
            config.session_timeout,
            GuardCallbacks(
                close_gate=lambda: self._each_runtime("pause"),
                open_gate=lambda: self._each_runtime("resume"),
                abort_open_sessions=lambda: self._each_runtime("abort_open_sessions"),
                abort_all=self._session_over,
            ),
            clock=self._clock,
            name=f"session-guard {me}",
            granted_timeout=lambda: granted_session_timeout(self.client),
        )
        if config.liveness_bind is not None and config.liveness_host:
            self.liveness = LivenessListener(config.liveness_bind, config.liveness_host, me, config.liveness_port)
            self.liveness.start()
        first = Heartbeat(
            config.node,
            me,
            self.incarnation.epoch,
            admin=config.admin,
            liveness=self.liveness.address if self.liveness is not None else "",
            capacity_weight=config.capacity_weight,
            max_threads=config.max_threads,
        )
        self.membership = self.store.membership(
            first,
            interval=config.heartbeat_interval,
            figures=self._figures,
            on_dead=lambda error: self._die(str(error)),
            on_confirmed=self.guard.confirmed,
            clock=self._clock,
            wall_clock=self._wall_clock,
        )
        self.membership.join()
        self.peers = PeerWatch(me, self._peer_gone)
        self._spawn(self._follow_members, f"liveness members {me}")
        self.store.watch_members(self._on_members)
        watch_decommission(self.store, config.node, self._decommissioned, self._stopped.is_set)
        self.guard.start()
        # The home shard: id = incarnation id, epoch = incarnation epoch.
        flow = config.flow
        home = self.registry.create_home_shard(
            me, me, self.incarnation.epoch, flow=flow.version if flow is not None else None
        )
        self._check_alive("creating its home shard")
        handle = open_home_shard(
            self.storage, self.layout, home, config.wal, flow, callbacks=self._callbacks(home, home=True)
        )
        self._check_alive("opening its home shard")
        runtime = self._prepare(handle)
        self._check_alive("recovering its home shard", runtime)
        self._run_shard(handle, runtime)
        self._check_alive("starting its home shard")
        self.membership.start()
        for worker in range(ADOPTION_WORKERS):
            # The first also retires drained shards while the queue is idle.
            self._spawn(functools.partial(self._adoption_loop, worker == 0), f"adoption {me} #{worker}")
        self.store.watch_shards(self._on_shards)
        if config.lead:
            self.leader = Leader(
                self.store,
                me,
                policy=config.policy,
                may_act=self.guard.may_work,
                hooks=self._leader_hooks,
                wall_clock=self._wall_clock,
                storage=self.storage,
                plans_led=self.instruments.plans_led,
                absent_node_retention=config.absent_node_retention,
                survivor=lambda: self.runtimes_now().get(me),
            )
            self.leader.start()
        self._check_alive("joining")
        log.info("member %s joined cluster %s", me, config.cluster)
        return self.incarnation

    # -- the others' liveness (`cluster.core.liveness`) ---------------------------------------
    def _on_members(self, _children: list[str]) -> bool:
        self._members_changed.set()
        return not self._stopped.is_set()

    def _follow_members(self) -> None:
        """Keep the peer watch on the members now: on each change of `nodes/`, and every
        few seconds in case a change was missed while disconnected."""
        while not self._stopped.is_set():
            self._members_changed.wait(5.0)
            self._members_changed.clear()
            if self._stopped.is_set() or self.peers is None:
                return
            try:
                members = self.store.members()
            except Exception as error:  # noqa: BLE001 - ZooKeeper away: the session guard decides
                log.debug("members not read for the liveness watch: %s", first_line(error, 200))
                continue
            self.peers.follow({name: beat.liveness for name, beat in members.items()})
            if self.leader is not None:
                self.leader.heard(members)  # so that a leader elected after a death knows when it was last heard of

    def _peer_gone(self, incarnation: str, reason: str) -> None:
        """A peer proven gone: its znodes go now, and the leader (this member or another)
        hands its shards over as for an expired session. Never from a member that may
        not act (cut off, or dead itself)."""
        if self._stopped.is_set() or self._dying or self.guard is None or not self.guard.may_work():
            return
        try:
            removed = self.store.remove_gone(incarnation)
        except Exception as error:  # noqa: BLE001 - its session's expiry does it later
            log.warning("could not remove the znodes of %s (%s): its session's expiry will", incarnation, error)
            return
        if removed:
            log.warning("incarnation %s is gone: %s; removed %s", incarnation, reason, ", ".join(removed))

    def _check_alive(self, step: str, runtime=None) -> None:
        """Raise `IncarnationEnded` if the incarnation died while `start` was at `step`
        (its session guard or membership declared it dead on another thread): a dead
        incarnation goes no further. `runtime`, made but not yet registered (so the
        death could not stop it), is stopped here."""
        if not self._stopped.is_set() and not self._dying:
            return
        if runtime is not None:
            self._end_runtime(runtime)
        if self.leader is not None:  # started after the shutdown looked for it
            self.leader.stop()
        raise IncarnationEnded(self.incarnation.id, step, self.death_reason or self._dying or "stopped")

    def stop(self, *, leave: bool = True) -> None:
        """Stop on purpose. With `leave`, the membership znode is deleted so the
        leader hands this member's shards to the others at once."""
        self._shutdown("stopped by request", leave=leave)

    def wait_dead(self, timeout: float | None = None) -> bool:
        return self.dead.wait(timeout)

    @property
    def died(self) -> bool:
        """The incarnation died (its session over, or "you are dead"), rather than
        stopped on purpose: what it wrote is abandoned, not closed."""
        return bool(self._dying)

    # -- death ---------------------------------------------------------------------------------
    def _session_over(self, reason: str) -> None:
        """The session guard's verdict. Over because ZooKeeper granted a reconnected session
        less than the configured timeout: the same refusal as a short grant at the first
        connect, and the node stops instead of rejoining."""
        granted = self.guard.state.granted_timeout if self.guard is not None else None
        if granted is not None:
            self.refusal = SessionTimeoutRefused(self.config.zk_hosts, self.config.session_timeout, granted)
        self._die(reason)

    def _decommissioned(self, error: NodeDecommissioned) -> None:
        """The node was decommissioned while this incarnation ran: it leaves as an offload
        does (its shards are handed over at once) and the node does not rejoin (`refusal`)."""
        if self._stopped.is_set():
            return
        self.refusal = error
        log.warning(
            "incarnation %s leaves the cluster: its node was decommissioned; its shards are handed over at "
            "once, and the node stops",
            self.incarnation,
        )
        threading.Thread(
            target=self._shutdown,
            args=(f"decommissioned: {error}",),
            kwargs={"leave": True},
            name=f"decommissioned {self.incarnation}",
            daemon=True,
        ).start()

    def _die(self, reason: str) -> None:
        """The incarnation is dead. Here, at once (no storage call, no wait): its storage
        is abandoned and every runtime abandons its shard, so nothing is written or
        acknowledged from now on; the rest of the stop runs on a thread of its own and
        is over within `DEATH_DEADLINE` (see the module docstring)."""
        with self._lock:
            if self.dead.is_set() or self._dying:
                return
            self._dying = reason
            self.death_decided_at = self._wall_clock()
            self._death_deadline = self._clock() + DEATH_DEADLINE
            runtimes = list(self.runtimes.items())
        log.error(
            "incarnation %s is dead: %s; every shard runtime is stopped and never writes again",
            self.incarnation,
            reason,
        )
        try:
            files = self.storage.abandon(f"incarnation {self.incarnation} is dead: {first_line(reason, 200)}")
        except Exception as error:  # noqa: BLE001 - the runtimes are abandoned all the same
            files = 0
            log.warning("abandoning the storage of %s failed: %s", self.incarnation, first_line(error, 200))
        for shard, runtime in runtimes:
            self._abandon_runtime(shard, runtime)
        log.info(
            "incarnation %s abandoned %d open file(s) and %d shard runtime(s), unsynced",
            self.incarnation,
            files,
            len(runtimes),
        )
        threading.Thread(
            target=self._shutdown,
            args=(reason,),
            kwargs={"leave": False},
            name=f"death {self.incarnation}",
            daemon=True,
        ).start()

    def _abandon_runtime(self, shard: str, runtime) -> None:
        abandon = getattr(runtime, "abandon", None)  # a runtime without it is only stopped
        if abandon is None:
            return
        try:
            abandon(f"incarnation {self.incarnation} is dead")
        except Exception as error:  # noqa: BLE001 - its stop comes next all the same
            log.warning("abandoning the runtime of shard %s failed: %s", shard, first_line(error, 200))

    def _end_runtime(self, runtime) -> None:
        """Stop a runtime this member will not run: abandoned first if the incarnation died."""
        if self._dying:
            self._abandon_runtime("(not registered)", runtime)
        runtime.stop()

    def _shutdown(self, reason: str, *, leave: bool) -> None:
        with self._lock:
            if self._stopped.is_set():
                return
            self._stopped.set()
            runtimes = list(self.runtimes.items())
        # Stop processing first: nothing may be written after the session is over. A
        # death stops the parts side by side (each abandoned already), until its
        # deadline; an orderly stop, one after another.
        side_by_side = bool(self._dying)
        steps = [(f"the runtime of shard {shard}", runtime.stop) for shard, runtime in runtimes]
        if side_by_side:
            for shard, runtime in runtimes:  # registered after `_die` looked
                self._abandon_runtime(shard, runtime)
        others = [
            (name, step)
            for name, step in (
                ("the leader", self.leader.stop if self.leader is not None else None),
                (
                    "the heartbeat",
                    functools.partial(self.membership.stop, leave=leave) if self.membership is not None else None,
                ),
                ("the session guard", self.guard.stop if self.guard is not None else None),
                ("the liveness watch", self.peers.stop if self.peers is not None else None),
            )
            if step is not None
        ]
        if side_by_side:
            started = self._start_steps(steps + others)
            self._await(started[: len(steps)])
            self._await(started[len(steps) :], grace=DEATH_GRACE_OTHERS)
        else:
            for step in steps + others:
                self._await(self._start_steps([step]))
        if self.liveness is not None:  # last: the others learn that this incarnation is over
            self.liveness.close()
        for _ in range(ADOPTION_WORKERS):
            self._adoptions.put(None)
        self.death_reason = reason
        self.stopped_at = self._wall_clock()
        self.dead.set()
        if self.client is not None:
            stop_quietly(self.client)

    @staticmethod
    def _start_steps(steps: list[tuple[str, Callable[[], None]]]) -> list[tuple[str, threading.Thread]]:
        """Each step on a thread of its own, started; a step that fails is logged."""

        def run(name: str, step: Callable[[], None]) -> None:
            try:
                step()
            except Exception as error:  # noqa: BLE001 - a fenced WAL may refuse its close
                log.info("%s stopped with: %s", name, first_line(error, 300))

        threads = [
            (name, threading.Thread(target=run, args=(name, step), name=f"stopping {name}"[:60], daemon=True))
            for name, step in steps
        ]
        for _, thread in threads:
            thread.start()
        return threads

    def _await(self, threads: list[tuple[str, threading.Thread]], *, grace: float | None = None) -> None:
        """Wait for the threads of `_start_steps`: for as long as they take, or, once the
        incarnation is dead, until its death deadline, or `grace` from now if sooner (a
        step still running then ends on its own; after the abandon nothing it does is
        written or acknowledged)."""
        until = None if grace is None else self._clock() + grace
        for _, thread in threads:
            while thread.is_alive():
                deadline = min((moment for moment in (self._death_deadline, until) if moment is not None), default=None)
                left = None if deadline is None else deadline - self._clock()
                if left is not None and left <= 0:
                    break
                thread.join(0.05 if left is None else min(0.05, left))
        late = [name for name, thread in threads if thread.is_alive()]
        if late:
            log.warning(
                "incarnation %s is dead and stopped; still ending on their own (abandoned: nothing they do is "
                "written or acknowledged): %s",
                self.incarnation,
                ", ".join(late),
            )

    # -- shards -----------------------------------------------------------------------------------
    def owned_shards(self) -> tuple[str, ...]:
        with self._lock:
            return tuple(sorted(self.runtimes))

    def runtimes_now(self) -> dict[str, object]:
        """shard -> its runtime, as a copy taken under the lock."""
        with self._lock:
            return dict(self.runtimes)

    def _leases_asked_callback(self, ownership: ShardOwnership) -> Callable[[], None] | None:
        told = self._on_leases_asked
        return None if told is None else lambda: told(ownership)

    def _callbacks(self, ownership: ShardOwnership, *, home: bool) -> ShardCallbacks:
        """What the runtime of `ownership`'s shard asks this member: the session guard,
        and ZooKeeper's word on whether the shard is still this incarnation's at that
        epoch; a home shard also the earlier incarnations' shards it takes over, an
        adopted one where to say that it resumed."""
        me = self.incarnation.id

        def verify_ownership():
            return self.registry.claim(ownership.shard, me, ownership.epoch)

        if home:
            return ShardCallbacks(
                self.guard,
                verify_ownership,
                previous_shards=self._previous_shards,
                forget_previous=self._forget_previous,
            )
        return ShardCallbacks(
            self.guard,
            verify_ownership,
            record_resumed=lambda: self._spawn(lambda: self._record_resumed(ownership), "record-resumed"),
        )

    def _prepare(self, handle: ShardHandle):
        """Make the runtime and let it recover the shard's WAL; nothing runs yet."""
        runtime = self.runtime_factory(handle)
        try:
            runtime.recover()
        except BaseException:
            self._end_runtime(runtime)
            raise
        return runtime

    def _run_shard(self, handle: ShardHandle, runtime) -> None:
        """Register the runtime (so that a death stops it) and start it. A runtime that
        fails to start is stopped and unregistered again, and the error raised: the
        shard is not left registered and idle, where a retry would take it for running."""
        with self._lock:
            ended = self._stopped.is_set() or bool(self._dying)
            if not ended:
                self.runtimes[handle.shard] = runtime
                self.handles[handle.shard] = handle
        if ended:
            self._end_runtime(runtime)
            return
        try:
            runtime.start()
        except BaseException:
            with self._lock:
                if self.runtimes.get(handle.shard) is runtime:
                    del self.runtimes[handle.shard]
                    del self.handles[handle.shard]
            self._end_runtime(runtime)
            raise

    def _previous_shards(self) -> list[PreviousShard]:
        """This node's earlier incarnations' shards that still have a directory on HDFS."""
        me = self.incarnation
        names = set()
        for entry in self.storage.list(self.layout.hdfs_shards):
            earlier = _home_shard_incarnation(entry.name)
            if earlier is not None and earlier.node == me.node and earlier.epoch < me.epoch:
                names.add(earlier.id)
        found = []
        for shard in sorted(names):
            directory, fenced_epoch = current_directory(self.storage, self.layout, shard)
            entry = self.registry.read(shard)
            retired = entry is None or entry[0].state is ShardState.RETIRED
            ready = directory is not None and (retired or (fenced_epoch is not None and self._taken_over(entry[0])))
            found.append(PreviousShard(shard, directory, ready, retired))
        return found

    def _taken_over(self, ownership: ShardOwnership) -> bool:
        """Its adopter finished fencing and recovering it: every file's lease recovered
        (hdfs-native reads a file still open only to its last finished block, so a
        directory merely renamed may show a journal short of its last records) and its
        adoption checkpoint written. A divvied shard: once every slice is seeded."""
        if ownership.state in (ShardState.DRAINING, ShardState.HELD):
            # HELD: fenced (every file closed) and left as it is; nobody writes it.
            return True
        if ownership.state is ShardState.SPLIT and ownership.children:
            children = [self.registry.read(child) for child in ownership.children]
            return all(child is not None and child[0].seeded for child in children)
        return False

    def _forget_previous(self, previous: PreviousShard) -> None:
        """Delete a retired earlier shard's directory, which its adopter kept for this
        node's sources' hand-over (a shard still draining keeps it)."""
        entry = self.registry.read(previous.shard)
        if entry is not None and entry[0].state is not ShardState.RETIRED:
            return
        self.storage.delete(previous.directory, recursive=True)
        log.info("deleted %s: its sources' state was handed over to %s", previous.directory, self.incarnation)

    def _on_shards(self, children) -> bool | None:
        if self._stopped.is_set():
            return False
        for child in children:
            if child not in self._queued:
                self.store.watch_shard(child, self._watch_shard(child))
                self._queued.add(child)
        return None

    def _watch_shard(self, shard: str):
        def watch(current: ShardOwnership | None):
            if self._stopped.is_set() or current is None:
                return False
            if current.owner == self.incarnation.id and current.state is ShardState.ADOPTING:
                self.timeline.adopting_seen.setdefault(f"{shard}@{current.epoch}", self._wall_clock())
                self._adoptions.put(current)
            return None

        return watch

    def _adoption_loop(self, housekeeper: bool) -> None:
        while not self._stopped.is_set():
            try:
                item = self._adoptions.get(timeout=0.2)
            except queue.Empty:
                if housekeeper:
                    self._retire_drained()
                continue
            if item is None:
                return
            family = item.source.parent if item.source is not None else item.shard
            with self._lock:
                busy = family in self._adopting
                if not busy:
                    self._adopting.add(family)
            if busy:  # another worker has it: this entry waits its turn, as in one queue
                self._retry_later(item, FAMILY_BUSY_RETRY)
                continue
            try:
                self._adopt(item)
            finally:
                with self._lock:
                    self._adopting.discard(family)

    def _adopt(self, seen: ShardOwnership) -> None:
        """One attempt at adopting a shard (`seen`: as the watch or a retry saw it).
        Every attempt ends in one of four ways: the shard runs here; it is no longer
        this node's (fenced); it is tried again (`_after_failure`); or it is held for an
        operator. A HELD shard is tried again only when its recheck is due."""
        me = self.incarnation.id
        with self._lock:
            if seen.shard in self.runtimes:
                return
        key = f"{seen.shard}@{seen.epoch}"
        attempts = self._attempts.setdefault(key, _AdoptionAttempts(self._clock()))
        started = self._clock()
        adoptions = self.instruments.adoptions
        current: ShardOwnership | None = None
        try:
            current = self.registry.claim(seen.shard, me, seen.epoch)  # still ours at that epoch?
            if current.state is ShardState.HELD:
                attempts.held = True
                if not attempts.recheck_due:
                    return  # an older entry of the queue: the recheck is scheduled
                attempts.recheck_due = False
                attempts.rechecks += 1
            # DRAINING and ours, but not running here: adopted, then its runtime failed to
            # start (a port its flow binds was taken); it is opened again, not re-marked.
            elif current.state not in (ShardState.ADOPTING, ShardState.DRAINING):
                self._attempts.pop(key, None)
                return
            self.guard.check()
            log.info(
                "%s %s shard %s at epoch %d",
                tag(current.step),
                "trying again the held" if current.state is ShardState.HELD else "adopting",
                current.shard,
                current.epoch,
            )
            if self._on_fencing is not None:
                self._on_fencing(current)
            steps = Steps(self._clock)
            handle = adopt_shard(
                self.storage,
                self.layout,
                current,
                self.config.wal,
                fence_first_wait=self.config.fence_first_wait,
                fence_timeout=self.config.fence_timeout,
                fence_durations=self.instruments.fencing_durations,
                callbacks=self._callbacks(current, home=False),
                on_leases_asked=self._leases_asked_callback(current),
            )
            steps.done("fenced")
            runtime = self._prepare(handle)
            steps.done("recovered")
            try:
                self.guard.check()
                if current.state in (ShardState.ADOPTING, ShardState.HELD):
                    # The compare-and-set is the commit point: until it, nothing of the shard ran.
                    handle.marked_adopted(self.registry.mark_adopted(current.shard, me, current.epoch))
            except BaseException:
                self._end_runtime(runtime)
                raise
            steps.done("marked")
            self.timeline.steps[key] = current.step
            self.timeline.adopted[key] = self._wall_clock()
            self._run_shard(handle, runtime)
            steps.done("started")
            self._attempts.pop(key, None)
            adoptions.of(ADOPTED).add()
            self.instruments.adoption_durations.observe(self._clock() - started)
            log.info(
                "%s shard %s adopted by %s at epoch %d in %s",
                tag(current.step),
                current.shard,
                me,
                current.epoch,
                steps.said(),
            )
            remarks = list(handle.plan_notes)
            if current.state is ShardState.HELD:
                remarks.insert(0, f"it could be opened at last, after {attempts.rechecks} recheck(s)")
            if remarks:
                self._note_in_plan(
                    current, f"{me} adopted {current.shard} at epoch {current.epoch}: " + "; ".join(remarks)
                )
        except FencedError as error:
            self._attempts.pop(key, None)
            adoptions.of(FENCED).add()
            log.warning("%s not adopting %s: %s", tag(seen.step), seen.shard, error)
        except Exception as error:  # noqa: BLE001 - every failure is judged: tried again, or the shard is held
            self._after_failure(seen, current, attempts, error)

    def _after_failure(
        self, seen: ShardOwnership, current: ShardOwnership | None, attempts: _AdoptionAttempts, error: Exception
    ) -> None:
        """Try again soon (HDFS or ZooKeeper trouble), or hold the shard for an operator
        (its files say no, or it kept failing past the lease-recovery bound), or, after
        a failed recheck of a held shard, hold it again with what this attempt found:
        `core.adoption_failures` decides, by the kind of failure (`failure_kind`)."""
        shard = current or seen
        if self._stopped.is_set() or self._dying:
            # The member is ending, and closed what the attempt was using: not a failure
            # of the shard, which its next owner adopts.
            log.info(
                "%s adoption of %s ended: this member is stopping (%s)", tag(shard.step), shard.shard, first_line(error)
            )
            return
        kind = failure_kind(error)
        what = describe_failure(error, self.storage)
        held = attempts.held  # a recheck that failed, maybe before it could read the shard
        decision = after_failure(
            kind,
            what,
            held=held,
            adopting_for=self._clock() - attempts.first,
            bound=self.config.fence_timeout,
            rechecks=attempts.rechecks,
            recheck_first=self.config.held_recheck,
        )
        if isinstance(decision, RetryLater):
            if held:
                self._still_held(seen, shard, None, what, decision.after)
                return
            self.instruments.adoptions.of(RETRIED).add()
            log.warning(
                "%s adoption of %s failed (%s), tried again in %.0fs: %s",
                tag(shard.step),
                shard.shard,
                kind.value,
                decision.after,
                what,
            )
            self._retry_later(seen, decision.after)
            return
        try:
            held_now = self.registry.hold(
                shard.shard, self.incarnation.id, shard.epoch, decision.reason, step=shard.step
            )
        except FencedError as fenced:
            self._attempts.pop(f"{seen.shard}@{seen.epoch}", None)
            log.warning("%s not holding %s: %s", tag(seen.step), seen.shard, fenced)
            return
        except Exception as trouble:  # noqa: BLE001 - ZooKeeper trouble: the next attempt judges again
            if not held:
                self.instruments.adoptions.of(RETRIED).add()
            log.warning(
                "%s could not mark %s held (%s); tried again", tag(shard.step), shard.shard, first_line(trouble)
            )
            # A held shard keeps its recheck schedule: its next recheck writes its own reason.
            self._retry_later(seen, decision.after if held else RETRY_INTERVAL, recheck=held)
            return
        if held:
            self._still_held(seen, shard, held_now, decision.reason, decision.after)
            return
        attempts.held = True
        self.instruments.adoptions.of(HELD).add()
        log.error(
            "%s shard %s is held by %s at epoch %d and not adopted: %s. Nothing of it was changed or deleted; "
            "it is tried again in %.0fs (doubling), and at once by whoever adopts it next",
            tag(shard.step),
            shard.shard,
            self.incarnation.id,
            shard.epoch,
            decision.reason,
            decision.after,
        )
        self._note_in_plan(
            held_now,
            f"{self.incarnation.id} holds {shard.shard} at epoch {shard.epoch} for an operator: {decision.reason}",
        )
        self._retry_later(seen, decision.after, recheck=True)

    def _still_held(
        self, seen: ShardOwnership, read: ShardOwnership, held_now: ShardOwnership | None, reason: str, after: float
    ) -> None:
        """A recheck of a held shard failed (`read`: the shard as it read it); `held_now`
        is the shard held again with `reason`, None when the failure left the reason as
        it was (a transient one). Said as a new hold when the reason changed
        (`ownership.hold` wrote nothing when it did not); the next recheck in `after`."""
        if held_now is None or held_now.history[-1:] == read.history[-1:]:
            log.warning(
                "%s shard %s is still held (%s); tried again in %.0fs", tag(read.step), read.shard, reason, after
            )
        else:
            me = self.incarnation.id
            log.error(
                "%s shard %s is still held by %s at epoch %d, now because: %s; tried again in %.0fs",
                tag(read.step),
                read.shard,
                me,
                read.epoch,
                reason,
                after,
            )
            self._note_in_plan(held_now, f"{me} still holds {read.shard} at epoch {read.epoch}, now because: {reason}")
        self._retry_later(seen, after, recheck=True)

    def _note_in_plan(self, ownership: ShardOwnership, text: str) -> None:
        """Add `[step] text` to the notes of the failover plan that moved the shard here
        (on a thread of its own; advisory: the shard's history has the same reason)."""
        step = ownership.step
        if not step:
            return
        plan_id, note = step.split(":", 1)[0], f"{tag(step)} {text}"

        def write(attempts: int = 5) -> None:
            for _ in range(attempts):
                try:
                    self.store.plans.update(plan_id, lambda plan: replace(plan, notes=plan.notes + (note,)))
                    return
                except OwnershipConflict:
                    continue  # the leader revised the plan meanwhile: read it again
                except Exception as error:  # noqa: BLE001 - advisory, see above
                    log.info("%s could not note in plan %s: %s", tag(step), plan_id, first_line(error))
                    return

        self._spawn(write, f"plan-note {ownership.shard}")

    def _record_resumed(self, ownership: ShardOwnership, attempts: int = 5) -> None:
        """Write into the failover's plan when the adopted shard first delivered here
        (the admin API's resume time). Advisory: a plan already gone, or ZooKeeper
        trouble, costs the figure, nothing else."""
        step = ownership.step
        if not step:
            return
        plan_id, at = step.split(":", 1)[0], self._wall_clock()
        for _ in range(attempts):
            try:
                self.store.plans.update(plan_id, lambda plan: with_resumed(plan, ownership.shard, ownership.epoch, at))
                return
            except OwnershipConflict:
                continue  # the leader revised the plan meanwhile: read it again
            except Exception as error:  # noqa: BLE001 - advisory, see above
                log.info("%s could not record the resume of %s: %s", tag(step), ownership.shard, first_line(error))
                return

    def _retry_later(self, seen: ShardOwnership, after: float, *, recheck: bool = False) -> None:
        """Queue `seen` again in `after` seconds; with `recheck`, as the due recheck of a
        held shard (which `_adopt` otherwise leaves alone)."""
        key = f"{seen.shard}@{seen.epoch}"

        def again():
            if self._stopped.wait(after):
                return
            if recheck:
                attempts = self._attempts.get(key)
                if attempts is None:
                    return
                attempts.recheck_due = True
            self._adoptions.put(seen)

        threading.Thread(target=again, name=f"adoption-retry {key}", daemon=True).start()

    def _retire_drained(self) -> None:
        me = self.incarnation.id
        with self._lock:
            candidates = [
                (shard, runtime, self.handles[shard])
                for shard, runtime in self.runtimes.items()
                if not self.handles[shard].home
            ]
        for shard, runtime, handle in candidates:
            try:
                if not runtime.drained() or not self.guard.may_work():
                    continue
                keep = runtime.holds_hand_over_state()
                self.registry.retire(shard, me, handle.epoch)
            except FencedError as error:
                log.warning("%s", error)
            except Exception as error:  # noqa: BLE001
                log.info("retiring %s postponed: %s", shard, error)
                continue
            with self._lock:
                self.runtimes.pop(shard, None)
                self.handles.pop(shard, None)
            runtime.stop()
            self.timeline.retired[shard] = self._wall_clock()
            if keep:
                # Its sources' records of what they took on their own machine: the node's
                # next incarnation takes them over, then deletes the directory.
                log.info(
                    "%s shard %s drained and retired by %s; %s is kept for the hand-over of its sources' state",
                    tag(handle.step),
                    shard,
                    me,
                    handle.directory,
                )
                continue
            log.info(
                "%s shard %s drained and retired by %s; collecting %s", tag(handle.step), shard, me, handle.directory
            )
            try:
                self.storage.delete(handle.directory, recursive=True)
            except Exception as error:  # noqa: BLE001 - garbage, collected later
                log.info("collecting %s failed: %s", handle.directory, error)

    # -- heartbeat figures ---------------------------------------------------------------------------
    def _figures(self) -> dict:
        queues: dict[str, QueueLoad] = {}
        threads = 0
        with self._lock:
            runtimes = list(self.runtimes.items())
        for shard, runtime in runtimes:
            try:
                # Keyed "<shard>/<queue>": an operator (and a drill) sees which shard holds what.
                for name, load in runtime.load().items():
                    queues[f"{shard}/{name}"] = load
                threads += runtime.active_threads()
            except Exception:  # noqa: BLE001 - figures are advisory
                pass
        try:
            cpu = min(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
        except OSError:
            cpu = 0.0
        try:
            free = shutil.disk_usage(self.config.local_directory).free
        except OSError:
            free = 0
        return {
            "queues": queues,
            "active_threads": threads,
            "cpu": cpu,
            "free_disk": free,
            "owned_shards": tuple(sorted(shard for shard, _ in runtimes)),
        }

    def _each_runtime(self, method: str) -> None:
        with self._lock:
            runtimes = list(self.runtimes.values())
        for runtime in runtimes:
            getattr(runtime, method)()

    def _spawn(self, target: Callable[[], None], name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)


def _home_shard_incarnation(name: str) -> Incarnation | None:
    """The incarnation whose home shard the directory `name` under `shards/` holds
    (under its first name or fenced), or None (a divvy slice's, or no shard's)."""
    parsed = ClusterLayout.parse_shard_directory_name(name)
    try:
        return Incarnation.parse(parsed.shard) if parsed is not None else None
    except ValueError:
        return None
