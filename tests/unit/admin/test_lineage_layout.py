"""The lineage drawn as NiFi's lineage view draws it (`cluster.admin.lineage_layout`):
each FlowFile's events chained in time order, parent -> child edges from FORK, CLONE,
REPLAY and into JOIN, every edge from an older column to a newer one."""

from cluster.admin.lineage_layout import HISTORY, LINEAGE, lineage_links
from cluster.admin.models_provenance import lineage_graph_view, lineage_view
from repositories.provenance import EventType, ProvenanceEvent, compute_lineage


def numbered(*events: ProvenanceEvent, times: tuple[int, ...] = ()) -> tuple[ProvenanceEvent, ...]:
    for number, event in enumerate(events, start=1):
        object.__setattr__(event, "event_id", number)
        object.__setattr__(event, "event_time_ms", times[number - 1] if times else 1000 + number)
    return events


def lineage_of(root, events, max_flowfiles=100):
    def naming(uuid):
        return [e for e in events if uuid in (e.flowfile_uuid, *e.parent_uuids, *e.child_uuids)]

    return compute_lineage(root, naming, max_flowfiles=max_flowfiles)


# (a, b) --JOIN 3--> j ; j ROUTE 4 ; j --FORK 5--> k1, k2 ; k1 DROP 6 ; j DROP 7 ; unrelated x
JOINED_AND_FORKED = numbered(
    ProvenanceEvent(EventType.CREATE, "a", "gen", attributes_after={"filename": "a.txt"}),
    ProvenanceEvent(EventType.CREATE, "b", "gen"),
    ProvenanceEvent(EventType.JOIN, "j", "merge", parent_uuids=("a", "b"), attributes_after={"filename": "j.txt"}),
    ProvenanceEvent(EventType.ROUTE, "j", "route", relationship="matched"),
    ProvenanceEvent(EventType.FORK, "j", "split", child_uuids=("k1", "k2")),
    ProvenanceEvent(EventType.DROP, "k1", "sink"),
    ProvenanceEvent(EventType.DROP, "j", "split"),
    ProvenanceEvent(EventType.CREATE, "x", "gen"),
)


def test_each_flowfiles_events_are_chained_and_parents_lead_to_their_children():
    graph = lineage_of("j", JOINED_AND_FORKED)
    nodes, links = lineage_links(graph.events.values(), graph.flowfiles)
    assert set(nodes) == {f"flowfile:{u}" for u in ("a", "b", "j", "k1", "k2")} | {f"event:{i}" for i in range(1, 8)}
    assert {(link.source, link.target, link.kind) for link in links} == {
        ("flowfile:a", "event:1", HISTORY),
        ("flowfile:b", "event:2", HISTORY),
        ("event:1", "event:3", LINEAGE),  # a's last step into the JOIN that made j
        ("event:2", "event:3", LINEAGE),
        ("event:3", "flowfile:j", LINEAGE),
        ("flowfile:j", "event:4", HISTORY),
        ("event:4", "event:5", HISTORY),
        ("event:5", "flowfile:k1", LINEAGE),
        ("event:5", "flowfile:k2", LINEAGE),
        ("flowfile:k1", "event:6", HISTORY),
        ("event:5", "event:7", HISTORY),  # j goes on after its FORK, to its DROP
    }


def test_every_edge_goes_from_an_older_column_to_a_newer_one_and_no_boxes_overlap():
    view = lineage_graph_view(lineage_of("j", JOINED_AND_FORKED), 100)
    layer = {node.id: node.layer for node in view.nodes}
    assert all(layer[edge.source] < layer[edge.target] and not edge.back_edge for edge in view.edges)
    assert layer["flowfile:a"] == 0 and layer["flowfile:k2"] > layer["event:5"] > layer["event:3"]
    corners = [(node.x, node.y) for node in view.nodes]
    for i, (x, y) in enumerate(corners):
        for u, v in corners[i + 1 :]:
            assert abs(x - u) >= view.box_width or abs(y - v) >= view.box_height
        assert 0 <= x and x + view.box_width <= view.width and 0 <= y and y + view.box_height <= view.height
    by_id = {node.id: node for node in view.nodes}
    assert (by_id["flowfile:j"].root, by_id["event:4"].root, by_id["event:1"].root) == (True, True, False)
    assert by_id["flowfile:a"].filename == "a.txt" and by_id["event:3"].filename == "j.txt"
    assert by_id["event:4"].relationship == "matched" and by_id["event:4"].event_type == "ROUTE"
    assert (view.flowfiles, view.events) == (5, 7)


