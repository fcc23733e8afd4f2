"""The rolling deploy's decisions (`cluster.core.rolls`), without ZooKeeper: the
leader's `advance` through a whole roll, a takeover after its driver died or left for
its own step, an abort when the cluster's flow changed or a step ran out of time, and
each member's own action."""

from dataclasses import replace

from cluster.core.heartbeat import Heartbeat
from cluster.core.ownership import ShardOwnership, ShardState, new_shard, reassign
from cluster.core.rolls import (
    CONNECT,
    OFFLOAD,
    Roll,
    RollView,
    advance,
    may_start,
    member_action,
    new_roll,
    refuse_step,
)

OLD, NEW = "a" * 16, "b" * 16


def beat(incarnation: str, *, owns: tuple[str, ...] | None = None) -> Heartbeat:
    node, epoch = incarnation.rsplit("-", 1)
    return Heartbeat(
        node, incarnation, int(epoch), admin=f"http://{node}", owned_shards=(incarnation,) if owns is None else owns
    )


def home(incarnation: str, flow: str) -> ShardOwnership:
    return new_shard(incarnation, incarnation, int(incarnation.rsplit("-", 1)[1]), at=0.0, flow=flow)


class World:
    """Members and shards as ZooKeeper would show them, changed by hand."""

    def __init__(self, *incarnations: str, leader: str):
        self.members = {name: beat(name) for name in incarnations}
        self.shards = {name: home(name, OLD) for name in incarnations}
        self.leader, self.now, self.version = leader, 1000.0, NEW

    def view(self, leader: str | None = None) -> RollView:
        return RollView(leader or self.leader, self.now, dict(self.members), dict(self.shards), self.version)

    def offloaded(self, incarnation: str, adopter: str) -> None:
        """`incarnation` left; every shard it owned is adopted (DRAINING) by `adopter`."""
        del self.members[incarnation]
        for name, shard in list(self.shards.items()):
            if shard.owner == incarnation:
                moved = reassign(shard, adopter, expected_epoch=shard.epoch, at=1.0)
                self.shards[name] = replace(moved, state=ShardState.DRAINING)

    def joined(self, incarnation: str, flow: str = NEW) -> None:
        self.members[incarnation] = beat(incarnation)
        self.shards[incarnation] = home(incarnation, flow)


def start(world: World) -> Roll:
    return new_roll(
        NEW, world.members, world.leader, {n: s.flow for n, s in world.shards.items()}, received_by="n2-2", at=world.now
    )


def run(roll: Roll, view: RollView) -> Roll:
    """Advance until nothing changes (what the leader's runner does in one round)."""
    while (following := advance(roll, view)) is not None:
        roll = following
    return roll


def states(roll: Roll) -> list[str]:
    return [step.state for step in roll.steps]


def test_the_roll_goes_member_by_member_the_leader_last_and_the_new_leader_finishes_it():
    world = World("n1-1", "n2-2", "n3-3", leader="n1-1")
    roll = start(world)
    assert [step.incarnation for step in roll.steps] == ["n2-2", "n3-3", "n1-1"]
    roll = run(roll, world.view())
    assert roll.driver == "n1-1" and states(roll) == ["offloading", "waiting", "waiting"]
    assert member_action(roll, incarnation="n2-2", offloaded=None) == OFFLOAD
    assert member_action(roll, incarnation="n3-3", offloaded=None) is None

    world.offloaded("n2-2", "n3-3")
    roll = run(roll, world.view())
    assert states(roll)[0] == "connecting"
    assert member_action(roll, incarnation=None, offloaded="n2-2") == CONNECT
    world.joined("n2-4")
    roll = run(roll, world.view())
    assert roll.steps[0].new_incarnation == "n2-4" and states(roll) == ["done", "offloading", "waiting"]

    world.offloaded("n3-3", "n2-4")
    world.joined("n3-5")
    roll = run(roll, world.view())
    assert states(roll) == ["done", "done", "offloading"]
    assert member_action(roll, incarnation="n1-1", offloaded=None) == OFFLOAD

    # The leader leaves for its own step: the next leader takes the roll over and finishes it.
    world.offloaded("n1-1", "n2-4")
    world.leader = "n2-4"
    roll = run(roll, world.view())
    assert roll.driver == "n2-4" and roll.handovers == ("n1-1 left the cluster for its own step",)
    assert states(roll)[2] == "connecting"
    world.joined("n1-6")
    roll = run(roll, world.view())
    assert roll.state == "done" and states(roll) == ["done", "done", "done"]
    assert roll.outcome == "finished by leader n2-4"  # the leader's own step is how every roll ends


