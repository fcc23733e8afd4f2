"""A member's side of a failover, on the in-memory ZooKeeper (`tests.fakes`): real
`ClusterMember`s, started as a node starts them (their session guard, heartbeat,
shard watches and adoption thread run), over the product's store and registries,
and the leader's `step` moving a dead incarnation's shard. What stands in: the
shard's runtime (`ScriptedRuntime`: the flow engine and its WAL recovery, whose
failures it raises as scripted), and HDFS, which is local disk here (fencing renames
and recovers leases on it as it does on HDFS).

The member's clock stands still: its session guard (not under test here) would
otherwise close the work gate whenever the fake's session went unconfirmed for a
while, and an attempt would fail by chance. The tests wait for what the member's
threads do with `wait_until`, never with a sleep."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

import pytest

from cluster.core.layout import ClusterLayout
from cluster.core.ownership import ShardState
from cluster.core.plans import Move
from cluster.core.validation import validate_cluster
from cluster.failover.instruments import ADOPTED, FENCED, HELD, RETRIED
from cluster.failover.leader import Leader
from cluster.failover.member import ClusterMember, MemberConfig
from cluster.services.process import wait_until
from cluster.zk.view import read_cluster_view
from flow.errors import QueueRecoveryError
from repositories.flowfile import Damage, WalDamagedError
from repositories.provenance import RepositoryClosedError
from repositories.storage import LocalStorage
from tests.fakes.cluster_store import join
from tests.fakes.zookeeper import FakeZooKeeper

WAIT = 10.0  # seconds the member's threads get to do what a test waits for


class FakeClients:
    """The node's client factory (`cluster.clients.ClientFactory`), as far as a
    member asks it: each member a session of its own on `zookeeper`."""

    def __init__(self, zookeeper: FakeZooKeeper):
        self.zookeeper = zookeeper

    def start_zookeeper(self, timeout: float):
        return self.zookeeper.session()


class ScriptedRuntime:
    """A shard's runtime (`cluster.failover.runtime.ShardRuntime`) whose `recover` raises
    the next error of its factory's script, if any is left; it never drains."""

    def __init__(self, handle, failures: list[Exception]):
        self.handle, self._failures = handle, failures
        self.recovered = self.started = self.stopped = False

    def recover(self) -> None:
        if self._failures:
            raise self._failures.pop(0)
        self.recovered = True

    def start(self) -> None:
        self.started = True

    def stop(self) -> None:
        self.stopped = True

    def drained(self) -> bool:
        return False

    def load(self) -> dict:
        return {}

    def active_threads(self) -> int:
        return 0

    def pause(self) -> None: ...

    def resume(self) -> None: ...

    def abort_open_sessions(self) -> None: ...


@dataclass
class Runtimes:
    """The runtime factory of one member: every runtime it made, by shard, and the
    errors the adopted shards' recoveries raise, in order."""

    failures: list[Exception] = field(default_factory=list)
    made: dict[str, list[ScriptedRuntime]] = field(default_factory=dict)

    def __call__(self, handle) -> ScriptedRuntime:
        runtime = ScriptedRuntime(handle, [] if handle.home else self.failures)
        self.made.setdefault(handle.shard, []).append(runtime)
        return runtime


