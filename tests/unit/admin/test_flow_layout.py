"""The layered layout of a flow (`cluster.admin.flow_layout`) and the graph the admin
API serves from it (`cluster.admin.flow_graph`), without I/O: every part placed, no two
boxes on one spot, sources first, cycles drawn as back edges, crossings reduced."""

import os

import pytest

from cluster.admin.flow_graph import graph_of
from cluster.admin.flow_layout import (
    BOX_HEIGHT,
    BOX_WIDTH,
    LABEL_HEIGHT,
    LayoutEdge,
    back_edges,
    count_crossings,
    layout,
)
from cluster.drills.harness import PROJECT_ROOT
from flow.loading import load_flow, parse_flow


def edges(*pairs: str) -> list[LayoutEdge]:
    """'a>b' for a connection from a to b; ids are c0, c1, ... in the order given."""
    return [LayoutEdge(f"c{i}", *pair.split(">")) for i, pair in enumerate(pairs)]


def check_placed(nodes, joins):
    """The promises every layout keeps; the layout for further checks."""
    placed = layout(nodes, joins)
    assert [n.id for n in placed.nodes] == list(nodes)
    boxes = [(n.x, n.y) for n in placed.nodes]
    assert len(set(boxes)) == len(boxes)
    for i, a in enumerate(placed.nodes):
        assert 0 <= a.x and a.x + BOX_WIDTH <= placed.width and 0 <= a.y and a.y + BOX_HEIGHT <= placed.height
        for b in placed.nodes[i + 1 :]:
            apart = (
                a.x + BOX_WIDTH <= b.x or b.x + BOX_WIDTH <= a.x or a.y + BOX_HEIGHT <= b.y or b.y + BOX_HEIGHT <= a.y
            )
            assert apart, f"{a.id} and {b.id} overlap"
    sources = {n for n in nodes} - {e.destination for e in joins if e.source != e.destination}
    for node in placed.nodes:
        if node.id in sources:
            assert node.layer == 0, f"source {node.id} is in layer {node.layer}"
    at = {n.id: n for n in placed.nodes}
    assert [e.id for e in placed.edges] == [e.id for e in joins]
    for edge in placed.edges:
        source, destination = at[edge.source], at[edge.destination]
        if not edge.self_loop and not edge.back_edge:
            assert source.layer < destination.layer
            # Out of the source's right side, into the destination's left side.
            assert edge.points[0][0] == source.x + BOX_WIDTH and edge.points[-1][0] == destination.x
        for x, y in edge.points:
            assert 0 <= x <= placed.width and 0 <= y <= placed.height
    return placed


def test_a_chain_is_one_part_per_layer_from_left_to_right():
    placed = check_placed(["a", "b", "c", "d"], edges("a>b", "b>c", "c>d"))
    assert [n.layer for n in placed.nodes] == [0, 1, 2, 3]
    assert len({n.y for n in placed.nodes}) == 1
    assert [n.x for n in placed.nodes] == sorted(n.x for n in placed.nodes)
    assert not any(e.back_edge or e.self_loop for e in placed.edges)
    assert placed.crossings == 0


def test_a_fan_out_and_fan_in_share_the_middle_layer():
    placed = check_placed(
        ["split", "x", "y", "z", "join"], edges("split>x", "split>y", "split>z", "x>join", "y>join", "z>join")
    )
    layer = {n.id: n.layer for n in placed.nodes}
    assert layer == {"split": 0, "x": 1, "y": 1, "z": 1, "join": 2}
    assert len({n.x for n in placed.nodes if n.layer == 1}) == 1


def test_a_longer_path_puts_a_part_in_a_later_layer_and_a_short_cut_gets_a_waypoint():
    placed = check_placed(["a", "b", "c"], edges("a>b", "b>c", "a>c"))
    assert {n.id: n.layer for n in placed.nodes} == {"a": 0, "b": 1, "c": 2}
    short_cut = placed.edges[2]
    assert len(short_cut.points) == 3  # its source, the waypoint in layer 1, its destination


def test_a_retry_self_loop_is_drawn_above_its_box_and_does_not_move_it():
    placed = check_placed(["get", "put"], edges("get>put", "put>put"))
    loop = placed.edges[1]
    put = placed.nodes[1]
    assert loop.self_loop and not loop.back_edge
    assert put.layer == 1
    assert all(put.x <= x <= put.x + BOX_WIDTH and y <= put.y for x, y in loop.points)
    assert loop.label_y < put.y


