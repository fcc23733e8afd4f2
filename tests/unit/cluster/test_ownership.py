"""The shard ownership state machine, without ZooKeeper."""

import pytest

from cluster.core import ownership as own
from cluster.core.ownership import HASH_SPACE, Refusal, ShardOwnership, ShardState


def home(owner="n1-5", epoch=5):
    return own.new_shard(owner, owner, epoch, at=1.0)


def test_new_shard_is_active_with_its_creation_in_history():
    shard = home()
    assert (shard.owner, shard.epoch, shard.state) == ("n1-5", 5, ShardState.ACTIVE)
    assert [h.state for h in shard.history] == [ShardState.ACTIVE]


def test_full_life_active_adopting_draining_retired():
    moved = own.reassign(home(), "n2-6", expected_epoch=5, at=2.0)
    assert (moved.owner, moved.epoch, moved.state) == ("n2-6", 6, ShardState.ADOPTING)
    adopted = own.adopted(moved, "n2-6", 6, at=3.0)
    assert adopted.state is ShardState.DRAINING and adopted.epoch == 6
    retired = own.retire(adopted, "n2-6", 6, at=4.0)
    assert retired.state is ShardState.RETIRED
    assert [(h.epoch, h.owner, h.state) for h in retired.history] == [
        (5, "n1-5", ShardState.ACTIVE),
        (6, "n2-6", ShardState.ADOPTING),
        (6, "n2-6", ShardState.DRAINING),
        (6, "n2-6", ShardState.RETIRED),
    ]


def test_reassign_planned_on_an_old_epoch_is_refused_as_stale():
    moved = own.reassign(home(), "n2-6", expected_epoch=5, at=2.0)
    again = own.reassign(moved, "n3-7", expected_epoch=5, at=3.0)
    assert isinstance(again, Refusal) and again.stale
    assert "planned at epoch 5, now at 6" in str(again)


def test_adopter_that_died_while_adopting_or_draining_can_be_replaced():
    moved = own.reassign(home(), "n2-6", expected_epoch=5, at=2.0)
    second = own.reassign(moved, "n3-7", expected_epoch=6, at=3.0)
    assert (second.owner, second.epoch, second.state) == ("n3-7", 7, ShardState.ADOPTING)
    draining = own.adopted(second, "n3-7", 7, at=4.0)
    third = own.reassign(draining, "n1-9", expected_epoch=7, at=5.0)
    assert (third.owner, third.epoch, third.state) == ("n1-9", 8, ShardState.ADOPTING)


def test_earlier_owners_are_the_latest_previous_epochs_owners_newest_first():
    assert own.earlier_owners(home()) == []  # a home shard nobody else owned
    moved = own.reassign(home(), "n2-6", expected_epoch=5, at=2.0)
    assert own.earlier_owners(moved) == ["n1-5"]
    # The adopter died while adopting: the shard moves again; both earlier owners are dead.
    second = own.reassign(moved, "n3-7", expected_epoch=6, at=3.0)
    assert own.earlier_owners(second) == ["n2-6", "n1-5"]
    back = own.reassign(own.adopted(second, "n3-7", 7, at=4.0), "n1-9", expected_epoch=7, at=5.0)
    assert own.earlier_owners(back) == ["n3-7", "n2-6"]
    assert own.earlier_owners(back, limit=1) == ["n3-7"]
    # A shard that comes back to an incarnation that owned it before lists it no more.
    returned = own.reassign(moved, "n1-5", expected_epoch=6, at=3.0)
    assert own.earlier_owners(returned) == ["n2-6"]


@pytest.mark.parametrize(
    "who, epoch, reason",
    [
        ("n1-5", 6, "is not the owner"),  # the dead previous owner
        ("n2-6", 5, "epoch 5 is stale"),  # right owner, old epoch
    ],
)
def test_claims_of_dead_incarnations_are_refused_you_are_dead(who, epoch, reason):
    moved = own.reassign(home(), "n2-6", expected_epoch=5, at=2.0)
    refusal = own.check_claim(moved, who, epoch)
    assert refusal.stale and reason in refusal.reason and "you are dead" in refusal.reason
    assert isinstance(own.adopted(moved, who, epoch, at=3.0), Refusal)
    assert own.check_claim(moved, "n2-6", 6) is None


def test_retired_is_final():
    retired = own.retire(
        own.adopted(own.reassign(home(), "n2-6", expected_epoch=5, at=2), "n2-6", 6, at=3), "n2-6", 6, at=4
    )
    assert isinstance(own.reassign(retired, "n3-7", expected_epoch=6, at=5), Refusal)
    assert isinstance(own.retire(retired, "n2-6", 6, at=5), Refusal)
    assert own.check_claim(retired, "n2-6", 6).stale


def test_adopted_needs_adopting_state():
    refusal = own.adopted(home(), "n1-5", 5, at=2.0)
    assert isinstance(refusal, Refusal) and not refusal.stale


def test_json_round_trip_keeps_everything():
    parent, children = own.split(
        home(), [("c0", "n2-6", 0, 100), ("c1", "n3-7", 100, HASH_SPACE)], expected_epoch=5, at=2.0
    )
    for value in (parent, *children, own.adopted(children[0], "n2-6", 6, at=3.0)):
        assert ShardOwnership.from_json(value.to_json()) == value


def test_split_makes_adopting_children_covering_the_hash_space():
    parent, children = own.split(
        home(), [("c1", "n3-7", 1000, HASH_SPACE), ("c0", "n2-6", 0, 1000)], expected_epoch=5, at=2.0
    )
    assert (parent.state, parent.owner, parent.epoch, parent.children) == (ShardState.SPLIT, None, 6, ("c0", "c1"))
    assert [(c.shard, c.owner, c.epoch, c.state) for c in children] == [
        ("c0", "n2-6", 6, ShardState.ADOPTING),
        ("c1", "n3-7", 6, ShardState.ADOPTING),
    ]
    assert children[0].source.contains(999) and not children[0].source.contains(1000)
    assert children[1].source.contains(HASH_SPACE - 1)


@pytest.mark.parametrize(
    "slices",
    [
        [("c0", "a", 0, 10)],  # gap at the end
        [("c0", "a", 0, 10), ("c1", "b", 9, HASH_SPACE)],  # overlap
        [("c0", "a", 1, HASH_SPACE)],  # gap at the start
        [],
    ],
)
def test_split_refuses_slices_that_do_not_cover_exactly_once(slices):
    assert isinstance(own.split(home(), slices, expected_epoch=5, at=2.0), Refusal)


def test_a_split_parent_retires_only_when_every_child_is_seeded_and_is_never_reassigned():
    parent, (c0, c1) = own.split(
        home(), [("c0", "a-1", 0, 10), ("c1", "b-2", 10, HASH_SPACE)], expected_epoch=5, at=2.0
    )
    assert isinstance(own.reassign(parent, "x-3", expected_epoch=6, at=3.0), Refusal)
    seeded0 = own.adopted(c0, "a-1", 6, at=3.0)
    assert seeded0.seeded
    assert isinstance(own.retire_split_parent(parent, {"c0": seeded0, "c1": c1}, at=4.0), Refusal)
    # A seeded child whose adopter dies stays seeded: its next adopter never copies again.
    moved = own.reassign(seeded0, "z-9", expected_epoch=6, at=4.0)
    assert moved.seeded and moved.state is ShardState.ADOPTING
    seeded1 = own.adopted(c1, "b-2", 6, at=4.0)
    retired = own.retire_split_parent(parent, {"c0": moved, "c1": seeded1}, at=5.0)
    assert retired.state is ShardState.RETIRED
