"""A FlowFile's lineage as a graph to draw, in the manner of NiFi's lineage view: a
pure function of the repository's `LineageGraph`, laid out by
`cluster.admin.flow_layout` (the layered layout the flow's drawing uses).

What is drawn, and why. Both FlowFiles and events are nodes, as in NiFi's view:

* each FlowFile is a node where its history starts (its uuid, its filename);
* each event is a node (its type, component and time), and a FlowFile's events are
  chained in the order they happened (time, then event id): a FlowFile's node, its
  first event, its next, ... So a FlowFile reads as one row of steps from left to
  right, and its steps can be told apart; drawing FlowFiles only (events as edge
  labels) would hide every event that links no FlowFiles, which is most of them,
  and drawing events only would leave a FORK's children without a place where their
  own history starts.
* a FORK, CLONE or REPLAY event goes on to the node of each FlowFile it made (the
  parent -> child edges); a JOIN event is reached from the last step of each of its
  parents and goes on to the node of the FlowFile it made. These are the
  `lineage` edges; the others are `history` edges.

Layers are the flow layout's: the longest path from the sources, so every edge goes
from an older column to a newer one, oldest on the left. Times from different nodes
can disagree (a shard adopted after a failover brings its dead owner's last events,
stamped by that node's clock): the chain of one FlowFile follows the times, and a
cycle that a skewed clock could make is broken by the layout as a back edge.

A node's repository holds the events of every shard it ran, adopted ones included,
so a FlowFile whose shard failed over shows its hops from before the failover (as
far as the adopted provenance outbox kept them) and after, as the repository's
lineage finds them: this module draws every event and FlowFile it is given.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from repositories.provenance import LineageGraph, ProvenanceEvent
from repositories.provenance.event import LINEAGE_TYPES

from .flow_layout import FlowLayout, LayoutEdge, layout

HISTORY, LINEAGE = "history", "lineage"


def flowfile_node(uuid: str) -> str:
    return f"flowfile:{uuid}"


def event_node(event_id: int) -> str:
    return f"event:{event_id}"


@dataclass(frozen=True)
class LineageLink:
    """An edge of the drawing: `kind` is HISTORY (a FlowFile's next step) or LINEAGE
    (a parent's step to the FlowFile it made, or to the JOIN that made one)."""

    source: str
    target: str
    kind: str
    flowfile_uuids: tuple[str, ...]  # the FlowFiles that go along it

    @property
    def id(self) -> str:
        return f"{self.source}>{self.target}"


@dataclass(frozen=True)
class LineageDrawing:
    nodes: tuple[str, ...]  # flowfile:<uuid> and event:<id>, in the order they are met
    links: tuple[LineageLink, ...]
    layout: FlowLayout


def _inputs(event: ProvenanceEvent) -> tuple[str, ...]:
    # As `repositories.provenance.lineage` reads NiFi's events: a FORK or CLONE without
    # explicit parents belongs to its parent, a JOIN without children to its child.
    return event.parent_uuids or (event.flowfile_uuid,)


def _outputs(event: ProvenanceEvent) -> tuple[str, ...]:
    return event.child_uuids or (event.flowfile_uuid,)


def chronological(events: Iterable[ProvenanceEvent]) -> list[ProvenanceEvent]:
    return sorted(events, key=lambda e: (e.event_time_ms or 0, e.event_id or 0))


def lineage_links(events: Iterable[ProvenanceEvent], flowfiles: set[str]) -> tuple[list[str], list[LineageLink]]:
    """The nodes and edges of the drawing of `events` whose FlowFiles are `flowfiles`
    (FlowFiles outside it, past a truncated lineage, get no node)."""
    nodes: dict[str, None] = {}
    links: dict[tuple[str, str], LineageLink] = {}
    last: dict[str, str] = {}  # FlowFile -> the node its history reached so far

    def link(source: str, target: str, kind: str, uuid: str) -> None:
        known = links.get((source, target))
        if known is None:
            links[(source, target)] = LineageLink(source, target, kind, (uuid,))
        elif uuid not in known.flowfile_uuids:
            lineage = LINEAGE if LINEAGE in (kind, known.kind) else HISTORY
            links[(source, target)] = LineageLink(source, target, lineage, (*known.flowfile_uuids, uuid))

    def reached(uuid: str) -> str:
        # Where a FlowFile's next step links from: its last step, or its own node.
        if uuid not in last:
            last[uuid] = flowfile_node(uuid)
            nodes.setdefault(last[uuid])
        return last[uuid]

    for event in chronological(events):
        node = event_node(event.event_id or 0)
        if event.event_type in LINEAGE_TYPES:
            inputs = [u for u in _inputs(event) if u in flowfiles]
            made = [u for u in _outputs(event) if u in flowfiles and u not in inputs]
            # A JOIN is its child's own event, reached from its parents: its inputs.
            for uuid in inputs:
                link(reached(uuid), node, HISTORY if uuid == event.flowfile_uuid else LINEAGE, uuid)
            nodes.setdefault(node)
            for uuid in inputs:
                last[uuid] = node
            for uuid in made:
                child = flowfile_node(uuid)
                nodes.setdefault(child)
                link(node, child, LINEAGE, uuid)
                last.setdefault(uuid, child)
        else:
            uuid = event.flowfile_uuid
            source = reached(uuid) if uuid in flowfiles else None
            nodes.setdefault(node)
            if source is not None:
                link(source, node, HISTORY, uuid)
                last[uuid] = node
    for uuid in sorted(flowfiles):  # a FlowFile with no event here still has its node
        nodes.setdefault(flowfile_node(uuid))
    return list(nodes), list(links.values())


def lineage_drawing(graph: LineageGraph) -> LineageDrawing:
    """Every event and FlowFile of `graph`, with their edges, placed in layers from the
    oldest to the newest."""
    nodes, links = lineage_links(graph.events.values(), graph.flowfiles)
    placed = layout(nodes, [LayoutEdge(link.id, link.source, link.target) for link in links])
    return LineageDrawing(tuple(nodes), tuple(links), placed)