@dataclass
class Cluster:
    """What a test runs: the in-memory ZooKeeper, local disk under `root` standing for
    HDFS, and the members it started (stopped after the test)."""

    zookeeper: FakeZooKeeper
    root: str
    storage: LocalStorage = field(default_factory=LocalStorage)
    members: list[ClusterMember] = field(default_factory=list)

    @property
    def layout(self) -> ClusterLayout:
        return ClusterLayout("c1", self.root)

    def start_member(
        self, node: str, runtimes: Runtimes, *, weight: float = 1.0, on_fencing=None, on_leases_asked=None
    ) -> ClusterMember:
        config = MemberConfig(
            zk_hosts="fake",
            cluster="c1",
            node=node,
            hdfs_root=self.root,
            local_directory=self.root,
            capacity_weight=weight,
            lead=False,  # the test leads, one `step` at a time
            heartbeat_interval=0.05,
            held_recheck=0.05,
        )
        member = ClusterMember(
            config,
            self.storage,
            runtimes,
            clients=FakeClients(self.zookeeper),
            clock=lambda: 0.0,
            on_fencing=on_fencing,
            on_leases_asked=on_leases_asked,
        )
        self.members.append(member)
        member.start()
        return member

    def dead_owner(self, node: str) -> tuple[str, int]:
        """An incarnation that wrote one WAL file to its home shard, then died (its
        session expired): (its shard, the shard's epoch)."""
        store, victim = join(self.zookeeper, node)
        directory = self.layout.shard_directory(victim)
        self.storage.mkdir(f"{directory}/wal", parents=True)
        with self.storage.create(f"{directory}/wal/journal-0") as journal:
            journal.write(b"frames")
            journal.sync()
        store.client.expire()
        return victim, store.shards.read(victim)[0].epoch

    def leader(self, member: ClusterMember) -> Leader:
        return Leader(member.store, member.incarnation.id, collect_interval=0)


@pytest.fixture
def cluster(tmp_path):
    cluster = Cluster(FakeZooKeeper(), str(tmp_path))
    yield cluster
    for member in cluster.members:
        member.stop(leave=False)


def shard_of(member: ClusterMember, shard: str):
    return member.registry.read(shard)[0]


def outcomes(member: ClusterMember) -> dict[str, int]:
    """Attempts at adopting a shard, by how each ended (`FailoverInstruments.adoptions`)."""
    return {name: member.instruments.adoptions.of(name).snapshot() for name in (ADOPTED, FENCED, HELD, RETRIED)}


def test_a_plan_naming_this_member_moves_the_shard_here_and_the_member_adopts_it(cluster):
    runtimes = Runtimes()
    member = cluster.start_member("n2", runtimes)
    me = member.incarnation.id
    victim, epoch = cluster.dead_owner("n1")
    leader = cluster.leader(member)

    leader.step()
    plan = leader.plans.read(victim)[0]
    assert [(move.shard, move.from_epoch, move.to) for move in plan.moves] == [(victim, epoch, me)]
    # Counted once the shard runs here: marked adopted, its runtime started.
    wait_until(lambda: outcomes(member)[ADOPTED] == 1, WAIT, f"{victim} adopted")

    shard = shard_of(member, victim)
    assert (shard.owner, shard.epoch, shard.state) == (me, epoch + 1, ShardState.DRAINING)
    assert [(entry.state, entry.owner, entry.epoch) for entry in shard.history] == [
        (ShardState.ACTIVE, victim, epoch),
        (ShardState.ADOPTING, me, epoch + 1),
        (ShardState.DRAINING, me, epoch + 1),
    ]
    # Fenced at the new epoch before its runtime read it, then recovered and run here.
    fenced = cluster.layout.fenced_directory(victim, epoch + 1)
    assert cluster.storage.exists(f"{fenced}/wal/journal-0")
    assert not cluster.storage.exists(cluster.layout.shard_directory(victim))
    [runtime] = runtimes.made[victim]
    assert runtime.handle.directory == fenced and runtime.recovered and runtime.started and not runtime.stopped
    assert victim in member.owned_shards()
    assert outcomes(member) == {ADOPTED: 1, FENCED: 0, HELD: 0, RETRIED: 0}
    leader.step()
    assert leader.plans.read(victim)[0].status == "done"
    assert validate_cluster(read_cluster_view(member.store)) == []


class LeasesAsked(LocalStorage):
    """Local disk that records each file whose lease was asked for."""

    def __init__(self):
        super().__init__()
        self.asked: list[str] = []

    def recover_lease(self, path):
        self.asked.append(path)
        return super().recover_lease(path)


