"""`/api/v1/provenance/...`: the chain of custody of FlowFiles, from this node's
provenance repository.

A node answers from its own local repository: the events of the shards it ran, its
home shard and the ones it adopted (an adopted shard's reconciled outbox events are
registered here when it recovers). Another node's events are on that node. An event
is found once its journal has rolled over and its event file is indexed (seconds:
the rollover policy of the node).

Listings are newest first, by event id. A page is `offset` events on, `limit` at
most; its answer names `as_of`, the newest event id of the listing, and a client
that passes `as_of` back gets pages that neither shift when new events arrive nor
when old ones age off (see `repositories.provenance.query`). The NDJSON variant
streams the whole listing, a batch of `STREAM_BATCH` events at a time, each batch a
query of its own below the last one: memory is a batch, whatever the listing's size,
and no lock of the repository is held while a batch goes to the client.

Work per request is small: the routes are sync, so they run in the server's thread
pool, not in its event loop, and each query reads at most one page or batch.
"""

from __future__ import annotations

import dataclasses
import enum
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

from fastapi import Depends, FastAPI, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import StreamingResponse

from repositories.provenance import EventNotFoundError, ProvenanceError, ProvenanceQuery, QueryResult
from repositories.provenance.query import NIFI_EVENT_TYPES, parse_time

from ..errors import first_line
from ..node.control import NotFound, Unavailable
from .auth import API, requires
from .models_provenance import (
    Lineage,
    LineageGraphView,
    ProvenanceEventView,
    ProvenancePage,
    ProvenanceProblem,
    event_view,
    lineage_graph_view,
    lineage_view,
)
from .responses import PARAMETER_LOOKUP_ERRORS, QUERY_ERRORS, as_json
from .whole_numbers import DIGITS_ONLY

log = logging.getLogger(__name__)

MAX_PAGE = 1000
MAX_OFFSET = 100_000  # deeper: pass as_of = the last event id seen - 1, and offset 0
STREAM_BATCH = 500
MAX_LINEAGE_FLOWFILES = 10_000
# A drawing of more FlowFiles is no longer read by anyone, and its layout (crossings
# counted between columns) grows with the square of a column's size.
MAX_DRAWN_FLOWFILES = 500
_RELATED = "related FlowFiles at most; `truncated` says when there are more"
LineageAtMost = Annotated[int, Query(ge=1, le=MAX_LINEAGE_FLOWFILES, description=_RELATED), DIGITS_ONLY]
DrawnLineageAtMost = Annotated[int, Query(ge=1, le=MAX_DRAWN_FLOWFILES, description=_RELATED), DIGITS_ONLY]
# The index keeps event ids and times as 64-bit integers (ids unsigned, times signed
# milliseconds), and its filters fail on a larger number: one is a 422 here. Ids count
# events, so no real one passes 2**63 - 1, the bound every number of the API shares.
MAX_EVENT_ID = (1 << 63) - 1

_TIME_FORMS = (
    "an RFC 3339 date-time (e.g. 2024-05-01T12:00:00Z), epoch milliseconds (at most 18 digits), "
    "or 15m/2h/3d ago (at most 11 digits before the unit)"
)
# Numbers of these many digits stay within signed 64-bit milliseconds (10**18 ms; 10**11
# days ago), so the index's filters take every time the patterns admit.
_EPOCH_MS = re.compile(r"^0*[0-9]{1,18}$")
_AGO = re.compile(r"^0*[0-9]{1,11}(\.[0-9]+)?[smhd]$")
_DIGITS, _ANY_AGO = re.compile(r"^[0-9]+$"), re.compile(r"^[0-9]+(\.[0-9]+)?[smhd]$")
# The spec says exactly what a time bound may be, and `time_bound` reads exactly that.
_TIME_SCHEMA = {
    "anyOf": [
        {"type": "string", "format": "date-time"},
        {"type": "string", "pattern": _EPOCH_MS.pattern},
        {"type": "string", "pattern": _AGO.pattern},
    ]
}
EventTypeName = enum.Enum("EventTypeName", {name: name for name in NIFI_EVENT_TYPES}, type=str)


class NDJSONResponse(StreamingResponse):
    media_type = "application/x-ndjson"


def _invalid(parameter: str, message: str) -> RequestValidationError:
    return RequestValidationError([{"loc": ("query", parameter), "msg": message, "type": "value_error"}])


