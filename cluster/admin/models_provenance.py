"""The answers of `/api/v1/provenance/...`, and how a repository's events become them.

Times here are epoch milliseconds (int), as the repository keeps them and NiFi shows
them, with the same instant in ISO 8601 (UTC) beside each: not the UNIX seconds of
`models`, which would round an event's time.
"""

from __future__ import annotations

import datetime as dt

from pydantic import BaseModel, Field

from repositories.claims import ContentClaim
from repositories.provenance import LineageGraph, ProvenanceEvent


class ContentClaimView(BaseModel):
    """Where the FlowFile's content is: `length` bytes at `offset` of a resource."""

    container: str
    section: int
    id: str = Field(description="the resource claim's id")
    offset: int
    length: int


class ProvenanceEventView(BaseModel):
    event_id: int
    event_type: str = Field(description="NiFi's name: CREATE, RECEIVE, SEND, FORK, JOIN, CLONE, DROP, ...")
    event_time_ms: int = Field(description="when the session that made it committed, epoch ms")
    event_time: str = Field(description="the same instant, ISO 8601 in UTC")
    flowfile_uuid: str
    parent_uuids: list[str] = Field(description="a JOIN's inputs")
    child_uuids: list[str] = Field(description="a FORK's or CLONE's new FlowFiles")
    component_id: str
    component_type: str
    relationship: str | None = Field(None, description="where a ROUTE sent it")
    attributes_before: dict[str, str]
    attributes_after: dict[str, str]
    updated_attributes: dict[str, str | None] = Field(
        description="added or changed attributes with their new value; removed ones with null"
    )
    content_before: ContentClaimView | None = None
    content_after: ContentClaimView | None = None
    size: int = Field(description="bytes of content after the event")
    transit_uri: str | None = Field(None, description="where a SEND sent it, or a RECEIVE got it")
    details: str | None = None


class ProvenanceProblem(BaseModel):
    """An event that could not be read (a page's `damaged`), or a line of a stream that
    is not an event."""

    error: str = Field(description="a damaged event's block and what to do, or why the stream stopped")
    event_id: int | None = Field(None, description="the damaged event; null when the stream stopped")


class ProvenancePage(BaseModel):
    """One page of a listing, newest first. Pass `as_of` back with the next offset and
    the pages neither shift when new events arrive nor when old ones age off."""

    events: list[ProvenanceEventView]
    offset: int
    limit: int
    as_of: int | None = Field(description="the newest event id of the listing; null when it matched nothing")
    total: int = Field(
        description="events the index matched (with `as_of`): an upper bound, since it counts "
        "events aged off since they were indexed and damaged ones, which are not returned"
    )
    next_offset: int | None = Field(description="the offset of the next page; null on the last page")
    aged_off: int = Field(description="hits on this page whose event file was aged off since")
    damaged: list[ProvenanceProblem]


class LineageNode(BaseModel):
    id: str = Field(description="'flowfile:<uuid>' or 'event:<event id>'")
    kind: str = Field(description="'flowfile' or 'event'")
    flowfile_uuid: str = Field(description="the FlowFile, or the one the event belongs to")
    event_id: int | None = None
    event_type: str | None = None
    event_time_ms: int | None = None
    component_id: str | None = None


class LineageLink(BaseModel):
    source: str = Field(description="a node id")
    target: str = Field(description="a node id")
    flowfile_uuid: str = Field(description="the FlowFile that goes along the link")


class Lineage(BaseModel):
    """A FlowFile's ancestors and descendants across FORK, CLONE, JOIN and REPLAY, and
    every event of each. Links go from a FlowFile to each of its events; a FORK, CLONE,
    JOIN or REPLAY event also links on to each FlowFile it made. Full events: GET
    /api/v1/provenance/events/{event_id}."""

    root: str = Field(description="the FlowFile asked for")
    nodes: list[LineageNode]
    links: list[LineageLink]
    truncated: bool = Field(description="more FlowFiles are related than max_flowfiles; the graph stops there")
    max_flowfiles: int


def iso_time(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat(timespec="milliseconds")


def _claim(claim: ContentClaim | None) -> ContentClaimView | None:
    if claim is None:
        return None
    resource = claim.resource
    return ContentClaimView(
        container=resource.container, section=resource.section, id=resource.id, offset=claim.offset, length=claim.length
    )


def updated_attributes(before: dict[str, str], after: dict[str, str]) -> dict[str, str | None]:
    changed: dict[str, str | None] = {k: v for k, v in after.items() if before.get(k) != v}
    changed.update({k: None for k in before if k not in after})
    return changed


def event_view(event: ProvenanceEvent) -> ProvenanceEventView:
    before, after = dict(event.attributes_before), dict(event.attributes_after)
    return ProvenanceEventView(
        event_id=event.event_id,
        event_type=event.event_type.value,
        event_time_ms=event.event_time_ms,
        event_time=iso_time(event.event_time_ms),
        flowfile_uuid=event.flowfile_uuid,
        parent_uuids=list(event.parent_uuids),
        child_uuids=list(event.child_uuids),
        component_id=event.component_id,
        component_type=event.component_type,
        relationship=event.relationship,
        attributes_before=before,
        attributes_after=after,
        updated_attributes=updated_attributes(before, after),
        content_before=_claim(event.content_before),
        content_after=_claim(event.content_after),
        size=event.size,
        transit_uri=event.transit_uri,
        details=event.details,
    )


def lineage_view(graph: LineageGraph, max_flowfiles: int) -> Lineage:
    flowfiles = graph.flowfiles
    nodes = [LineageNode(id=f"flowfile:{uuid}", kind="flowfile", flowfile_uuid=uuid) for uuid in sorted(flowfiles)]
    links: list[LineageLink] = []
    made: dict[int, list[str]] = {}  # lineage event -> the FlowFiles it made
    for edge in graph.edges:
        made.setdefault(edge.event_id, []).append(edge.child_uuid)
    for event_id in sorted(graph.events):
        event = graph.events[event_id]
        node = f"event:{event_id}"
        nodes.append(
            LineageNode(
                id=node,
                kind="event",
                flowfile_uuid=event.flowfile_uuid,
                event_id=event_id,
                event_type=event.event_type.value,
                event_time_ms=event.event_time_ms,
                component_id=event.component_id,
            )
        )
        inputs = [u for u in (event.parent_uuids or (event.flowfile_uuid,)) if u not in made.get(event_id, ())]
        links += [LineageLink(source=f"flowfile:{u}", target=node, flowfile_uuid=u) for u in inputs if u in flowfiles]
        links += [
            LineageLink(source=node, target=f"flowfile:{u}", flowfile_uuid=u)
            for u in dict.fromkeys(made.get(event_id, ()))
            if u in flowfiles
        ]
    return Lineage(
        root=graph.root_uuid, nodes=nodes, links=links, truncated=graph.truncated, max_flowfiles=max_flowfiles
    )