def test_a_leader_that_took_the_roll_over_after_its_driver_died_finishes_it_and_says_so():
    world = World("n1-1", "n2-2", "n3-3", leader="n1-1")
    roll = run(start(world), world.view())
    world.offloaded("n2-2", "n3-3")
    roll = run(roll, world.view())
    assert states(roll)[0] == "connecting"

    del world.members["n1-1"]  # the leader (which received nothing, drove everything) is SIGKILLed
    world.leader = "n3-3"
    roll = run(roll, world.view())
    assert roll.driver == "n3-3" and roll.notes[-1] == "taken over by leader n3-3 after n1-1 died"
    world.joined("n2-4")
    roll = run(roll, world.view())
    assert states(roll) == ["done", "offloading", "waiting"]
    world.offloaded("n3-3", "n2-4")
    world.leader = "n2-4"
    world.joined("n3-5")
    roll = run(roll, world.view())
    # The dead leader's own step: it is no member any more, its next incarnation runs the cluster's flow.
    assert states(roll) == ["done", "done", "skipped"] and "not a member" in roll.steps[2].detail
    assert roll.state == "done"
    assert roll.outcome == "finished by leader n2-4 after n1-1 died"
    assert "taken over by leader n3-3 after n1-1 died" in roll.notes
    assert roll.notes[-2] == "taken over by leader n2-4 after n3-3 left the cluster for its own step"


def test_a_taking_over_leader_aborts_a_roll_whose_version_is_no_longer_the_clusters_flow():
    world = World("n1-1", "n2-2", "n3-3", leader="n1-1")
    roll = run(start(world), world.view())
    world.offloaded("n2-2", "n3-3")
    roll = run(roll, world.view())
    del world.members["n1-1"]
    world.leader, world.version = "n3-3", "c" * 16
    roll = run(roll, world.view())
    assert roll.state == "failed" and states(roll) == ["failed", "skipped", "skipped"]
    assert roll.outcome.startswith("aborted by leader n3-3 after n1-1 died: the cluster's flow is now")
    # The member offloaded for its step connects again: the roll never leaves a node out.
    assert member_action(roll, incarnation=None, offloaded="n2-2") == CONNECT


def test_a_step_that_runs_out_of_time_fails_the_roll():
    world = World("n1-1", "n2-2", leader="n1-1")
    roll = run(start(world), world.view())
    world.offloaded("n2-2", "n1-1")
    roll = run(roll, world.view())
    world.now += roll.step_timeout + 1  # it never came back
    roll = run(roll, world.view())
    assert roll.state == "failed" and states(roll) == ["failed", "skipped"]
    assert "is its process running?" in roll.error and roll.outcome.startswith("aborted by leader n1-1: n2-2:")


def test_a_member_that_came_back_on_another_version_fails_its_step():
    world = World("n1-1", "n2-2", leader="n1-1")
    roll = run(start(world), world.view())
    world.offloaded("n2-2", "n1-1")
    world.joined("n2-3", flow=OLD)
    roll = run(roll, world.view())
    assert roll.state == "failed" and "on flow version " + OLD in roll.steps[0].detail


def test_a_member_waits_while_its_shards_are_still_being_adopted():
    world = World("n1-1", "n2-2", leader="n1-1")
    roll = run(start(world), world.view())
    del world.members["n2-2"]
    world.shards["n2-2"] = reassign(world.shards["n2-2"], "n1-1", expected_epoch=2, at=1.0)  # ADOPTING
    assert advance(roll, world.view()) is None
    world.shards["n2-2"] = replace(world.shards["n2-2"], state=ShardState.DRAINING)
    assert states(advance(roll, world.view()))[0] == "connecting"


def test_members_already_on_the_version_are_skipped_and_a_lone_member_is_refused():
    world = World("n1-1", "n2-2", leader="n1-1")
    world.shards["n2-2"] = home("n2-2", NEW)
    roll = start(world)
    assert states(roll) == ["skipped", "waiting"]
    del world.members["n2-2"]
    roll = run(roll, world.view())
    assert roll.state == "failed" and "only member" in roll.error


def test_a_refused_offload_stops_the_roll_and_only_a_running_roll_blocks_another():
    world = World("n1-1", "n2-2", leader="n1-1")
    roll = run(start(world), world.view())
    assert may_start(roll) is not None
    refused = refuse_step(roll, "n2-2", "nobody could take its shards over", at=5.0)
    assert refused.state == "failed" and refused.steps[0].state == "failed"
    assert refused.outcome == "aborted by leader n1-1: n2-2: nobody could take its shards over"
    assert member_action(refused, incarnation="n2-2", offloaded=None) is None  # it never left
    assert refuse_step(refused, "n2-2", "again", at=6.0) is None
    assert may_start(refused) is None and may_start(None) is None


def test_an_operator_offload_is_left_alone_and_the_roll_round_trips_through_json():
    world = World("n1-1", "n2-2", leader="n1-1")
    roll = start(world)
    # n2-2 offloaded by hand before the roll reached it: skipped, and never connected by the roll.
    del world.members["n2-2"]
    roll = run(roll, world.view())
    assert roll.steps[0].state == "skipped"
    assert member_action(roll, incarnation=None, offloaded="n2-2") is None
    assert Roll.from_json(roll.to_json()) == roll
