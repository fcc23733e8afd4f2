"""The failover drill's round loop: one fault a round, each against a cluster with
work in flight, each failover timed, then one exactly-once check of the whole run.

It talks to the cluster through a `DrillTarget` only (see `targets`), so that the
same loop drills local processes and containers. A round:

1. picks a victim: the non-leader with the largest backlog (`pick_victim`), so that a
   failover has queued and swapped FlowFiles to resume;
2. injects its fault (`fault_kinds`), and for a failover waits until the victim's
   shard is adopted and the victim is back as a new incarnation; for a fault that
   must not fail anything over, waits until delivery goes on (`no_failover_round`);
3. waits for the first delivery from the adopted shard, and records detection
   (death to plan), takeover (plan to adopted), resume (adopted to first output) and
   death to resume, with the moments themselves (`phases`) for the timeline plot;
4. counts the duplicate deliveries the sink shows by then;
5. checks the protocol's invariants over one read of the cluster's znodes
   (`protocol_check`): a violation is kept in the round and fails the drill.

Every wait is on an observed condition with a deadline (`wait_until`); a deadline
passed raises `ServiceError`, and the round in progress is kept in `rounds` with its
`error`. `DeliverySampler` counts deliveries every half second meanwhile.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from flow.processors.kafka.delivery import PRODUCER_FENCED

from ..core.ownership import ShardState
from ..core.validation import validate_cluster
from ..node.events import NodeEvent
from ..node.pause_monitor import STOOD_STILL
from ..services.process import ServiceError, wait_until
from .checker import ClusterReport
from .fault_kinds import BY_NAME, rack_size
from .faults import CpuLoad
from .report import TIMINGS
from .targets import DrillTarget

BACKLOG = 100  # FlowFiles queued at the victim's death (the swap threshold)
# How long the broker fault keeps the Kafka broker down: the fault itself, longer than
# librdkafka's reconnect backoff (at most 10 s by default, from 0.1 s), so that every
# client meets refused connections and transactions in flight fail.
BROKER_OUTAGE_S = 5.0
RESUME_PATIENCE = 10.0  # seconds to wait for a resume before the nodes print their stacks
RESUME_DEADLINE = 80.0  # seconds more after that
MOVE_DEADLINE = 90.0
# A node cut off stops itself (its session guard's own timer) while it is cut off, and its
# death is over within 2 s of that decision whatever HDFS does (it abandons what it
# wrote, `cluster.failover.member`): it has reported it by the heal, or moments after.
DEATH_AFTER_HEAL_S = 5.0
SETTLE_DEADLINE = 240.0
# The load fault: every core busy this long, and meanwhile one node stalled (SIGSTOP,
# then SIGCONT) `LOAD_STALLS` times for `LOAD_STALL_S`, running `LOAD_RUN_S` between:
# long pauses that are not deaths.
LOAD_SECONDS = 60.0
LOAD_STALLS = 10
LOAD_STALL_S = 0.8
LOAD_RUN_S = 0.4
# The slow-hdfs fault: every DataNode stopped `SLOW_HDFS_STOP_S`, then running
# `SLOW_HDFS_RUN_S`, for `SLOW_HDFS_SECONDS`: every pipeline slow alike, none dead.
SLOW_HDFS_SECONDS = 20.0
SLOW_HDFS_STOP_S = 0.5
SLOW_HDFS_RUN_S = 0.5
STALL_START_DEADLINE = 60.0  # for the first stall to be on (a docker pause of every DataNode)
# Where a partition round cuts its node off, in turn (see `_partition`).
PARTITION_PHASES = ("running", "leader", "adopting", "joining")


class DeliverySampler:
    """(wall-clock time, delivered) every `interval` seconds, from a thread of its own,
    until stopped: the timeline of the run. A sample that fails (a node directory
    being read while it changes) is skipped."""

    def __init__(self, delivered: Callable[[], int], interval: float = 0.5):
        self.delivered, self.interval = delivered, interval
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="drill-sampler", daemon=True)

    def start(self) -> DeliverySampler:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.samples.append((round(time.time(), 3), self.delivered()))
            except Exception:  # noqa: BLE001 - one missed sample in a timeline
                pass
            self._stop.wait(self.interval)  # the sampling period, not a synchronisation

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10)


class DrillRunner:
    """Runs `schedule` (a fault name a round) on `target`, which `start_all` has
    started. `on_round(entry)` is called after each round (a progress line, a test's
    assertion). After `run`: `rounds` (one dict a round), `samples` (the timeline),
    `report` (the final check; None if the run stopped before it), `error`."""

    def __init__(
        self,
        target: DrillTarget,
        schedule,
        *,
        on_round: Callable[[dict], None] = lambda entry: None,
        load_seconds: float | None = None,
    ):
        unsupported = sorted(set(schedule) - set(target.supported_faults))
        if unsupported:
            raise ValueError(f"target {target.kind} cannot inject {unsupported}")
        self.target, self.schedule, self.on_round = target, list(schedule), on_round
        self.load_seconds = LOAD_SECONDS if load_seconds is None else load_seconds
        self.rounds: list[dict] = []
        self.samples: list[tuple[float, int]] = []
        self.report: ClusterReport | None = None
        self.error: str | None = None
        self.started_at: float | None = None
        self.blocks_scheduled_at_start: int | None = None  # HDFS's, before the first round
        self._duplicates_seen: set[str] = set()

    def run(self) -> ClusterReport:
        """Every round, then settle and check. Raises what stopped it (after recording
        it in `error`), with the rounds so far kept."""
        sampler = DeliverySampler(self.target.delivered).start()
        self.started_at = time.time()
        self.blocks_scheduled_at_start = self.target.blocks_scheduled()
        try:
            for index, fault in enumerate(self.schedule):
                entry = {"round": index, "fault": fault}
                self.rounds.append(entry)
                try:
                    self._round(entry)
                except Exception as error:
                    entry["error"] = str(error)
                    raise
                self.on_round(entry)
            self.target.wait_settled(timeout=SETTLE_DEADLINE)
        except Exception as error:
            self.error = f"{type(error).__name__}: {error}"
            raise
        finally:
            sampler.stop()
            self.samples = sampler.samples
        self.report = self.target.check()
        return self.report

    # -- one round ----------------------------------------------------------------------
    def _round(self, entry: dict) -> None:
        target, fault = self.target, entry["fault"]
        target.prepare_round()
        leader = target.leader()
        # Every round starts with work queued somewhere: a failover has a backlog to
        # resume, and "delivery goes on" through a fault that fails nothing over means
        # something (a drained cluster delivers nothing, fault or not).
        victim, incarnation, queued, entry["left_on_purpose"] = pick_victim(target, leader)
        entry["victim"] = incarnation
        if not BY_NAME[fault].fails_over and not queued:
            # A fault the cluster rides out is timed by delivery going on. A node just
            # restarted to make a backlog (the others had drained theirs) is the only
            # one with work, and it is still starting: until it delivers, the round
            # would time its start (a compose run: 2-9 s when the fault met it, 0.1-0.6 s
            # in the other rounds), not the fault.
            entry["queued_at_fault"] = wait_backlog(target, incarnation)
        if fault == "broker":
            entry.update(outage_round(target, target.kill_broker, target.restore_broker, "the Kafka broker"))
        elif fault == "load":
            entry.update(load_round(target, victim, self.load_seconds))
        elif fault == "slow-hdfs":
            entry.update(slow_hdfs_round(target))
        elif not BY_NAME[fault].fails_over:
            kill, restore, what = {
                "zk-follower": (target.kill_zookeeper_follower, target.restore_zookeeper_follower, "a follower down"),
                "datanode": (target.kill_datanode, target.restore_datanode, "a DataNode down"),
            }[fault]
            entry.update(no_failover_round(target, kill, restore, what))
        elif fault == "rack":
            self._rack(entry, victim, incarnation, queued, leader)
        else:
            if fault == "partition":
                done = sum(1 for r in self.rounds[:-1] if r["fault"] == "partition")
                phase = entry["phase"] = PARTITION_PHASES[done % len(PARTITION_PHASES)]
                if phase == "leader" and leader is not None:  # the leader is cut off, backlog or not
                    victim, incarnation = leader, target.incarnation(leader)
                    entry["victim"] = incarnation
            if entry.get("phase") != "leader":
                # The backlog seen when the victim was picked, or (a node restarted to
                # make one) the one it builds: awaited again, it may have drained meanwhile.
                entry["queued_at_death"] = queued or wait_backlog(target, incarnation)
            died_at = time.time()
            entry["phases"] = {"fault_at": round(died_at, 3)}  # timings() adds the rest
            FAILOVERS[fault](target, entry, victim, incarnation, leader)
            died_at = max(died_at, entry["phases"]["fault_at"])  # a fault injected late (`_expire`)
            self._wait_resumed(entry, incarnation, died_at)
            entry.update(timings(target, incarnation, died_at))
        entry["sink_duplicates"] = self._new_duplicates()
        entry.update(protocol_check(target))
        scheduled = target.blocks_scheduled()  # a leak of unfinished blocks shows as a rise
        if scheduled is not None:
            entry["blocks_scheduled"] = scheduled

    def _rack(self, entry: dict, victim: str, incarnation: str, queued: int, leader: str | None) -> None:
        """A third of the nodes SIGKILLed at once (`rack_size`): the victim picked for its
        backlog, then the non-leaders queuing most, and in every second rack round the
        leader in place of the last of them. Each victim's shard must be adopted and
        resumed: `shards` has the timings of each, and the round's own are the slowest
        shard's (death to the last resume)."""
        target = self.target
        count = rack_size(len(target.names))
        earlier = sum(1 for r in self.rounds[:-1] if r["fault"] == "rack")
        with_leader = earlier % 2 == 1 and count > 1 and leader not in (None, victim)
        others = [name for name in target.names if name not in (victim, leader)]
        backlog = {name: target.queued(target.incarnation(name) or "") for name in others}
        others.sort(key=lambda name: backlog[name], reverse=True)
        chosen = [victim] + others[: count - 1 - int(with_leader)] + ([leader] if with_leader and leader else [])
        victims = {name: (incarnation if name == victim else target.incarnation(name)) for name in chosen}
        entry["victims"] = [inc for inc in victims.values() if inc]
        if with_leader and leader:
            entry["leader_killed"] = victims[leader]
        entry["queued_at_death"] = queued or wait_backlog(target, incarnation)
        died_at = time.time()
        entry["phases"] = {"fault_at": round(died_at, 3)}
        for name in chosen:
            target.kill(name)
        for gone in entry["victims"]:
            wait_moved(target, gone)
        target.restart(*chosen)
        shards = []
        for gone in entry["victims"]:
            shard: dict = {"victim": gone}
            self._wait_resumed(shard, gone, died_at)
            shard.update(timings(target, gone, died_at))
            shards.append(shard)
        entry["shards"] = shards
        slowest = max(shards, key=lambda shard: shard.get("death_to_resume", -1.0))
        entry.update({key: value for key, value in slowest.items() if key in TIMINGS or key == "phases"})
        entry["slowest_shard"] = slowest["victim"]

    def _wait_resumed(self, entry: dict, incarnation: str, died_at: float) -> None:
        target = self.target

        def resumed():
            return first_outputs(target, incarnation) or adopted_empty(target, incarnation)

        try:
            wait_until(resumed, RESUME_PATIENCE, f"delivery from the adopted shard {incarnation}")
        except ServiceError:
            # Slow to resume: every node prints its stacks now, while it waits, so that
            # the round's log shows on what (then the usual deadline applies).
            target.dump_stacks()
            entry["stacks_dumped_at"] = round(time.time() - died_at, 1)
            wait_until(resumed, RESUME_DEADLINE, f"delivery from the adopted shard {incarnation}")
        if not first_outputs(target, incarnation):
            # The victim drained its backlog before it died (an expiry whose first
            # attach failed took seconds): nothing to resume, no resume time.
            entry["nothing_to_resume"] = True

    def _new_duplicates(self) -> int:
        """Ids the sink shows delivered twice that no earlier round had seen."""
        now = set(self.target.sink_duplicates())
        new = now - self._duplicates_seen
        self._duplicates_seen |= now
        return len(new)