def event_query(
    uuid: str | None = Query(
        None,
        description="FlowFile uuid: its own events, and the FORK, CLONE or JOIN "
        "events that name it as a parent or child",
    ),
    filename: str | None = Query(None, description="the FlowFile's filename attribute"),
    component: str | None = Query(None, description="processor id"),
    relationship: str | None = Query(None, description="where a ROUTE event sent the FlowFile"),
    type: EventTypeName | None = Query(
        None, description="event type, one of NiFi's (FETCH and ADDINFO are never recorded here and match nothing)"
    ),
    start: str | None = Query(None, description=f"events at or after: {_TIME_FORMS}", json_schema_extra=_TIME_SCHEMA),
    end: str | None = Query(None, description=f"events at or before: {_TIME_FORMS}", json_schema_extra=_TIME_SCHEMA),
) -> ProvenanceQuery:
    """The filters both listings share, read into a query (422 naming a bad one)."""
    # An empty filter is an absent one (as a form sends it, and a client its null); an
    # empty time bound is no time (422).
    uuid, filename, component, relationship = (value or None for value in (uuid, filename, component, relationship))
    bounds: dict[str, int | None] = {"start": None, "end": None}
    for name, text in (("start", start), ("end", end)):
        if text is not None:
            bounds[name] = time_bound(name, text)
    # An end before the start is an empty range: it matches nothing (no error: the spec cannot say it).
    kind = type.value if type is not None else None
    return ProvenanceQuery(
        event_type=kind,
        flowfile_uuid=uuid,
        filename=filename,
        component_id=component,
        relationship=relationship,
        start_ms=bounds["start"],
        end_ms=bounds["end"],
    )


def time_bound(name: str, text: str, *, now: float | None = None) -> int:
    """Epoch milliseconds of a time bound, as `_TIME_SCHEMA` admits it; 422 naming
    `name` for one it does not: one it cannot read, or a number of more digits than it
    allows, past what the index's signed 64-bit milliseconds hold (where `parse_time`
    would fail, on `99999999999999999999d` ago)."""
    if _DIGITS.match(text):
        if not _EPOCH_MS.match(text):
            raise _invalid(
                name,
                f"{text[:40]!r} is past the latest time the index holds: epoch milliseconds have at most 18 digits",
            )
        text = text.lstrip("0") or "0"  # however many zeros lead, never more than 18 digits to convert
    elif _ANY_AGO.match(text) and not _AGO.match(text):
        raise _invalid(
            name, f"{text[:40]!r} reaches before the earliest time the index holds: at most 11 digits before the unit"
        )
    try:
        return parse_time(text, now=now, strict=True)
    except ValueError as error:
        raise _invalid(name, str(error)) from None


def _lineage(control, uuid: str, max_flowfiles: int):
    """The lineage of `uuid` in this node's repository; NotFound when no event names it."""
    with _repository(control) as repository:
        graph = repository.lineage(uuid, max_flowfiles=max_flowfiles)
    if not graph.events:
        raise NotFound(f"no provenance event names FlowFile {uuid} on node {control.name}")
    return graph


@contextmanager
def _repository(control):
    """The node's provenance repository, with its errors as the API's: an unknown id
    is NotFound (404), a closed repository or a damaged file Unavailable (503)."""
    repository = control.provenance
    if repository is None:
        raise Unavailable(
            f"the provenance repository of node {control.name} is not open (the node is {control.state()})"
        )
    try:
        yield repository
    except EventNotFoundError as error:
        raise NotFound(f"{error} (on node {control.name})") from None
    except ProvenanceError as error:
        raise Unavailable(f"the provenance repository of node {control.name}: {first_line(error, 300)}") from None


def listing_batches(repository, query: ProvenanceQuery, limit: int | None) -> Iterator[QueryResult]:
    """The listing of `query` (pinned by its `max_event_id`, if any), newest first, in
    queries of at most STREAM_BATCH events: each asks below the last hit of the one
    before, so no batch depends on the client's pace and none is kept."""
    sent = 0
    while limit is None or sent < limit:
        asked = STREAM_BATCH if limit is None else min(STREAM_BATCH, limit - sent)
        result = repository.query(dataclasses.replace(query, limit=asked, offset=0))
        yield result
        sent += len(result.events)
        if result.hits < asked:
            return
        query = dataclasses.replace(query, max_event_id=result.last_hit_id - 1)


def _ndjson(result: QueryResult) -> bytes:
    lines = [event_view(event).model_dump_json() for event in result.events]
    lines += [
        ProvenanceProblem(error=message, event_id=event_id).model_dump_json() for event_id, message in result.errors
    ]
    return "".join(line + "\n" for line in lines).encode()


def _streamed(first: QueryResult, rest: Iterator[QueryResult], node: str) -> Iterator[bytes]:
    yield _ndjson(first)
    try:
        for result in rest:
            yield _ndjson(result)
    except Exception as error:  # noqa: BLE001 - the status line is sent: say so in the stream
        log.exception("provenance stream of node %s stopped", node)
        stopped = ProvenanceProblem(error=f"the stream stopped: {first_line(error, 300)}")
        yield (stopped.model_dump_json() + "\n").encode()