def test_a_cycle_through_two_processors_has_one_back_edge():
    nodes, joins = ["source", "call", "wait"], edges("source>call", "call>wait", "wait>call")
    assert back_edges(nodes, joins) == {"c2"}
    placed = check_placed(nodes, joins)
    assert {n.id: n.layer for n in placed.nodes} == {"source": 0, "call": 1, "wait": 2}
    back = placed.edges[2]
    assert back.back_edge and not back.self_loop
    wait, call = placed.nodes[2], placed.nodes[1]
    # Out of wait's bottom, under the boxes, into call's bottom: apart from call -> wait.
    bottom = wait.y + BOX_HEIGHT
    assert back.points[0][1] == bottom and wait.x <= back.points[0][0] <= wait.x + BOX_WIDTH
    assert back.points[-1][1] == call.y + BOX_HEIGHT and call.x <= back.points[-1][0] <= call.x + BOX_WIDTH
    assert all(y > bottom for _, y in back.points[1:-1]) and back.label_y > bottom
    forward = placed.edges[1]
    assert abs(forward.label_y - back.label_y) >= LABEL_HEIGHT


def test_a_cycle_with_no_source_starts_at_its_first_part():
    placed = check_placed(["a", "b"], edges("a>b", "b>a"))
    assert {n.id: n.layer for n in placed.nodes} == {"a": 0, "b": 1}
    assert [e.back_edge for e in placed.edges] == [False, True]


def test_disconnected_parts_are_each_placed():
    placed = check_placed(["a", "b", "lonely", "c", "d"], edges("a>b", "c>d"))
    layer = {n.id: n.layer for n in placed.nodes}
    assert layer == {"a": 0, "b": 1, "lonely": 0, "c": 0, "d": 1}


def test_the_barycentre_order_removes_a_crossing_the_flows_order_has():
    nodes, joins = ["a", "b", "c", "d"], edges("a>d", "b>c")
    placed = check_placed(nodes, joins)
    order = {n.id: n.order for n in placed.nodes}
    assert placed.crossings == 0
    assert (order["a"] < order["b"]) == (order["d"] < order["c"])


def test_crossings_are_counted_between_two_layers():
    from cluster.admin.flow_layout import _Slot

    slots = {k: _Slot(k, 0, 1) for k in "abcd"}
    slots["a"].down, slots["b"].down = ["d"], ["c"]
    assert count_crossings(["a", "b"], ["c", "d"], slots) == 1
    assert count_crossings(["a", "b"], ["d", "c"], slots) == 0


def test_the_layout_is_the_same_every_time():
    nodes, joins = ["a", "b", "c", "d", "e"], edges("a>c", "b>c", "c>d", "d>b", "a>e", "e>e", "b>e")
    assert layout(nodes, joins) == layout(nodes, joins)


def test_a_connection_to_an_unknown_part_is_refused():
    with pytest.raises(ValueError, match="c0"):
        layout(["a"], edges("a>b"))


def test_the_graph_of_a_flow_definition_has_its_processors_and_connections():
    definition = load_flow(os.path.join(PROJECT_ROOT, "examples", "hello.yaml"), {"data_dir": "/tmp/unused"})
    graph = graph_of(definition, "local", ["local"])
    assert [n.id for n in graph.nodes] == list(definition.processors)
    assert {n.id: n.type for n in graph.nodes}["generate"] == "GenerateFlowFile"
    assert sorted(e.id for e in graph.edges) == sorted(c.id for c in definition.connections)
    loops = [e for e in graph.edges if e.self_loop]
    assert [(e.source, e.relationships) for e in loops] == [("write", ["failure"])]
    assert {n.id: n.layer for n in graph.nodes}["generate"] == 0
    assert all(e.back_pressure_count > 0 for e in graph.edges)


def test_ports_are_drawn_as_boxes_of_their_kind():
    definition = parse_flow(
        {
            "name": "ported",
            "processors": [{"id": "tag", "type": "UpdateAttribute", "properties": {"a": "b"}}],
            "ports": [{"id": "in", "type": "input"}, {"id": "out", "type": "output"}],
            "connections": [
                {"source": "in", "destination": "tag"},
                {"source": "tag", "relationships": ["success"], "destination": "out"},
            ],
        }
    )
    graph = graph_of(definition, "local", ["local"])
    kinds = {n.id: (n.kind, n.type, n.layer) for n in graph.nodes}
    assert kinds == {
        "tag": ("processor", "UpdateAttribute", 1),
        "in": ("input_port", "input port", 0),
        "out": ("output_port", "output port", 2),
    }