def protocol_check(target: DrillTarget) -> dict:
    """The protocol's invariants (`cluster.core.validation`) over one snapshot of the
    cluster, after a round: `violations`, one line for each rule broken (any fails the
    drill: `report.passed`), and `protocol_check_s`, what the read and the check took."""
    started = time.monotonic()
    found = validate_cluster(target.cluster_view())
    return {
        "violations": [str(violation) for violation in found],
        "protocol_check_s": round(time.monotonic() - started, 3),
    }


# -- the failovers: inject, then wait until the victim's shard moved and it rejoined ---
def _kill(target, entry, victim, incarnation, leader) -> None:
    target.kill(victim)
    wait_moved(target, incarnation)
    target.restart(victim)


def _stop(target, entry, victim, incarnation, leader) -> None:
    pauses_before = len(target.logged(victim, STOOD_STILL))
    target.pause(victim)
    wait_moved(target, incarnation)
    target.resume(victim)
    wait_until(
        lambda: target.events(victim, NodeEvent.DEAD, incarnation=incarnation), 60, f"{incarnation} to report its death"
    )
    # The node's pause monitor says it stood still (cluster.node.pause_monitor).
    wait_until(lambda: len(target.logged(victim, STOOD_STILL)) > pauses_before, 30, f"{victim} to log its pause")
    wait_rejoined(target, victim, incarnation)
    entry["zombie"] = [
        e["event"]
        for e in target.events(victim, NodeEvent.REJECTED_WRITE, shard=incarnation)
        + target.events(victim, NodeEvent.FENCED, shard=incarnation)
    ] or "stopped before writing"
    # A zombie that publishes to Kafka: its producer was fenced by the adopter's, if it
    # tried the broker before it stopped (its commit gate may have refused first).
    fenced = [line for line in target.logged(victim, PRODUCER_FENCED) if incarnation in line]
    if fenced:
        entry["producer_fenced"] = fenced[0][-300:]


