"""Membership, heartbeats, the shard registry's compare-and-set, and leadership,
on the real ZooKeeper ensemble (and HDFS for members' shards)."""

from __future__ import annotations

import threading

import pytest
from kazoo.client import KazooClient

from cluster.core import ownership as own
from cluster.core.heartbeat import Heartbeat
from cluster.core.layout import ClusterLayout
from cluster.errors import FencedError, OwnershipConflict
from cluster.failover.leader import Leader, LeaderHooks
from cluster.services.process import wait_until
from cluster.services.zookeeper import ZooKeeperEnsemble
from cluster.zk.membership import Membership, new_incarnation, read_members
from cluster.zk.plans import PlanStore
from cluster.zk.shards import ShardRegistry
from cluster.zk.store import ClusterStore
from repositories.storage import LocalStorage

pytestmark = [pytest.mark.zookeeper]
TIMEOUT = 4.0


@pytest.fixture
def clients(zk_hosts):
    made = []

    def make():
        client = KazooClient(hosts=zk_hosts, timeout=TIMEOUT)
        client.start(timeout=30)
        made.append(client)
        return client

    yield make
    for client in made:
        try:
            client.stop()
            client.close()
        except Exception:  # noqa: BLE001
            pass


def prepared_registry(client, layout) -> ShardRegistry:
    """Create the cluster's znode folders, as a member or leader does, and return its registry."""
    for path in layout.zookeeper_paths():
        client.ensure_path(path)
    return ShardRegistry(client, layout)


def join(client, layout, node, weight=1.0):
    incarnation = new_incarnation(client, layout, node)
    beat = Heartbeat(
        node, incarnation.id, incarnation.epoch, capacity_weight=weight, free_disk=100 << 30, max_threads=4
    )
    membership = Membership(client, layout, beat, interval=0.2, figures=lambda: {"active_threads": 1, "cpu": 0.25})
    membership.join()
    return incarnation, membership


def test_incarnations_get_increasing_epochs_and_heartbeats_refresh(clients):
    layout = ClusterLayout("c1")
    a, b = clients(), clients()
    inc_a, member_a = join(a, layout, "n1")
    inc_b, member_b = join(b, layout, "n2", weight=2.0)
    assert inc_b.epoch > inc_a.epoch and inc_a.id == f"n1-{inc_a.epoch}"
    member_a.start()
    try:
        observer = clients()
        members = read_members(observer, layout)
        assert set(members) == {inc_a.id, inc_b.id}
        assert members[inc_b.id].capacity_weight == 2.0 and members[inc_a.id].cpu == 0.25
        first = members[inc_a.id].sequence
        wait_until(lambda: read_members(observer, layout)[inc_a.id].sequence >= first + 3, 10, "three more heartbeats")
    finally:
        member_a.stop()


def test_a_member_with_an_unreadable_heartbeat_reads_as_alive_with_no_figures(clients, caplog):
    layout = ClusterLayout("c1")
    a, b = clients(), clients()
    inc_a, _ = join(a, layout, "n1")
    inc_b, _ = join(b, layout, "n2")
    b.set(layout.node(inc_b.id), b"{not json")
    with caplog.at_level("WARNING", logger="cluster.zk.membership"):
        members = read_members(clients(), layout)
    assert sorted(members) == sorted([inc_a.id, inc_b.id])
    assert members[inc_a.id].free_disk == 100 << 30
    # Alive, so never taken for dead; no free disk, so never chosen to adopt.
    assert members[inc_b.id].node == "n2" and members[inc_b.id].free_disk == 0
    assert [r.getMessage() for r in caplog.records if inc_b.id in r.getMessage()]


def test_heartbeat_of_an_expired_incarnation_is_refused_you_are_dead(clients):
    layout = ClusterLayout("c1")
    client = clients()
    incarnation, membership = join(client, layout, "n1")
    ZooKeeperEnsemble.expire_session(client)
    wait_until(lambda: client.connected, 30, "kazoo to open a new session")
    with pytest.raises(FencedError, match="you are dead"):
        membership.beat()
    # The dead incarnation's znode is gone for good and was not re-created.
    assert clients().exists(layout.node(incarnation.id)) is None