def test_the_member_is_told_once_the_fence_asked_for_the_shards_leases_and_before_it_recovers(cluster):
    """What a node asks HDFS to recover beside an adoption (the dead owner's content
    files) queues behind the shard's own files on the DataNodes: the member tells it
    only once the fence has asked for each of them, and before the shard's recovery."""
    cluster.storage = LeasesAsked()
    told = []
    runtimes = Runtimes()

    def leases_asked(ownership):
        told.append((ownership.shard, ownership.epoch, list(cluster.storage.asked), ownership.shard in runtimes.made))

    member = cluster.start_member("n2", runtimes, on_leases_asked=leases_asked)
    victim, epoch = cluster.dead_owner("n1")

    cluster.leader(member).step()
    wait_until(lambda: outcomes(member)[ADOPTED] == 1, WAIT, f"{victim} adopted")
    fenced_journal = f"{cluster.layout.fenced_directory(victim, epoch + 1)}/wal/journal-0"
    assert told == [(victim, epoch + 1, [fenced_journal], False)]


def test_a_plan_for_another_member_is_ignored(cluster):
    bystander_runtimes = Runtimes()
    bystander = cluster.start_member("n2", bystander_runtimes)
    chosen = cluster.start_member("n3", Runtimes(), weight=10.0)
    victim, epoch = cluster.dead_owner("n1")

    cluster.leader(bystander).step()
    wait_until(lambda: outcomes(chosen)[ADOPTED] == 1, WAIT, f"{victim} adopted by n3")

    shard = shard_of(chosen, victim)
    assert (shard.owner, shard.epoch, shard.state) == (chosen.incarnation.id, epoch + 1, ShardState.DRAINING)
    # The bystander's watch saw every change of the shard (on the thread that made it),
    # and took none for its own: it made no runtime, and counted no attempt.
    assert bystander.timeline.adopting_seen == {}
    assert set(bystander_runtimes.made) == {bystander.incarnation.id}
    assert bystander.owned_shards() == (bystander.incarnation.id,)
    assert outcomes(bystander) == {ADOPTED: 0, FENCED: 0, HELD: 0, RETRIED: 0}


def test_an_adoption_at_an_epoch_that_moved_on_is_refused_and_the_shard_left_to_its_new_owner(cluster):
    """The move to this member is superseded while it fences (a later plan gave the
    shard to n9 at the next epoch): its compare-and-set at the old epoch, the commit
    point, is refused as stale, and nothing of the shard runs here."""
    moved_on = []

    def superseded(ownership):
        store = cluster.members[0].store
        moved_on.extend(store.shards.move(Move(ownership.shard, ownership.owner, ownership.epoch, "n9-99")))

    runtimes = Runtimes()
    member = cluster.start_member("n2", runtimes, on_fencing=superseded)
    victim, epoch = cluster.dead_owner("n1")

    cluster.leader(member).step()
    wait_until(lambda: outcomes(member)[FENCED] == 1, WAIT, f"the adoption of {victim} refused")

    shard = shard_of(member, victim)
    assert (shard.owner, shard.epoch, shard.state) == ("n9-99", epoch + 2, ShardState.ADOPTING)
    assert shard == moved_on[0]  # the member wrote nothing after the move it lost to
    [runtime] = runtimes.made[victim]
    assert runtime.recovered and not runtime.started and runtime.stopped
    assert victim not in member.owned_shards()
    assert outcomes(member) == {ADOPTED: 0, FENCED: 1, HELD: 0, RETRIED: 0}