def _expire(target, entry, victim, incarnation, leader) -> None:
    # Timed from the attempt that ended the session: attaching to it can move it back
    # to the node's own connection, and the close then ends nothing (tried again).
    entry["phases"]["fault_at"] = round(target.expire_session(victim), 3)
    wait_moved(target, incarnation)
    wait_rejoined(target, victim, incarnation)


def _leader(target, entry, victim, incarnation, leader) -> None:
    target.kill(victim)
    wait_until(lambda: target.plan(incarnation) is not None, 60, f"a plan for {incarnation}")
    restarted = [victim]
    if leader is not None and leader != victim:
        entry["leader_killed"] = target.incarnation(leader)
        target.kill(leader)
        restarted.append(leader)
    wait_moved(target, incarnation)
    target.restart(*restarted)


def _adopter(target, entry, victim, incarnation, leader) -> None:
    target.kill(victim)
    chosen = wait_given_out(target, incarnation)
    adopter = name_of(target, chosen)
    target.kill(adopter)
    entry["adopter_killed"] = chosen
    note_adoption_ended_first(target, entry, incarnation, chosen)
    wait_moved(target, incarnation)
    wait_moved(target, chosen)
    target.restart(victim, adopter)


def _partition(target, entry, victim, incarnation, leader) -> None:
    """A network partition, in the phase the round names (`PARTITION_PHASES`):
    running: the victim, working, is cut off; leader: the leader is; adopting: the
    victim is killed and the survivor chosen to adopt its shard is cut off while it
    adopts; joining: the victim is killed and, started again, cut off as it joins.
    A node cut off must stop itself (its "dead" event, or a start that fails) and,
    once healed, join again as a new incarnation with nothing of the old one running."""
    phase = entry.get("phase", "running")
    if phase == "adopting":
        target.kill(victim)
        chosen = wait_given_out(target, incarnation)
        entry["adopter_cut"] = chosen
        _cut_until_deposed(
            target,
            entry,
            name_of(target, chosen),
            chosen,
            cut=lambda: note_adoption_ended_first(target, entry, incarnation, chosen),
        )
        wait_moved(target, incarnation)
        target.restart(victim)
    elif phase == "joining":
        target.kill(victim)
        wait_moved(target, incarnation)
        launched = time.time()
        target.launch(victim)
        # Cut off the moment its new attempt reached ZooKeeper: before it could take an
        # incarnation, or while it opens it.
        wait_until(
            lambda: _since(target.events(victim, NodeEvent.CONNECTED), launched), 60, f"{victim} to reach ZooKeeper"
        )
        target.partition(victim)
        try:
            # Cut off for at least two session timeouts, and until no incarnation of the
            # node is a member: one it took before the cut has expired on the servers.
            hold_until = time.time() + 2 * target.session_timeout
            wait_until(
                lambda: (
                    time.time() >= hold_until and not any(beat.node == victim for beat in target.heartbeats().values())
                ),
                90,
                f"{victim}, cut off while joining, to be no member of the cluster",
            )
        finally:
            target.heal()
        wait_rejoined(target, victim, incarnation)
        gave_up = _since(
            target.events(victim, NodeEvent.START_FAILED) + target.events(victim, NodeEvent.DEAD), launched
        )
        entry["deposed"] = (
            "; ".join(f"{e['event']}: {e.get('error') or e.get('reason', '')}"[:160] for e in gave_up)
            or "joined after the partition healed"
        )
    else:
        _cut_until_deposed(target, entry, victim, incarnation)


