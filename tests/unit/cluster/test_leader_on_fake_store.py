"""The leader's failover and the registries' fencing, on the in-memory ZooKeeper
(`tests.fakes`): the product's store, registries and leader, with no ZooKeeper.
After each decision the protocol's invariants hold (`validate_cluster`)."""

from __future__ import annotations

import pytest

from cluster.core.decommission import Decommission
from cluster.core.ownership import ShardState
from cluster.core.validation import validate_cluster
from cluster.errors import FencedError, OwnershipConflict
from cluster.failover.leader import Leader, LeaderHooks
from cluster.zk.decommissions import DecommissionRecords
from cluster.zk.view import read_cluster_view
from tests.fakes.cluster_store import join
from tests.fakes.zookeeper import FakeZooKeeper


@pytest.fixture
def zookeeper():
    return FakeZooKeeper()


def three_members(zookeeper):
    """n1 (the one to die), n2 and n3 three times n2's size; n2 leads."""
    (n1, victim), (n2, leader), (n3, strong) = (
        join(zookeeper, "n1"),
        join(zookeeper, "n2"),
        join(zookeeper, "n3", weight=3.0),
    )
    return n1, victim, Leader(n2, leader, collect_interval=0), n3, strong


def test_a_dead_members_shard_is_planned_and_moved_to_the_most_capable_survivor_then_the_plan_is_done(zookeeper):
    n1, victim, leader, n3, strong = three_members(zookeeper)
    epoch = n1.shards.read(victim)[0].epoch
    assert leader.step() == []  # nobody died: nothing to do

    n1.client.expire()
    leader.step()
    plan = leader.plans.read(victim)[0]
    assert [(move.shard, move.from_epoch, move.to) for move in plan.moves] == [(victim, epoch, strong)]
    shard = n3.shards.read(victim)[0]
    assert (shard.owner, shard.epoch, shard.state) == (strong, epoch + 1, ShardState.ADOPTING)
    assert validate_cluster(read_cluster_view(n3)) == []

    n3.shards.mark_adopted(victim, strong, epoch + 1)
    leader.step()
    assert leader.plans.read(victim)[0].status == "done"
    assert validate_cluster(read_cluster_view(n3)) == []


class DiesAfterWritingThePlan(LeaderHooks):
    def plan_written(self, plan_id: str) -> None:
        raise RuntimeError("the leader died here")


def test_a_plan_a_dead_leader_wrote_is_finished_by_the_next_leader_and_each_shard_moves_once(zookeeper):
    n1, victim, leader, n3, strong = three_members(zookeeper)
    epoch = n1.shards.read(victim)[0].epoch
    first = Leader(leader.store, leader.incarnation, collect_interval=0, hooks=DiesAfterWritingThePlan())
    n1.client.expire()
    with pytest.raises(RuntimeError, match="died here"):
        first.step()
    assert n3.plans.read(victim) is not None and n3.shards.read(victim)[0].epoch == epoch  # planned, not moved

    leader.store.client.expire()  # the leader's session ends with it
    successor = Leader(n3, strong, collect_interval=0)
    successor.step()
    successor.step()
    shard = n3.shards.read(victim)[0]
    assert (shard.owner, shard.epoch) == (strong, epoch + 1)
    assert [entry.state for entry in shard.history] == [ShardState.ACTIVE, ShardState.ADOPTING]
    assert validate_cluster(read_cluster_view(n3)) == []


def test_a_stale_epoch_or_version_is_refused_and_a_dead_incarnation_is_told_so(zookeeper):
    n1, victim, leader, n3, strong = three_members(zookeeper)
    epoch = n1.shards.read(victim)[0].epoch
    n1.client.expire()
    leader.step()
    move = leader.plans.read(victim)[0].moves[0]

    with pytest.raises(FencedError):  # the old owner, were it to come back: "you are dead"
        n3.shards.claim(victim, victim, epoch)
    with pytest.raises(FencedError):  # the adopter acting on the epoch before the move
        n3.shards.mark_adopted(victim, strong, epoch)
    with pytest.raises(OwnershipConflict):  # a second leader replaying the move planned at the old epoch
        n3.shards.move(move)
    current, version = n3.shards.read(victim)
    n3.shards.mark_adopted(victim, strong, epoch + 1)
    with pytest.raises(OwnershipConflict):  # a compare-and-set on a version read before that change
        n3.shards.compare_and_set(victim, version, current)
    assert n3.shards.read(victim)[0].state is ShardState.DRAINING
    assert validate_cluster(read_cluster_view(n3)) == []


def test_a_decommissioned_member_still_up_is_given_no_shard(zookeeper):
    n1, victim, leader, n3, strong = three_members(zookeeper)
    assert DecommissionRecords(n3.client, n3.layout).create(Decommission("n3", 1.0))
    n1.client.expire()
    leader.step()
    assert n3.shards.read(victim)[0].owner == leader.incarnation  # not n3, three times its size


def test_a_divvy_splits_the_dead_members_shard_in_one_transaction_and_the_adopters_watch_sees_its_slice(zookeeper):
    n1, victim, leader, n3, strong = three_members(zookeeper)
    seen = []
    n1.client.expire()
    divvy = Leader(leader.store, leader.incarnation, collect_interval=0, policy="divvy")
    divvy.step()
    parent = n3.shards.read(victim)[0]
    assert parent.state is ShardState.SPLIT and len(parent.children) == 2
    slices = [n3.shards.read(child)[0] for child in parent.children]
    assert {s.owner for s in slices} == {leader.incarnation, strong} and {s.epoch for s in slices} == {parent.epoch}
    mine = next(s.shard for s in slices if s.owner == strong)
    n3.watch_shard(mine, seen.append)  # as a member watches the shards it may be handed
    n3.shards.mark_adopted(mine, strong, parent.epoch)
    assert [s.state for s in seen] == [ShardState.ADOPTING, ShardState.DRAINING]
    assert validate_cluster(read_cluster_view(n3)) == []


def test_a_transaction_whose_check_fails_changes_nothing(zookeeper):
    client = zookeeper.session()
    client.create("/a", b"1")
    transaction = client.transaction()
    transaction.create("/b", b"new")
    transaction.check("/a", 7)  # /a is at version 0
    results = transaction.commit()
    assert [type(result).__name__ for result in results] == ["RolledBackError", "BadVersionError"]
    assert client.exists("/b") is None and client.get("/a")[0] == b"1"