def test_shard_compare_and_set_refuses_stale_versions_epochs_and_incarnations(clients):
    layout = ClusterLayout("c1")
    client = clients()
    registry = prepared_registry(client, layout)
    registry.create_home_shard("n1-3", "n1-3", 3)
    with pytest.raises(OwnershipConflict):
        registry.create_home_shard("n1-3", "n1-3", 3)
    _, version = registry.read("n1-3")
    # A leader that read the shard at this version moves it...
    registry.transition("n1-3", lambda c: own.reassign(c, "n2-4", expected_epoch=3, at=1.0), expected_version=version)
    # ...and a second leader acting on the same read loses: the version moved on.
    with pytest.raises(OwnershipConflict):
        registry.transition(
            "n1-3", lambda c: own.reassign(c, "n3-5", expected_epoch=3, at=1.0), expected_version=version
        )
    # A plan made at the old epoch is refused even with a fresh read.
    with pytest.raises(FencedError, match="planned at epoch 3, now at 4"):
        registry.transition("n1-3", lambda c: own.reassign(c, "n3-5", expected_epoch=3, at=1.0))
    # The old owner's claims are answered "you are dead".
    with pytest.raises(FencedError, match="you are dead") as caught:
        registry.claim("n1-3", "n1-3", 3)
    assert (caught.value.shard, caught.value.epoch, caught.value.by_owner) == ("n1-3", 4, "n2-4")
    with pytest.raises(FencedError):
        registry.mark_adopted("n1-3", "n1-3", 4)
    adopted = registry.mark_adopted("n1-3", "n2-4", 4)
    assert adopted.state is own.ShardState.DRAINING
    # A racing writer between read and commit: the transaction's check fails.
    current, version = registry.read("n1-3")
    client.set(layout.shard("n1-3"), current.to_json())
    with pytest.raises(OwnershipConflict):
        registry.compare_and_set("n1-3", version, own.retire(current, "n2-4", 4, at=2.0))
    assert registry.read("n1-3")[0].state is own.ShardState.DRAINING


def test_leadership_moves_on_session_expiry_and_the_new_leader_finishes_a_half_done_plan(clients):
    layout = ClusterLayout("c1")
    admin = clients()
    registry = prepared_registry(admin, layout)
    # A dead node d-1 left two shards: its home shard and one it had adopted.
    registry.create_home_shard("d-1", "d-1", 1)
    registry.create_home_shard("x-0", "d-1", 1)
    a_client, b_client = clients(), clients()
    inc_a, _ = join(a_client, layout, "a")
    inc_b, _ = join(b_client, layout, "b", weight=3.0)  # the best survivor for both shards

    after_first_move = threading.Event()
    release = threading.Event()

    def stall(plan_id, shard):
        # Fault seam: the first leader makes one move of the plan, then hangs here
        # until its session is expired under it.
        after_first_move.set()
        release.wait(30)
        raise RuntimeError("stalled leader woke after losing its session")

    first = Leader(ClusterStore(a_client, layout), inc_a.id, period=0.2, hooks=LeaderHooks(after_move=stall))
    first.start()
    assert first.leading.wait(30)
    assert after_first_move.wait(30), "the first leader never moved a shard"
    # The leader wrote through its own server of the ensemble; another client's server
    # may not have applied that write yet. ZooKeeper's sync brings it up to the leader's.
    admin.sync("/")
    plan, _ = PlanStore(admin, layout).read("d-1")
    assert plan.status == "open" and len(plan.moves) == 2
    moved = [m for m in plan.moves if registry.read(m.shard)[0].epoch == 2]
    assert len(moved) == 1

    second = Leader(ClusterStore(b_client, layout), inc_b.id, period=0.2)
    second.start()
    try:
        ZooKeeperEnsemble.expire_session(a_client)
        release.set()
        assert second.leading.wait(30), "leadership did not move after the leader's session expired"
        wait_until(
            lambda: all(registry.read(m.shard)[0].epoch == 2 for m in plan.moves),
            30,
            "the new leader to finish the plan",
        )
        # Each shard moved exactly once (epoch 1 -> 2), to the best survivor.
        for move in plan.moves:
            shard = registry.read(move.shard)[0]
            assert shard.owner == inc_b.id and shard.state is own.ShardState.ADOPTING
            assert [h.epoch for h in shard.history] == [1, 2]
        assert any(event.kind == "deposed" for event in first.story)
        wait_until(lambda: PlanStore(admin, layout).read("d-1")[0].status == "done", 30, "the plan to be marked done")
    finally:
        release.set()
        first.stop()
        second.stop()