def _cut_until_deposed(target, entry, name: str, incarnation: str, cut: Callable[[], None] = lambda: None) -> None:
    """Cut `name` off until its shard moved to a survivor, heal, then wait until it
    found itself deposed (its "dead" event: its session guard's stop, or "you are
    dead" once it reached ZooKeeper again) and joined again as a new incarnation.
    Its shard moved only once its session had expired, which its own guard times no
    later than the servers: its death was decided while it was cut off, and is
    reported at most `DEATH_AFTER_HEAL_S` after the heal (`death_after_heal`: 0 when it
    was reported before)."""
    target.partition(name)
    cut()
    try:
        wait_moved(target, incarnation)
    finally:
        target.heal()
        healed = time.time()
    death = wait_until(
        lambda: target.events(name, NodeEvent.DEAD, incarnation=incarnation),
        DEATH_AFTER_HEAL_S,
        f"{incarnation}, cut off and healed, to report its death",
    )
    entry["deposed"] = death[-1].get("reason", "")[:200]
    entry["death_after_heal"] = round(max(0.0, death[-1].get("at", healed) - healed), 3)
    wait_rejoined(target, name, incarnation)
    entry["zombie"] = [
        e["event"]
        for e in target.events(name, NodeEvent.REJECTED_WRITE, shard=incarnation)
        + target.events(name, NodeEvent.FENCED, shard=incarnation)
    ] or "stopped before writing"


