from repositories.provenance import EventType, compute_lineage

from .conftest import event


def fetcher(events):
    for i, e in enumerate(events, start=1):
        object.__setattr__(e, "event_id", i)

    def naming(uuid):
        return [e for e in events if uuid == e.flowfile_uuid or uuid in e.parent_uuids or uuid in e.child_uuids]

    return naming


def test_ancestors_and_descendants_across_fork_clone_join():
    # a --FORK--> b, c ; b --CLONE--> d ; (c, d) --JOIN--> e ; unrelated x
    events = [
        event("RECEIVE", "a"),
        event("FORK", "a", parent_uuids=("a",), child_uuids=("b", "c")),
        event("CLONE", "b", child_uuids=("d",)),
        event("ATTRIBUTES_MODIFIED", "d"),
        event("JOIN", "e", parent_uuids=("c", "d"), child_uuids=("e",)),
        event("SEND", "e"),
        event("CREATE", "x"),
    ]
    graph = compute_lineage("d", fetcher(events))
    assert graph.ancestors == {"b", "a"}
    assert graph.descendants == {"e"}
    assert {(e.parent_uuid, e.child_uuid, e.event_type) for e in graph.edges} == {
        ("a", "b", "FORK"),
        ("b", "d", "CLONE"),
        ("d", "e", "JOIN"),
    }
    assert [e.event_type for e in graph.events_of("e")] == [EventType.JOIN, EventType.SEND]
    assert "x" not in graph.flowfiles

    root = compute_lineage("a", fetcher(events))
    assert root.ancestors == set() and root.descendants == {"b", "c", "d", "e"}


def test_join_without_child_list_and_cycles_terminate():
    events = [
        event("JOIN", "j", parent_uuids=("p", "q"), child_uuids=()),
        event("REPLAY", "p", parent_uuids=("j",), child_uuids=("p",)),
    ]
    graph = compute_lineage("j", fetcher(events))
    assert graph.ancestors == {"p", "q"}
    assert "p" in graph.descendants


def test_limit_marks_the_graph_truncated():
    events = [event("FORK", "root", child_uuids=tuple(f"k{i}" for i in range(20)))]
    graph = compute_lineage("root", fetcher(events), max_flowfiles=5)
    assert graph.truncated and len(graph.descendants) == 5