def register(app: FastAPI) -> None:
    read = [Depends(requires("read"))]

    @app.get(
        f"{API}/provenance/events",
        response_model=ProvenancePage,
        tags=["provenance"],
        dependencies=read,
        responses=QUERY_ERRORS,
        summary="events by FlowFile, filename, component, type and time; newest first",
    )
    def list_events(
        request: Request,
        query: ProvenanceQuery = Depends(event_query),
        offset: Annotated[
            int,
            Query(
                ge=0,
                le=MAX_OFFSET,
                description="events of the listing to pass over; deeper than "
                f"{MAX_OFFSET}: as_of = the last event id seen - 1",
            ),
            DIGITS_ONLY,
        ] = 0,
        limit: Annotated[int, Query(ge=1, le=MAX_PAGE, description="events at most"), DIGITS_ONLY] = 100,
        as_of: Annotated[
            int | None,
            Query(
                ge=0,
                le=MAX_EVENT_ID,
                description="the as_of of the listing's first page: the newest event id the pages show",
            ),
            DIGITS_ONLY,
        ] = None,
    ):
        """A page of the listing, newest first (see `ProvenancePage`). This node's own
        events only: its shards, adopted ones included; others are on their nodes."""
        control = request.app.state.control
        with _repository(control) as repository:
            result = repository.query(dataclasses.replace(query, offset=offset, limit=limit, max_event_id=as_of))
        covered = offset + result.hits
        return ProvenancePage(
            events=[event_view(event) for event in result.events],
            offset=offset,
            limit=limit,
            as_of=as_of if as_of is not None else result.newest_hit_id,
            total=result.total,
            next_offset=covered if result.hits and covered < result.total else None,
            aged_off=result.skipped_missing,
            damaged=[ProvenanceProblem(error=message, event_id=event_id) for event_id, message in result.errors],
        )

    @app.get(
        f"{API}/provenance/events.ndjson",
        response_class=NDJSONResponse,
        tags=["provenance"],
        dependencies=read,
        responses={
            200: {
                "description": "one JSON object a line, newest first: an event, or a line with "
                "`error`: a damaged event's, or why the stream stopped",
                "content": {
                    NDJSONResponse.media_type: {
                        "itemSchema": {
                            "anyOf": [
                                {"$ref": "#/components/schemas/ProvenanceEventView"},
                                {"$ref": "#/components/schemas/ProvenanceProblem"},
                            ]
                        }
                    }
                },
            },
            **as_json(QUERY_ERRORS),
        },
        summary="every event of the listing, streamed as newline-delimited JSON",
    )
    def stream_events(
        request: Request,
        query: ProvenanceQuery = Depends(event_query),
        limit: Annotated[
            int | None,
            Query(ge=1, le=MAX_EVENT_ID, description="events at most (no bound when absent)"),
            DIGITS_ONLY,
        ] = None,
        as_of: Annotated[
            int | None, Query(ge=0, le=MAX_EVENT_ID, description="events up to this id"), DIGITS_ONLY
        ] = None,
    ):
        """The whole listing of the same filters, newest first, read a batch at a
        time as the client takes it. This node's own events only (see /events)."""
        control = request.app.state.control
        with _repository(control) as repository:
            batches = listing_batches(repository, dataclasses.replace(query, max_event_id=as_of), limit)
            first = next(batches)  # before the status line: an error here is still answered with its status
        return NDJSONResponse(_streamed(first, batches, control.name))

    @app.get(
        f"{API}/provenance/events/{{event_id}}",
        response_model=ProvenanceEventView,
        tags=["provenance"],
        dependencies=read,
        responses=PARAMETER_LOOKUP_ERRORS,
        summary="one event, every field",
    )
    def get_event(
        request: Request, event_id: Annotated[int, Path(ge=0, le=MAX_EVENT_ID), DIGITS_ONLY]
    ) -> ProvenanceEventView:
        """An event of this node's repository by id (ids are the node's own)."""
        with _repository(request.app.state.control) as repository:
            return event_view(repository.get(event_id))

    @app.get(
        f"{API}/provenance/lineage/{{uuid}}",
        response_model=Lineage,
        tags=["provenance"],
        dependencies=read,
        responses=PARAMETER_LOOKUP_ERRORS,
        summary="a FlowFile's ancestors, descendants and their events",
    )
    def get_lineage(
        request: Request,
        uuid: str,
        max_flowfiles: LineageAtMost = 1000,
    ) -> Lineage:
        """The lineage as this node's repository knows it: a FlowFile whose parents or
        children were on another node's shards shows only the part that ran here."""
        return lineage_view(_lineage(request.app.state.control, uuid, max_flowfiles), max_flowfiles)

    @app.get(
        f"{API}/provenance/lineage/{{uuid}}/graph",
        response_model=LineageGraphView,
        tags=["provenance"],
        dependencies=read,
        responses=PARAMETER_LOOKUP_ERRORS,
        summary="a FlowFile's lineage laid out to be drawn: FlowFiles and events in layers, oldest first",
    )
    def get_lineage_graph(
        request: Request,
        uuid: str,
        max_flowfiles: DrawnLineageAtMost = 200,
    ) -> LineageGraphView:
        """The lineage of /lineage/{uuid} as the status page draws it (as NiFi's lineage
        view): each FlowFile's events chained in time order, parent -> child edges."""
        return lineage_graph_view(_lineage(request.app.state.control, uuid, max_flowfiles), max_flowfiles)