def _kill_on_slow_hdfs(target, entry, victim, incarnation, leader) -> None:
    """The victim SIGKILLed while every DataNode stalls (`DataNodeStalls`, from a stall
    before the death), then started again: the fencing, the adoption and the victim's start again, all on an HDFS slow
    everywhere, where a start makes every file new. The stalls go on until the new
    incarnation has delivered a FlowFile of its own, and for `SLOW_HDFS_SECONDS` at
    least; `started_again_after` is seconds from its restart (the start of the process)
    to that delivery, `stalled` how the DataNodes stalled. (A whole cluster started on
    such an HDFS collapsed under fixed deadlines and hedge delays,
    `replication.pipeline_suspicion`; one node started again, as here, did not.)"""
    stalls = DataNodeStalls(target).start()
    began = time.time()
    try:
        entry["phases"]["fault_at"] = round(time.time(), 3)  # the first stall is on
        target.kill(victim)
        wait_moved(target, incarnation)
        restarted = time.time()
        target.restart(victim)

        def delivering() -> bool:
            new = target.incarnation(victim)
            return new not in (None, incarnation) and bool(
                [e for e in target.events(victim, NodeEvent.FIRST_OUTPUT, shard=new) if e.get("home")]
            )

        wait_until(delivering, MOVE_DEADLINE, f"{victim}, started again on a slow HDFS, to deliver a FlowFile")
        entry["started_again_after"] = round(time.time() - restarted, 2)
        time.sleep(max(0.0, began + SLOW_HDFS_SECONDS - time.time()))  # the fault's length, at least
    finally:
        stalls.stop()
    entry["stalled"] = stalls.down


def _since(events: list[dict], moment: float) -> list[dict]:
    return [e for e in events if e["at"] >= moment]


FAILOVERS = {
    "kill": _kill,
    "stop": _stop,
    "expire": _expire,
    "leader": _leader,
    "adopter": _adopter,
    "partition": _partition,
    "slow-hdfs-kill": _kill_on_slow_hdfs,
}


# -- what a round waits on and measures ------------------------------------------------
def pick_victim(target: DrillTarget, leader: str | None) -> tuple[str, str, int, bool | str]:
    """The non-leader with the largest backlog: (its name, its incarnation, what it had
    queued when seen, whether it was restarted on purpose first: True; "stop hung" when
    its graceful stop hung and it was killed). If no node has a backlog, the workload is
    given more: a workload fed from outside (the Kafka workload's producer) is sent
    another feed (`DrillTarget.more_work`) and the backlog awaited; otherwise (each
    incarnation made all its FlowFiles and delivered them) the one that joined first is
    restarted (it leaves, its shard is handed over, it joins as a new incarnation that
    makes more; queued 0: its backlog is still to be awaited), so that every failover
    round measures the resume of a real backlog.

    The incarnation and the count are those read together: an incarnation that has made
    all its FlowFiles drains a backlog of a few hundred in seconds, and a second look
    (the compose target reads a node's events through docker, in a second or so) may
    find it below the threshold for good."""
    candidates = [name for name in target.names if name != leader] or list(target.names)

    def best_with_backlog():
        incarnations = {name: target.incarnation(name) for name in candidates}
        queued = {name: target.queued(incarnation) if incarnation else 0 for name, incarnation in incarnations.items()}
        best = max(candidates, key=lambda name: (queued[name], name))
        return (best, incarnations[best], queued[best], False) if queued[best] > BACKLOG else None

    try:  # a node that has just joined is still making its FlowFiles
        return wait_until(best_with_backlog, 3.0, "a node with a backlog")
    except ServiceError:
        pass
    if target.more_work():
        # Its partitions may be moving between shards (a node rejoined): they settle in seconds.
        return wait_until(best_with_backlog, 60, f"a node other than the leader to queue more than {BACKLOG}")
    best = min(candidates, key=lambda name: target.events(name, NodeEvent.JOINED)[-1]["at"])  # made all its FlowFiles
    left = True if target.graceful_restart(best) else "stop hung"
    incarnation = target.incarnation(best)
    if incarnation is None:
        raise ServiceError(f"{best} restarted but names no incarnation")
    return best, incarnation, 0, left


def wait_backlog(target: DrillTarget, incarnation: str) -> int:
    """The victim must die with FlowFiles queued (and swapped): resume is measured."""
    return wait_until(
        lambda: (n := target.queued(incarnation)) > BACKLOG and n,
        60,
        f"{incarnation} to queue more than {BACKLOG} FlowFiles",
    )