def test_a_flowfiles_steps_follow_their_times_not_the_order_the_repository_registered_them():
    # Events 3 and 4 came from an adopted shard's outbox: registered after the adopter's
    # own (higher ids) but done before them, on the dead owner.
    events = numbered(
        ProvenanceEvent(EventType.CREATE, "f", "gen"),
        ProvenanceEvent(EventType.DROP, "f", "sink"),
        ProvenanceEvent(EventType.ATTRIBUTES_MODIFIED, "f", "tag"),
        ProvenanceEvent(EventType.ROUTE, "f", "route", relationship="even"),
        times=(100, 400, 200, 300),
    )
    graph = lineage_of("f", events)
    _, links = lineage_links(graph.events.values(), graph.flowfiles)
    assert [(link.source, link.target) for link in links] == [
        ("flowfile:f", "event:1"),
        ("event:1", "event:3"),
        ("event:3", "event:4"),
        ("event:4", "event:2"),
    ]


def test_clones_and_replays_link_the_original_to_the_new_flowfile():
    events = numbered(
        ProvenanceEvent(EventType.CREATE, "o", "gen"),
        ProvenanceEvent(EventType.CLONE, "o", "gen", child_uuids=("c",)),
        ProvenanceEvent(EventType.DROP, "c", "sink"),
        ProvenanceEvent(EventType.REPLAY, "r", "sink", parent_uuids=("c",), child_uuids=("r",)),
        ProvenanceEvent(EventType.DROP, "r", "sink"),
    )
    graph = lineage_of("c", events)
    _, links = lineage_links(graph.events.values(), graph.flowfiles)
    assert {(link.source, link.target, link.kind) for link in links} == {
        ("flowfile:o", "event:1", HISTORY),
        ("event:1", "event:2", HISTORY),
        ("event:2", "flowfile:c", LINEAGE),
        ("flowfile:c", "event:3", HISTORY),
        ("event:3", "event:4", LINEAGE),
        ("event:4", "flowfile:r", LINEAGE),
        ("flowfile:r", "event:5", HISTORY),
    }


def test_a_truncated_lineage_draws_no_flowfile_past_its_end():
    children = tuple(f"k{i}" for i in range(5))
    events = numbered(
        ProvenanceEvent(EventType.CREATE, "p", "gen"),
        ProvenanceEvent(EventType.FORK, "p", "split", child_uuids=children),
    )
    graph = lineage_of("p", events, max_flowfiles=2)
    assert graph.truncated
    view = lineage_graph_view(graph, 2)
    drawn = {node.id for node in view.nodes}
    assert {node for node in drawn if node.startswith("flowfile:")} == {f"flowfile:{u}" for u in graph.flowfiles}
    assert all(edge.source in drawn and edge.target in drawn for edge in view.edges)
    assert view.truncated and view.flowfiles == 3


def test_the_drawing_has_every_node_and_parent_to_child_link_of_the_lineage_answer():
    # A FlowFile forked on a node that died; its children finished on the adopter, whose
    # clock is behind the dead node's: their events are stamped before the FORK.
    events = numbered(
        ProvenanceEvent(EventType.CREATE, "p", "gen"),  # from the adopted shard's outbox
        ProvenanceEvent(EventType.FORK, "p", "split", child_uuids=("k1", "k2")),
        ProvenanceEvent(EventType.ATTRIBUTES_MODIFIED, "k1", "tag"),  # on the adopter
        ProvenanceEvent(EventType.DROP, "k1", "sink"),
        ProvenanceEvent(EventType.DROP, "k2", "sink"),
        times=(600, 610, 540, 550, 560),
    )
    graph = lineage_of("p", events)
    answer = lineage_view(graph, 100)
    view = lineage_graph_view(graph, 100)
    assert sorted(node.id for node in view.nodes) == sorted(node.id for node in answer.nodes)
    drawn = {(edge.source, edge.target) for edge in view.edges}
    made = {(link.source, link.target) for link in answer.links if link.source.startswith("event:")}
    assert made == {("event:2", "flowfile:k1"), ("event:2", "flowfile:k2")} and made <= drawn
    assert {("flowfile:k1", "event:3"), ("event:3", "event:4"), ("flowfile:k2", "event:5")} <= drawn
    layer = {node.id: node.layer for node in view.nodes}
    assert all(layer[edge.source] < layer[edge.target] for edge in view.edges)