def test_an_adoption_that_fails_is_held_with_its_reason_and_rechecked_until_it_opens(cluster):
    """Its flow lacks a queue of the shard: held with that reason. The first recheck
    fails the same way (nothing is written), the second for another reason (the shard
    is held again with it, so the record says why it is held now), the third opens it."""
    lacks_queue = QueueRecoveryError("the WAL holds FlowFiles of queue 'q', which this node's flow lacks")
    damaged = WalDamagedError("/c1/shards/x/wal", [Damage("/c1/shards/x/wal/journal-0", "a frame's CRC is wrong")])
    runtimes = Runtimes(failures=[lacks_queue, lacks_queue, damaged])
    member = cluster.start_member("n2", runtimes)
    me = member.incarnation.id
    victim, epoch = cluster.dead_owner("n1")

    cluster.leader(member).step()
    wait_until(lambda: outcomes(member)[ADOPTED] == 1, WAIT, f"{victim} adopted at last")

    shard = shard_of(member, victim)
    assert (shard.owner, shard.epoch) == (me, epoch + 1)
    assert [entry.state for entry in shard.history] == [
        ShardState.ACTIVE,
        ShardState.ADOPTING,
        ShardState.HELD,
        ShardState.HELD,
        ShardState.DRAINING,
    ]
    first, second = shard.history[2].reason, shard.history[3].reason
    assert first.startswith(f"held by {me}: QueueRecoveryError: the WAL holds FlowFiles of queue 'q'")
    assert second.startswith(f"held by {me}: WalDamagedError: the WAL /c1/shards/x/wal is damaged")
    assert shard.history[4].reason.startswith(f"adopted by {me} once it could be opened")
    assert [runtime.started for runtime in runtimes.made[victim]] == [False, False, False, True]
    assert outcomes(member) == {ADOPTED: 1, FENCED: 0, HELD: 1, RETRIED: 0}

    def notes():
        """The member's notes in the plan (each `[step] text`), not the leader's."""
        return [note for note in member.store.plans.read(victim)[0].notes if note.split("] ", 1)[1].startswith(me)]

    # Each note is written on a thread of its own: in whatever order they landed.
    wait_until(lambda: len(notes()) == 3, WAIT, "the plan's notes of the holds and the adoption")
    assert sorted(
        ("still holds" in note, "holds" in note, "WalDamagedError" in note, "QueueRecoveryError" in note)
        for note in notes()
    ) == [(False, False, False, False), (False, True, False, True), (True, True, True, False)]
    assert any("it could be opened at last, after 3 recheck(s)" in note for note in notes())


class _ClosedUnderIt(Runtimes):
    """Adopted shards' recoveries wait until `release`, then fail as a repository the
    stopping member closed under them does."""

    def __init__(self):
        super().__init__()
        self.entered, self.release = threading.Event(), threading.Event()

    def __call__(self, handle):
        runtime = super().__call__(handle)
        if not handle.home:
            runtimes = self

            def recover() -> None:
                runtimes.entered.set()
                runtimes.release.wait(WAIT)
                raise RepositoryClosedError("the provenance repository is closed")

            runtime.recover = recover
        return runtime


def test_a_member_that_stops_while_adopting_ends_the_attempt_without_calling_it_a_failure(cluster, caplog):
    runtimes = _ClosedUnderIt()
    member = cluster.start_member("n2", runtimes)
    victim, _ = cluster.dead_owner("n1")
    cluster.leader(member).step()
    assert runtimes.entered.wait(WAIT), f"{victim}'s adoption never began"
    stopping = threading.Thread(target=member.stop, kwargs={"leave": False})
    with caplog.at_level(logging.INFO, logger="cluster.failover.member"):
        stopping.start()
        wait_until(lambda: member._stopped.is_set(), WAIT, "the member to begin stopping")
        runtimes.release.set()
        stopping.join(WAIT)
        # The stop does not wait for the adoption worker (it only tells it to end): the
        # attempt's last word is awaited here, while its logger still records INFO.
        wait_until(lambda: not member._adopting, WAIT, f"the attempt at {victim} to end")
    assert not stopping.is_alive()
    # Neither retried nor held: the shard is left ADOPTING for its next adopter.
    assert outcomes(member) == {ADOPTED: 0, FENCED: 0, HELD: 0, RETRIED: 0}
    assert shard_of(member, victim).state is ShardState.ADOPTING
    lines = [record.getMessage() for record in caplog.records]
    assert any(f"adoption of {victim} ended: this member is stopping" in line for line in lines), lines
    assert not any("failed" in line and victim in line for line in lines), lines
