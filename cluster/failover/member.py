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
shard's znode names it owner in state ADOPTING (it watches `shards/`).

A member never survives its session, not even while it is starting: a death during
`start` stops it at the next step (`IncarnationEnded`), with nothing of it running. When the session guard says the session is
over, or a heartbeat or claim is answered "you are dead", it stops every runtime
(which never write again), and `dead` is set. A process that wants to go on makes
a new `ClusterMember`: a new incarnation with a new shard (the failover protocol's
"return": the old incarnation never processes its old data again).
"""

from __future__ import annotations

import logging
import os
import queue
import shutil
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from flow.engine import DEFAULT_THREADS

from ..clients import (
    DEFAULT_SESSION_TIMEOUT,
    ClientFactory,
    ZooKeeperSettings,
    granted_session_timeout,
    stop_quietly,
)
from ..core.flows import FlowSnapshot
from ..core.heartbeat import DEFAULT_CAPACITY_WEIGHT, Heartbeat, QueueLoad
from ..core.incarnation import Incarnation
from ..core.layout import DEFAULT_HDFS_ROOT, FENCED_MARK, ClusterLayout
from ..core.ownership import ShardOwnership, ShardState
from ..core.planner import DEFAULT_POLICY
from ..core.plans import with_resumed
from ..core.story import tag
from ..errors import (ClusterError, ConfigurationRefused, FencedError, IncarnationEnded, OwnershipConflict,
                      SessionTimeoutRefused, first_line)
from ..zk.membership import Membership
from ..zk.session import GuardCallbacks, SessionGuard
from ..zk.shards import ShardRegistry
from ..zk.store import ClusterStore
from .adoption import WalOptions, adopt_shard, open_home_shard
from .fencing import DEFAULT_FIRST_WAIT, current_directory
from .instruments import ADOPTED, FENCED, RETRIED, FailoverInstruments
from .leader import Leader, LeaderHooks
from .preflight import probe_storage
from .runtime import PreviousShard, RuntimeFactory, ShardHandle

log = logging.getLogger(__name__)


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


@dataclass
class MemberTimeline:
    """Wall-clock moments a drill reports (detection, takeover, resume)."""

    adopting_seen: dict[str, float] = field(default_factory=dict)
    adopted: dict[str, float] = field(default_factory=dict)
    retired: dict[str, float] = field(default_factory=dict)
    steps: dict[str, str | None] = field(default_factory=dict)  # "<shard>@<epoch>" -> the move's step id


class ClusterMember:
    """Lock plan: `_lock` guards `runtimes` and `handles` (adoption thread, guard
    callbacks, stop). Runtimes' own methods are called outside it."""

    def __init__(self, config: MemberConfig, storage, runtime_factory: RuntimeFactory, *,
                 clients: ClientFactory | None = None, leader_hooks: LeaderHooks | None = None,
                 clock=time.monotonic, wall_clock=time.time, instruments: FailoverInstruments | None = None,
                 on_connected: Callable[[], None] | None = None,
                 on_fencing: Callable[[ShardOwnership], None] | None = None):
        self.config, self.storage, self.runtime_factory = config, storage, runtime_factory
        # The node's: they count across its incarnations.
        self.instruments = instruments if instruments is not None else FailoverInstruments()
        self.clients = clients or ClientFactory(ZooKeeperSettings(config.zk_hosts, config.session_timeout))
        self.layout = ClusterLayout(config.cluster, config.hdfs_root)
        self._leader_hooks = leader_hooks
        self._on_connected = on_connected  # told once ZooKeeper answered, before anything is taken
        # Told as an adoption begins to fence a shard: work to run beside the fencing
        # (it must return at once, and a failure in it is its own to handle).
        self._on_fencing = on_fencing
        self._clock, self._wall_clock = clock, wall_clock
        self.client = None
        self.store: ClusterStore | None = None
        self.incarnation: Incarnation | None = None
        self.registry: ShardRegistry | None = None
        self.membership: Membership | None = None
        self.guard: SessionGuard | None = None
        self.leader: Leader | None = None
        self.runtimes: dict[str, object] = {}
        self.handles: dict[str, ShardHandle] = {}
        self.timeline = MemberTimeline()
        self.dead = threading.Event()
        self.death_reason = ""
        # Set when the incarnation ended on the node's configuration (a session timeout the
        # servers cut on a reconnect): rejoining cannot help, the operator must change it.
        self.refusal: ConfigurationRefused | None = None
        self._dying = ""  # the first reason given to `_die`, before the shutdown has finished
        self._lock = threading.Lock()
        self._adoptions: queue.Queue = queue.Queue()
        self._queued: set[str] = set()
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
        probe_storage(self.storage, self.layout, config.node)  # before an incarnation is taken
        self.incarnation = self.store.new_incarnation(config.node)
        me = self.incarnation.id
        self.registry = self.store.shards
        self.guard = self.store.session_guard(me, config.session_timeout, GuardCallbacks(
            close_gate=lambda: self._each_runtime("pause"),
            open_gate=lambda: self._each_runtime("resume"),
            abort_open_sessions=lambda: self._each_runtime("abort_open_sessions"),
            abort_all=self._session_over,
        ), clock=self._clock, name=f"session-guard {me}", granted_timeout=lambda: granted_session_timeout(self.client))
        first = Heartbeat(config.node, me, self.incarnation.epoch, admin=config.admin,
                          capacity_weight=config.capacity_weight, max_threads=config.max_threads)
        self.membership = self.store.membership(first, interval=config.heartbeat_interval,
                                                figures=self._figures, on_dead=lambda error: self._die(str(error)),
                                                on_confirmed=self.guard.confirmed, clock=self._clock,
                                                wall_clock=self._wall_clock)
        self.membership.join()
        self.guard.start()
        # The home shard: id = incarnation id, epoch = incarnation epoch.
        flow = config.flow
        home = self.registry.create_home_shard(me, me, self.incarnation.epoch,
                                               flow=flow.version if flow is not None else None)
        self._check_alive("creating its home shard")
        handle = open_home_shard(self.storage, self.layout, home, config.wal, flow)
        handle.previous_shards, handle.forget_previous = self._previous_shards, self._forget_previous
        self._check_alive("opening its home shard")
        runtime = self._prepare(handle)
        self._check_alive("recovering its home shard", runtime)
        self._run_shard(handle, runtime)
        self._check_alive("starting its home shard")
        self.membership.start()
        self._spawn(self._adoption_loop, f"adoption {me}")
        self.store.watch_shards(self._on_shards)
        if config.lead:
            self.leader = Leader(self.store, me, policy=config.policy, may_act=self.guard.may_work,
                                 hooks=self._leader_hooks, wall_clock=self._wall_clock, storage=self.storage,
                                 plans_led=self.instruments.plans_led)
            self.leader.start()
        self._check_alive("joining")
        log.info("member %s joined cluster %s", me, config.cluster)
        return self.incarnation

    def _check_alive(self, step: str, runtime=None) -> None:
        """Raise `IncarnationEnded` if the incarnation died while `start` was at `step`
        (its session guard or membership declared it dead on another thread): a dead
        incarnation goes no further. `runtime`, made but not yet registered (so the
        death could not stop it), is stopped here."""
        if not self._stopped.is_set():
            return
        if runtime is not None:
            runtime.stop()
        if self.leader is not None:  # started after the shutdown looked for it
            self.leader.stop()
        raise IncarnationEnded(self.incarnation.id, step, self.death_reason or self._dying or "stopped")

    def stop(self, *, leave: bool = True) -> None:
        """Stop on purpose. With `leave`, the membership znode is deleted so the
        leader hands this member's shards to the others at once."""
        self._shutdown("stopped by request", leave=leave)

    def wait_dead(self, timeout: float | None = None) -> bool:
        return self.dead.wait(timeout)

    # -- death ---------------------------------------------------------------------------------
    def _session_over(self, reason: str) -> None:
        """The session guard's verdict. Over because ZooKeeper granted a reconnected session
        less than the configured timeout: the same refusal as a short grant at the first
        connect, and the node stops instead of rejoining."""
        granted = self.guard.state.granted_timeout if self.guard is not None else None
        if granted is not None:
            self.refusal = SessionTimeoutRefused(self.config.zk_hosts, self.config.session_timeout, granted)
        self._die(reason)

    def _die(self, reason: str) -> None:
        if self.dead.is_set():
            return
        self._dying = self._dying or reason
        log.error("incarnation %s is dead: %s; every shard runtime is stopped and never writes again",
                  self.incarnation, reason)
        threading.Thread(target=self._shutdown, args=(reason,), kwargs={"leave": False}, daemon=True).start()

    def _shutdown(self, reason: str, *, leave: bool) -> None:
        with self._lock:
            if self._stopped.is_set():
                return
            self._stopped.set()
            runtimes = list(self.runtimes.items())
        # Stop processing first: nothing may be written after the session is over.
        for shard, runtime in runtimes:
            try:
                runtime.stop()
            except Exception as error:  # noqa: BLE001 - a fenced WAL may refuse its close
                log.info("runtime of shard %s stopped with: %s", shard, error)
        if self.leader is not None:
            self.leader.stop()
        if self.membership is not None:
            self.membership.stop(leave=leave)
        if self.guard is not None:
            self.guard.stop()
        self._adoptions.put(None)
        self.death_reason = reason
        self.dead.set()
        if self.client is not None:
            stop_quietly(self.client)

    # -- shards -----------------------------------------------------------------------------------
    def owned_shards(self) -> tuple[str, ...]:
        with self._lock:
            return tuple(sorted(self.runtimes))

    def runtimes_now(self) -> dict[str, object]:
        """shard -> its runtime, as a copy taken under the lock."""
        with self._lock:
            return dict(self.runtimes)

    def _prepare(self, handle: ShardHandle):
        """Make the runtime and let it recover the shard's WAL; nothing runs yet."""
        handle.gate = self.guard
        me = self.incarnation.id
        handle.verify_ownership = lambda: self.registry.claim(handle.shard, me, handle.epoch)
        runtime = self.runtime_factory(handle)
        try:
            runtime.recover()
        except BaseException:
            runtime.stop()
            raise
        return runtime

    def _run_shard(self, handle: ShardHandle, runtime) -> None:
        """Register the runtime (so that a death stops it) and start it. A runtime that
        fails to start is stopped and unregistered again, and the error raised: the
        shard is not left registered and idle, where a retry would take it for running."""
        with self._lock:
            if self._stopped.is_set():
                runtime.stop()
                return
            self.runtimes[handle.shard] = runtime
            self.handles[handle.shard] = handle
        try:
            runtime.start()
        except BaseException:
            with self._lock:
                if self.runtimes.get(handle.shard) is runtime:
                    del self.runtimes[handle.shard]
                    del self.handles[handle.shard]
            runtime.stop()
            raise

    def _previous_shards(self) -> list[PreviousShard]:
        """This node's earlier incarnations' shards that still have a directory on HDFS."""
        me = self.incarnation
        names = set()
        for entry in self.storage.list(self.layout.hdfs_shards):
            try:
                earlier = Incarnation.parse(entry.name.split(FENCED_MARK)[0])
            except ValueError:
                continue
            if earlier.node == me.node and earlier.epoch < me.epoch:
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
        if ownership.state is ShardState.DRAINING:
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

    def _adoption_loop(self) -> None:
        while not self._stopped.is_set():
            try:
                item = self._adoptions.get(timeout=0.2)
            except queue.Empty:
                self._retire_drained()
                continue
            if item is None:
                return
            self._adopt(item)

    def _adopt(self, seen: ShardOwnership) -> None:
        me = self.incarnation.id
        with self._lock:
            if seen.shard in self.runtimes:
                return
        started = self._clock()
        adoptions = self.instruments.adoptions
        try:
            current = self.registry.claim(seen.shard, me, seen.epoch)  # still ours at that epoch?
            # DRAINING and ours, but not running here: adopted, then its runtime failed to
            # start (a port its flow binds was taken); it is opened again, not re-marked.
            if current.state not in (ShardState.ADOPTING, ShardState.DRAINING):
                return
            self.guard.check()
            log.info("%s adopting shard %s at epoch %d", tag(current.step), current.shard, current.epoch)
            if self._on_fencing is not None:
                self._on_fencing(current)
            handle = adopt_shard(self.storage, self.layout, current, self.config.wal,
                                 fence_first_wait=self.config.fence_first_wait,
                                 fence_durations=self.instruments.fencing_durations)
            handle.record_resumed = lambda: self._spawn(lambda: self._record_resumed(current), "record-resumed")
            runtime = self._prepare(handle)
            try:
                self.guard.check()
                if current.state is ShardState.ADOPTING:
                    # The compare-and-set is the commit point: until it, nothing of the shard ran.
                    handle.ownership = self.registry.mark_adopted(current.shard, me, current.epoch)
            except BaseException:
                runtime.stop()
                raise
            key = f"{current.shard}@{current.epoch}"
            self.timeline.steps[key] = current.step
            self.timeline.adopted[key] = self._wall_clock()
            self._run_shard(handle, runtime)
            adoptions.of(ADOPTED).add()
            self.instruments.adoption_durations.observe(self._clock() - started)
            log.info("%s shard %s adopted by %s at epoch %d", tag(current.step), current.shard, me, current.epoch)
        except FencedError as error:
            adoptions.of(FENCED).add()
            log.warning("%s not adopting %s: %s", tag(seen.step), seen.shard, error)
        except ClusterError as error:
            adoptions.of(RETRIED).add()
            log.warning("%s adoption of %s postponed: %s", tag(seen.step), seen.shard, error)
            self._retry_later(seen)
        except Exception as error:  # noqa: BLE001 - HDFS trouble: adoption retries, fencing is idempotent
            adoptions.of(RETRIED).add()
            log.warning("%s adoption of %s failed, will retry: %s: %s", tag(seen.step), seen.shard,
                        type(error).__name__, error)
            self._retry_later(seen)

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

    def _retry_later(self, seen: ShardOwnership) -> None:
        def again():
            if not self._stopped.wait(1.0):
                self._adoptions.put(seen)
        threading.Thread(target=again, daemon=True).start()

    def _retire_drained(self) -> None:
        me = self.incarnation.id
        with self._lock:
            candidates = [(shard, runtime, self.handles[shard]) for shard, runtime in self.runtimes.items()
                          if not self.handles[shard].home]
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
                log.info("%s shard %s drained and retired by %s; %s is kept for the hand-over of its sources' state",
                         tag(handle.step), shard, me, handle.directory)
                continue
            log.info("%s shard %s drained and retired by %s; collecting %s", tag(handle.step), shard, me,
                     handle.directory)
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
        return {"queues": queues, "active_threads": threads, "cpu": cpu, "free_disk": free,
                "owned_shards": tuple(sorted(shard for shard, _ in runtimes))}

    def _each_runtime(self, method: str) -> None:
        with self._lock:
            runtimes = list(self.runtimes.values())
        for runtime in runtimes:
            getattr(runtime, method)()

    def _spawn(self, target: Callable[[], None], name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)
