"""The lineage of a FlowFile: its ancestors and descendants across FORK, CLONE and JOIN.

Relations follow NiFi's events: FORK and CLONE belong to the parent FlowFile and list
the new FlowFiles as children; JOIN belongs to the new FlowFile and lists its inputs
as parents; REPLAY links a replayed FlowFile to the original. Walking up follows
events that name the FlowFile as a child, walking down follows events that name it as
a parent. `compute_lineage` is pure: it is given a function that returns every event
naming a uuid (the index's uuid field holds own, parent and child uuids).
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from .event import LINEAGE_TYPES, ProvenanceEvent


@dataclass(frozen=True, slots=True)
class LineageEdge:
    parent_uuid: str
    child_uuid: str
    event_id: int
    event_type: str


@dataclass
class LineageGraph:
    root_uuid: str
    ancestors: set[str] = field(default_factory=set)
    descendants: set[str] = field(default_factory=set)
    edges: list[LineageEdge] = field(default_factory=list)
    events: dict[int, ProvenanceEvent] = field(default_factory=dict)
    truncated: bool = False  # stopped at max_flowfiles

    @property
    def flowfiles(self) -> set[str]:
        return {self.root_uuid} | self.ancestors | self.descendants

    def events_of(self, uuid: str) -> list[ProvenanceEvent]:
        return sorted((e for e in self.events.values() if e.flowfile_uuid == uuid), key=lambda e: e.event_id)

    def to_dict(self) -> dict:
        return {
            "root": self.root_uuid,
            "ancestors": sorted(self.ancestors),
            "descendants": sorted(self.descendants),
            "edges": [
                {"parent": e.parent_uuid, "child": e.child_uuid, "event_id": e.event_id, "event_type": e.event_type}
                for e in self.edges
            ],
            "events": [self.events[k].to_dict() for k in sorted(self.events)],
            "truncated": self.truncated,
        }


def _parents(e: ProvenanceEvent) -> tuple[str, ...]:
    # A FORK or CLONE without explicit parents belongs to its parent FlowFile.
    return e.parent_uuids or (e.flowfile_uuid,)


def _children(e: ProvenanceEvent) -> tuple[str, ...]:
    # A JOIN without explicit children belongs to the FlowFile it created.
    return e.child_uuids or (e.flowfile_uuid,)


def compute_lineage(
    root_uuid: str, events_naming: Callable[[str], Iterable[ProvenanceEvent]], *, max_flowfiles: int = 10_000
) -> LineageGraph:
    graph = LineageGraph(root_uuid)
    seen_edges: set[tuple[str, str, int]] = set()
    fetched: dict[str, list[ProvenanceEvent]] = {}

    def naming(uuid: str) -> list[ProvenanceEvent]:
        if uuid not in fetched:
            fetched[uuid] = list(events_naming(uuid))
            for e in fetched[uuid]:
                if e.flowfile_uuid == uuid or e.event_type in LINEAGE_TYPES:
                    graph.events[e.event_id] = e
        return fetched[uuid]

    def edge(parent: str, child: str, event: ProvenanceEvent) -> None:
        key = (parent, child, event.event_id)
        if key not in seen_edges:
            seen_edges.add(key)
            graph.edges.append(LineageEdge(parent, child, event.event_id, event.event_type.value))

    def parents_of(uuid: str) -> list[tuple[str, ProvenanceEvent]]:
        out = []
        for e in naming(uuid):
            if e.event_type in LINEAGE_TYPES and uuid in _children(e):
                out += [(p, e) for p in _parents(e) if p != uuid]
        return out

    def children_of(uuid: str) -> list[tuple[str, ProvenanceEvent]]:
        out = []
        for e in naming(uuid):
            if e.event_type in LINEAGE_TYPES and uuid in _parents(e):
                out += [(c, e) for c in _children(e) if c != uuid]
        return out

    for direction, found in (("up", graph.ancestors), ("down", graph.descendants)):
        queue = deque([root_uuid])
        while queue:
            uuid = queue.popleft()
            step = parents_of(uuid) if direction == "up" else children_of(uuid)
            for other, event in step:
                if direction == "up":
                    edge(other, uuid, event)
                else:
                    edge(uuid, other, event)
                if other in found or other == root_uuid:
                    continue
                if len(graph.ancestors) + len(graph.descendants) >= max_flowfiles:
                    graph.truncated = True
                    continue
                found.add(other)
                queue.append(other)
    # Every event of each FlowFile in the graph, so the graph shows what happened to it.
    for uuid in graph.flowfiles:
        naming(uuid)
    return graph


# Event ids are unique within one repository only: across several, each one's ids
# are moved into a range of their own while the lineage is walked.
_ID_RANGE = 1 << 48


def lineage_across(
    repositories: Mapping[str, object], root_uuid: str, *, max_flowfiles: int = 10_000
) -> tuple[LineageGraph, set[tuple[str, int]]]:
    """The lineage of `root_uuid` over several nodes' repositories at once (name ->
    repository), as one repository would find it if it held every node's events: a
    FlowFile created on one node and finished on another after a failover is one
    lineage. Returns the graph (its event ids moved into a range per repository) and
    the (repository name, event id) of each of its events."""
    from .query import ProvenanceQuery

    names = sorted(repositories)

    def naming(uuid: str) -> list[ProvenanceEvent]:
        found = []
        for index, name in enumerate(names):
            result = repositories[name].query(ProvenanceQuery(flowfile_uuid=uuid, limit=max_flowfiles))
            found += [dataclasses.replace(e, event_id=e.event_id + index * _ID_RANGE) for e in result.events]
        return found

    graph = compute_lineage(root_uuid, naming, max_flowfiles=max_flowfiles)
    return graph, {(names[i // _ID_RANGE], i % _ID_RANGE) for i in graph.events}
