"""The drill's fault names: parsing an operator's list, former names, rotation."""

import pytest

from cluster.drills.fault_kinds import FAULT_KINDS, DrillUsageError, parse_faults, rotation

LOCAL = {kind.name for kind in FAULT_KINDS} - {"partition", "broker"}


def test_no_list_means_every_supported_fault_in_catalogue_order():
    assert parse_faults(None, LOCAL) == (
        "kill",
        "stop",
        "expire",
        "leader",
        "adopter",
        "zk-follower",
        "datanode",
        "slow-hdfs",
        "slow-hdfs-kill",
        "rack",
        "load",
    )
    assert parse_faults(" , ", {"datanode", "kill"}) == ("kill", "datanode")


def test_names_keep_the_order_given_and_former_names_map_to_the_new_ones():
    assert parse_faults("datanode,sigkill,kill-leader", LOCAL) == ("datanode", "kill", "leader")
    assert parse_faults("sigstop , kill-adopter", LOCAL) == ("stop", "adopter")


def test_a_fault_named_twice_comes_round_twice_as_often():
    faults = parse_faults("kill,partition,stop,sigkill", LOCAL | {"partition"})
    assert faults == ("kill", "partition", "stop", "kill")
    assert rotation(faults, 6) == ["kill", "partition", "stop", "kill", "kill", "partition"]


def test_an_unknown_fault_is_named_with_the_valid_ones():
    with pytest.raises(DrillUsageError) as raised:
        parse_faults("kill,sigterm", LOCAL)
    message = str(raised.value)
    every = (
        "kill, stop, expire, leader, adopter, zk-follower, datanode, slow-hdfs, slow-hdfs-kill, broker, rack, "
        "load, partition"
    )
    assert "'sigterm'" in message and every in message


def test_a_fault_the_target_cannot_inject_is_refused_with_what_it_can():
    with pytest.raises(DrillUsageError, match=r"'partition' cannot be injected on the local target .*--target compose"):
        parse_faults("kill,partition", LOCAL, "local")


def test_the_broker_fault_is_refused_without_the_kafka_workload():
    with pytest.raises(DrillUsageError, match=r"'broker' cannot be injected on the local target .*--workload kafka"):
        parse_faults("broker", LOCAL, "local")
    assert parse_faults("kill,broker", LOCAL | {"broker"}) == ("kill", "broker")


def test_rotation_takes_the_faults_in_turn():
    assert rotation(("kill", "stop", "expire"), 7) == ["kill", "stop", "expire", "kill", "stop", "expire", "kill"]
    assert rotation(("kill",), 0) == []


def test_node_events_are_read_out_of_everything_else_a_node_printed():
    from cluster.drills.compose_project import parse_events

    printed = '2026-11-24 INFO joined\n{"event": "joined", "at": 1.0, "incarnation": "n1-1"}\n{"event": "dead", trunc\n'
    assert parse_events(printed) == [{"event": "joined", "at": 1.0, "incarnation": "n1-1"}]


def test_a_rack_is_a_third_of_the_nodes_and_never_none():
    from cluster.drills.fault_kinds import rack_size

    assert [rack_size(nodes) for nodes in (2, 3, 5, 6, 9, 10)] == [1, 1, 1, 2, 3, 3]