def wait_given_out(target: DrillTarget, incarnation: str) -> str:
    """The survivor the leader gave the dead incarnation's shard to: adopting it, or
    (an adoption takes well under a second, and a loaded machine's drill can see it
    only after it ended) already its owner (`note_adoption_ended_first` tells which)."""
    return wait_until(
        lambda: (
            (s := target.shard(incarnation)) is not None
            and s.owner != incarnation
            and s.state in (ShardState.ADOPTING, ShardState.DRAINING, ShardState.RETIRED)
            and s.owner
        ),
        60,
        f"{incarnation} to be given out",
    )


def note_adoption_ended_first(target: DrillTarget, entry: dict, incarnation: str, adopter: str) -> None:
    """Called once a fault meant for `adopter` mid-adoption is in: if the shard's
    history shows the adoption ended (by then: counted as before the fault, which a
    docker call injects at a moment within it), the round says so
    (`adoption_ended_first`: how long before) and counts as a fault to an owner just
    after its adoption, not during it."""
    now = time.time()
    shard = target.shard(incarnation)
    ended = [
        h.at
        for h in (shard.history if shard is not None else ())
        if h.state is ShardState.DRAINING and h.owner == adopter
    ]
    if ended:
        entry["adoption_ended_first"] = round(max(0.0, now - min(ended)), 3)


def wait_moved(target: DrillTarget, incarnation: str):
    return wait_until(
        lambda: (
            (s := target.shard(incarnation)) is not None
            and s.owner not in (None, incarnation)
            and s.state in (ShardState.DRAINING, ShardState.RETIRED)
        ),
        MOVE_DEADLINE,
        f"shard {incarnation} to be adopted",
    )


def wait_rejoined(target: DrillTarget, name: str, incarnation: str, timeout: float = 90.0) -> None:
    wait_until(
        lambda: target.incarnation(name) not in (None, incarnation),
        timeout,
        f"{name} to rejoin as a new incarnation after {incarnation}",
    )


def name_of(target: DrillTarget, incarnation: str) -> str:
    """The node an incarnation `<name>-<epoch>` runs on. (Not from its "joined" event:
    the leader may hand it a shard before the node has written that event.)"""
    name = incarnation.rsplit("-", 1)[0]
    if name not in target.names:
        raise ServiceError(f"incarnation {incarnation} runs on no node of the drill ({', '.join(target.names)})")
    return name


def first_outputs(target: DrillTarget, shard: str) -> list[float]:
    """When each node first delivered from `shard` as its adopter."""
    return [
        e["at"]
        for name in target.names
        for e in target.events(name, NodeEvent.FIRST_OUTPUT, shard=shard)
        if not e.get("home")
    ]


def adopted_empty(target: DrillTarget, shard: str) -> bool:
    """The shard was recovered by an adopter and held no FlowFile (its WAL may still
    hold processor state or provenance not yet registered)."""
    recovered = [
        e for name in target.names for e in target.events(name, NodeEvent.RECOVERED, shard=shard) if not e.get("home")
    ]
    return bool(recovered) and all(e["flowfiles"] + e["swapped_flowfiles"] == 0 for e in recovered)


def timings(target: DrillTarget, incarnation: str, died_at: float) -> dict:
    """detection, takeover, resume, death_to_resume (seconds) as far as they happened,
    and `phases`: the moments themselves (wall clock)."""
    plan = target.plan(incarnation)
    shard = target.shard(incarnation)
    figures: dict = {"phases": {"fault_at": round(died_at, 3)}}
    if plan is not None:
        figures["detection"] = plan.created_at - died_at
        figures["phases"]["plan_at"] = round(plan.created_at, 3)
    adopted = [h.at for h in shard.history if h.state is ShardState.DRAINING] if shard else []
    if plan is not None and adopted:
        figures["takeover"] = min(adopted) - plan.created_at
        figures["phases"]["adopted_at"] = round(min(adopted), 3)
        outputs = [at for at in first_outputs(target, incarnation) if at >= min(adopted) - 1.0]
        if outputs:
            figures["resume"] = min(outputs) - min(adopted)
            figures["death_to_resume"] = min(outputs) - died_at
            figures["phases"]["resumed_at"] = round(min(outputs), 3)
    return figures


