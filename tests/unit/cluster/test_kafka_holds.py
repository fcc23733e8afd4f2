"""The Kafka partition holds' decisions, without ZooKeeper: the assignment every member
computes alike, where a new holder starts, and the hold's record as stored."""

from __future__ import annotations

import pytest

from cluster.core.kafka_holds import FIRST, PartitionHold, assign, hold_name, start_of

PARTITIONS = [("b", 0), ("a", 1), ("a", 0), ("b", 1), ("a", 2)]


def test_the_assignment_spreads_the_partitions_over_the_shards_in_order_whatever_order_they_come_in():
    one = assign(PARTITIONS, {"n2-4", "n1-3"})
    assert one == {("a", 0): "n1-3", ("a", 1): "n2-4", ("a", 2): "n1-3", ("b", 0): "n2-4", ("b", 1): "n1-3"}
    assert assign(reversed(PARTITIONS), ["n1-3", "n2-4"]) == one
    assert set(assign(PARTITIONS, {"n1-3"}).values()) == {"n1-3"}
    assert assign(PARTITIONS, set()) == {}


def test_a_holder_goes_on_from_its_committed_position_only_when_it_belongs_to_the_holds_take():
    hold = PartitionHold("n1-3", 4, 120)
    assert start_of(hold, 150, 4) == 150  # committed since this take
    assert start_of(hold, 90, 3) == 120  # a position of an earlier take of this shard: stale
    assert start_of(hold, None, None) == 120
    assert start_of(FIRST.taken_by("n1-3"), None, None) is None  # the reset point


def test_taking_grows_the_take_and_releasing_keeps_it_with_the_offset_the_next_holder_starts_at():
    taken = FIRST.taken_by("n1-3")
    assert taken == PartitionHold("n1-3", 1, None)
    released = taken.released(57)
    assert released == PartitionHold(None, 1, 57)
    assert released.taken_by("n2-4") == PartitionHold("n2-4", 2, 57)


def test_a_hold_round_trips_and_a_record_that_does_not_fit_is_refused():
    hold = PartitionHold("n1-3", 2, 99)
    assert PartitionHold.from_json(hold.to_json()) == hold
    assert PartitionHold.from_json(FIRST.to_json()) == FIRST
    for bad in (
        b'{"holder": 3, "take": 1, "offset": 0}',
        b'{"holder": null, "take": -1, "offset": 0}',
        b'{"holder": null, "take": 1, "offset": "5"}',
        b'{"holder": null, "take": true, "offset": 5}',
        b'{"holder": null, "take": 1}',
    ):
        with pytest.raises((ValueError, KeyError)):
            PartitionHold.from_json(bad)
    assert hold_name("orders.v1", 7) == "orders.v1:7"