def test_cluster_status_command_prints_members_leader_shards_and_plans(clients, zk_hosts, capsys):
    import json as json_module

    from cluster.cli import main

    layout = ClusterLayout("c1")
    client = clients()
    incarnation, _ = join(client, layout, "n1", weight=2.0)
    prepared_registry(client, layout).create_home_shard(incarnation.id, incarnation.id, incarnation.epoch)
    election = client.Election(layout.leader, identifier=incarnation.id)
    elected, release = threading.Event(), threading.Event()

    def lead():
        elected.set()
        release.wait(30)  # hold leadership while the command looks

    thread = threading.Thread(target=election.run, args=(lead,), daemon=True)
    thread.start()
    assert elected.wait(30)
    try:
        assert main(["cluster", "status", "--zk", zk_hosts, "--cluster", "c1", "--json"]) == 0
        body = json_module.loads(capsys.readouterr().out)
        assert body["leader"] == incarnation.id
        assert body["members"][incarnation.id]["capacity_weight"] == 2.0
        assert body["shards"][incarnation.id]["owner"] == incarnation.id
        assert body["shards"][incarnation.id]["state"] == "active"
        assert main(["cluster", "status", "--zk", zk_hosts, "--cluster", "c1"]) == 0
        text = capsys.readouterr().out
        assert f"leader {incarnation.id}" in text and "plans:" in text
    finally:
        release.set()
        thread.join(10)


def test_the_leader_deletes_a_done_plan_once_the_retention_has_passed(clients, tmp_path):
    """Plans would otherwise pile up under plans/ for ever, and the leader reads them
    all before each decision."""
    layout = ClusterLayout("c1", str(tmp_path / "hdfs"))
    admin = clients()
    registry = prepared_registry(admin, layout)
    registry.create_home_shard("d-1", "d-1", 1)  # left by a dead node
    client = clients()
    incarnation, _ = join(client, layout, "a")
    retention = 2.0
    leader = Leader(
        ClusterStore(client, layout),
        incarnation.id,
        period=0.2,
        storage=LocalStorage(),
        collect_interval=0.2,
        retention=retention,
    )
    leader.start()
    try:
        wait_until(lambda: any(event.kind == "done" for event in leader.story), 30, "the plan to be done")
        plan, _ = PlanStore(admin, layout).read("d-1")
        assert plan.status == "done" and plan.finished_at is not None
        wait_until(lambda: PlanStore(admin, layout).read("d-1") is None, 30, "the done plan to be collected")
        collected = next(event for event in leader.story if event.kind == "collect" and "d-1" in event.detail)
        assert collected.at - plan.finished_at >= retention
        # The shard it moved is the adopter's business: untouched.
        shard, _ = registry.read("d-1")
        assert shard.owner == incarnation.id and shard.epoch == 2
    finally:
        leader.stop()


def test_the_registry_listing_follows_shards_into_retirement_and_deletion(clients):
    """`all()` reads a RETIRED shard once and keeps it; the listing must still follow
    every change before retirement, and forget a shard whose znode was deleted."""
    layout = ClusterLayout("c1")
    admin = clients()
    registry = prepared_registry(admin, layout)
    registry.create_home_shard("n1-3", "n1-3", 3)
    registry.create_home_shard("n2-4", "n2-4", 4)
    assert registry.all()["n1-3"][0].state is own.ShardState.ACTIVE
    registry.transition("n1-3", lambda c: own.reassign(c, "n2-4", expected_epoch=3, at=1.0))
    assert registry.all()["n1-3"][0].state is own.ShardState.ADOPTING
    registry.mark_adopted("n1-3", "n2-4", 4)
    registry.retire("n1-3", "n2-4", 4)
    retired, version = registry.all()["n1-3"]
    assert retired.state is own.ShardState.RETIRED and (retired, version) == registry.read("n1-3")
    assert registry.all()["n1-3"] == (retired, version)
    admin.delete(layout.shard("n1-3"), version=version)
    assert sorted(registry.all()) == ["n2-4"]
