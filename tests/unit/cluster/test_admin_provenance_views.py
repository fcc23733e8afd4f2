"""How the admin API shows provenance: the lineage graph's nodes and links, and an
event's updated attributes."""

from cluster.admin.models_provenance import lineage_view, updated_attributes
from repositories.provenance import EventType, ProvenanceEvent, compute_lineage


def numbered(*events: ProvenanceEvent) -> tuple[ProvenanceEvent, ...]:
    for number, event in enumerate(events, start=1):
        object.__setattr__(event, "event_id", number)
        object.__setattr__(event, "event_time_ms", 1000 + number)
    return events


def test_lineage_links_each_flowfile_to_its_events_and_each_linking_event_to_what_it_made():
    # (a, b) --JOIN 3--> j ; j --FORK 4--> k1, k2 ; k1 DROP 5 ; unrelated x
    events = numbered(
        ProvenanceEvent(EventType.CREATE, "a", "gen"),
        ProvenanceEvent(EventType.CREATE, "b", "gen"),
        ProvenanceEvent(EventType.JOIN, "j", "merge", parent_uuids=("a", "b")),
        ProvenanceEvent(EventType.FORK, "j", "split", child_uuids=("k1", "k2")),
        ProvenanceEvent(EventType.DROP, "k1", "sink"),
        ProvenanceEvent(EventType.CREATE, "x", "gen"),
    )

    def naming(uuid):
        return [e for e in events if uuid in (e.flowfile_uuid, *e.parent_uuids, *e.child_uuids)]

    view = lineage_view(compute_lineage("j", naming), 100)
    assert [n.id for n in view.nodes if n.kind == "flowfile"] == [
        "flowfile:a",
        "flowfile:b",
        "flowfile:j",
        "flowfile:k1",
        "flowfile:k2",
    ]
    assert [n.event_id for n in view.nodes if n.kind == "event"] == [1, 2, 3, 4, 5]
    assert {(link.source, link.target) for link in view.links} == {
        ("flowfile:a", "event:1"),
        ("flowfile:b", "event:2"),
        ("flowfile:a", "event:3"),
        ("flowfile:b", "event:3"),
        ("event:3", "flowfile:j"),
        ("flowfile:j", "event:4"),
        ("event:4", "flowfile:k1"),
        ("event:4", "flowfile:k2"),
        ("flowfile:k1", "event:5"),
    }
    assert not view.truncated


def test_lineage_cut_at_max_flowfiles_links_only_the_flowfiles_it_holds():
    events = numbered(ProvenanceEvent(EventType.FORK, "p", "split", child_uuids=("c1", "c2", "c3")))
    view = lineage_view(compute_lineage("p", lambda uuid: list(events), max_flowfiles=2), 2)
    kept = {n.flowfile_uuid for n in view.nodes if n.kind == "flowfile"}
    assert view.truncated and len(kept) == 3 and "p" in kept
    assert all(link.flowfile_uuid in kept for link in view.links)


def test_updated_attributes_are_the_added_changed_and_removed_ones():
    before = {"filename": "a", "path": "/in", "gone": "x"}
    after = {"filename": "a", "path": "/out", "new": "y"}
    assert updated_attributes(before, after) == {"path": "/out", "new": "y", "gone": None}