def no_failover_round(target: DrillTarget, inject, heal, what: str) -> dict:
    """A fault the cluster must ride out: no incarnation crashes, delivery goes on.

    A node may still lose its ZooKeeper session meanwhile, on a loaded machine (two
    cores, two drills, a DataNode restarting): ZooKeeper left it without an answer for
    a whole session timeout and it stopped itself, as it must. That is a failover of
    its own: it is recorded, waited through (its shard adopted, the node back as a new
    incarnation) and covered by the exactly-once checks, but any other death fails
    the round (ServiceError)."""
    members = {name: target.incarnation(name) for name in target.names}
    delivered_before = target.delivered()
    started = time.time()
    out: dict = {"phases": {"fault_at": round(started, 3)}}
    out["down"] = inject()
    try:
        wait_until(lambda: target.delivered() > delivered_before + 20, 90, f"delivery to go on with {what}")
        went_on = time.time() - started
    finally:
        heal()
        out["phases"]["healed_at"] = round(time.time(), 3)
    out.update(delivered_meanwhile=target.delivered() - delivered_before, twenty_delivered_after=round(went_on, 2))
    out.update(_ridden_out(target, members, started, what))
    return out


def load_round(target: DrillTarget, victim: str, seconds: float) -> dict:
    """Every core kept busy for `seconds` (`LOAD_SECONDS` by default) from outside the
    cluster (`CpuLoad`), and meanwhile `victim` stalled `LOAD_STALLS` times for
    `LOAD_STALL_S` in a row: a cluster that is slow, with a node that stands still for
    moments, is not a cluster with a dead node. Nothing may fail over (no death, no
    plan, no incarnation changed: `nothing_failed_over`, stricter than a service fault,
    where a lost session is tolerated) and delivery goes on under the load
    (`twenty_delivered_after`: seconds from the start until twenty more were delivered)."""
    members = {name: target.incarnation(name) for name in target.names}
    delivered_before = target.delivered()
    started = time.time()
    out: dict = {"phases": {"fault_at": round(started, 3)}}
    went_on: float | None = None

    def twenty_more() -> float | None:
        return time.time() - started if target.delivered() > delivered_before + 20 else None

    with CpuLoad() as load:
        out["down"] = f"every core ({load.count}) busy; {victim} stalled {LOAD_STALLS} x {LOAD_STALL_S:g}s"
        for _ in range(LOAD_STALLS):
            target.pause(victim)
            try:
                time.sleep(LOAD_STALL_S)  # the stall itself: how long the node stands still
            finally:
                target.resume(victim)
            time.sleep(LOAD_RUN_S)  # the node runs between two stalls
            went_on = went_on or twenty_more()
        went_on = went_on or wait_until(twenty_more, 90, "delivery to go on under load")
        time.sleep(max(0.0, started + seconds - time.time()))  # the load itself: how long the cores stay busy
        delivered_under_load = target.delivered() - delivered_before
    out["phases"]["healed_at"] = round(time.time(), 3)
    out.update(delivered_meanwhile=delivered_under_load, twenty_delivered_after=round(went_on, 2))
    nothing_failed_over(target, members, started, "every core busy and a node stalling")
    return out


class DataNodeStalls:
    """Every DataNode stopped `SLOW_HDFS_STOP_S`, then running `SLOW_HDFS_RUN_S`, in
    turn, on a thread of its own from `start` until `stop`, which ends the stall in
    progress (the DataNodes are left running) and raises what kept the thread from
    stalling them. `start` returns once the first stall is on, so that what the round
    does next (a kill) happens on a stalled HDFS, or raises what kept it from
    beginning. `down` says what is stalled."""

    def __init__(self, target: DrillTarget):
        self.target = target
        self.down = ""
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._first = threading.Event()  # the first stall is on, or could not begin
        self._thread = threading.Thread(target=self._run, name="drill-slow-hdfs", daemon=True)

    def start(self) -> DataNodeStalls:
        self._thread.start()
        if not self._first.wait(STALL_START_DEADLINE):
            self._stop.set()  # the thread ends once its pause returns, if ever
            raise ServiceError(f"the DataNodes were not stalled within {STALL_START_DEADLINE:g}s")
        if self.error is not None:
            self.stop()  # raises what kept the first stall from beginning
        return self

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                stopped = self.target.pause_datanodes()
                self.down = f"{stopped} stopped {SLOW_HDFS_STOP_S:g}s of every {SLOW_HDFS_STOP_S + SLOW_HDFS_RUN_S:g}s"
                self._first.set()
                try:
                    time.sleep(SLOW_HDFS_STOP_S)  # the stall itself: how long the DataNodes stand still
                finally:
                    self.target.resume_datanodes()
                self._stop.wait(SLOW_HDFS_RUN_S)  # they run between two stalls
        except BaseException as error:  # noqa: BLE001 - raised by `stop`, in the round
            self.error = error
        finally:
            self._first.set()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        if self.error is not None:
            raise ServiceError(f"the DataNodes could not be stalled: {self.error}") from self.error


def slow_hdfs_round(target: DrillTarget) -> dict:
    """Every DataNode stalled half of every second for `SLOW_HDFS_SECONDS`
    (`DataNodeStalls`): an HDFS slow everywhere, which a node must not take for dead
    DataNodes (it would give up and hedge its files, each as slow:
    `replication.pipeline_suspicion`). Nothing fails over but for lost sessions
    (`_ridden_out`), and delivery goes on through it: `delivered_meanwhile` is what was
    delivered while HDFS was slow, the drill's figure of how well the nodes ride it out;
    `twenty_delivered_after`, seconds from the start until twenty more were delivered."""
    members = {name: target.incarnation(name) for name in target.names}
    delivered_before = target.delivered()
    started = time.time()
    out: dict = {"phases": {"fault_at": round(started, 3)}}
    went_on: float | None = None
    stalls = DataNodeStalls(target).start()
    try:
        try:
            wait_until(lambda: target.delivered() > delivered_before + 20, SLOW_HDFS_SECONDS, "delivery on a slow HDFS")
            went_on = time.time() - started
        except ServiceError:
            pass  # not while HDFS was slow: awaited once it is fast again, below
        time.sleep(max(0.0, started + SLOW_HDFS_SECONDS - time.time()))  # the fault's length
    finally:
        stalls.stop()
    out["down"] = stalls.down
    out["phases"]["healed_at"] = round(time.time(), 3)
    out["delivered_meanwhile"] = target.delivered() - delivered_before
    if went_on is None:
        wait_until(lambda: target.delivered() > delivered_before + 20, 90, "delivery to go on once HDFS is fast again")
        went_on = time.time() - started
    out["twenty_delivered_after"] = round(went_on, 2)
    out.update(_ridden_out(target, members, started, "every DataNode stalling"))
    return out


def nothing_failed_over(target: DrillTarget, members: dict, started: float, what: str) -> None:
    """Raise ServiceError if any failover started since `started`: an incarnation of
    `members` ({name: incarnation}) died, has a failover plan, or was replaced."""
    deaths = [e for name in target.names for e in target.events(name, NodeEvent.DEAD) if e["at"] > started]
    planned = [incarnation for incarnation in members.values() if incarnation and target.plan(incarnation)]
    now = {name: target.incarnation(name) for name in target.names}
    if deaths or planned or now != members:
        raise ServiceError(
            f"a failover started with {what}, where none may: deaths {deaths}, plans for {planned}, "
            f"incarnations {members} -> {now}"
        )


def outage_round(target: DrillTarget, inject, heal, what: str) -> dict:
    """A service the flow cannot work without (the Kafka broker) goes down for
    `BROKER_OUTAGE_S` and comes back: nothing fails over, nothing is lost, and delivery
    goes on once it is back (`twenty_delivered_after`: seconds from its return until 20
    more were delivered). Deaths are accounted as in `no_failover_round`."""
    members = {name: target.incarnation(name) for name in target.names}
    started = time.time()
    out: dict = {"phases": {"fault_at": round(started, 3)}}
    out["down"] = inject()
    try:
        delivered_down = target.delivered()
        time.sleep(BROKER_OUTAGE_S)  # the outage itself: how long the service stays down
    finally:
        heal()
        healed = time.time()
        out["phases"]["healed_at"] = round(healed, 3)
    delivered_before = target.delivered()
    wait_until(lambda: target.delivered() > delivered_before + 20, 90, f"delivery to go on after {what} came back")
    out.update(
        delivered_meanwhile=delivered_before - delivered_down,
        twenty_delivered_after=round(time.time() - healed, 2),
    )
    out.update(_ridden_out(target, members, started, f"{what} down"))
    return out


def _ridden_out(target: DrillTarget, members: dict, started: float, what: str) -> dict:
    """After a fault that must fail nothing over: only lost sessions may have ended an
    incarnation (each waited through: its shard adopted, the node back); any other
    death, or an incarnation changed otherwise, raises ServiceError."""
    out: dict = {}
    deaths = [e for name in target.names for e in target.events(name, NodeEvent.DEAD) if e["at"] > started]
    others = [death for death in deaths if "expir" not in death["reason"]]
    if others:
        raise ServiceError(f"nodes died with {what}, where nothing may fail over: {others}")
    for death in deaths:
        gone = death["incarnation"]
        name = next(name for name, incarnation in members.items() if incarnation == gone)
        wait_moved(target, gone)
        wait_rejoined(target, name, gone)
        out.setdefault("sessions_lost", []).append({"incarnation": gone, "reason": death["reason"]})
    lost = {death["incarnation"] for death in deaths}
    now = {name: target.incarnation(name) for name in target.names if members[name] not in lost}
    if now != {name: incarnation for name, incarnation in members.items() if incarnation not in lost}:
        raise ServiceError(f"an incarnation changed with {what}, where nothing may fail over: {members} -> {now}")
    return out
