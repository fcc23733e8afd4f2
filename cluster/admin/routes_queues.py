"""Queues, FlowFiles, replay and processors of the shards this node runs.

    GET  /api/v1/queues/{shard}/{queue}/flowfiles?offset=&limit=   list a queue (read)
    POST /api/v1/queues/{shard}/{queue}/drop                        drop its FlowFiles (admin)
    GET  /api/v1/flowfiles/{uuid}?shard=                            one FlowFile (read)
    GET  /api/v1/flowfiles/{uuid}/content?shard=                    its content, streamed; Range (read)
    POST /api/v1/flowfiles/{uuid}/content/ticket?shard=             a download ticket for it (read)
    GET  /api/v1/flowfiles/{uuid}/content?ticket=&download=true     the content by ticket, no token
    POST /api/v1/provenance/events/{event_id}/replay?queue=         replay an event (admin)
    POST /api/v1/processors/{shard}/{processor}/stop?wait_s=        stop a processor (admin)
    POST /api/v1/processors/{shard}/{processor}/start               start it again (admin)
    POST /api/v1/processors/{shard}/{processor}/run-once?wait_s=    one task of a stopped one (admin)

A processor's stop and start are kept (ZooKeeper on a clustered node, a file of the
data directory on a standalone one) for every shard of the shard's node, in each of
its incarnations and wherever the shard is adopted (`cluster.core.run_states`); the
answer's `scope` says so. Run Once (NiFi's) changes no kept state: the processor
stays stopped.

Queue ids hold '/' ("generate/success/tag"): `{queue}` takes the rest of the path up
to the last segment, so the id may be written as it is or with each '/' sent as %2F.
A node answers for the shards it runs; another node's shard is a 404 that says to
ask its owner. On a node of worker processes a stop or start sent to a worker is applied
on every worker (`worker_siblings`), and the answer's `workers` says what each other
worker said.
"""

from __future__ import annotations

import logging
import re
import urllib.parse
from typing import Annotated

from fastapi import Depends, FastAPI, Header, Path, Query, Request
from fastapi.responses import StreamingResponse

from repositories.log_limits import LimitedLog

from .auth import API, AuthProblem, requires, requires_or_ticket
from .download_tickets import DownloadTickets, TicketRefused, attachment_filename
from .models_queues import (
    DownloadTicket,
    DropResult,
    FlowFileDetails,
    ProcessorState,
    QueueListing,
    ReplayResult,
)
from .ranges import RangeNotSatisfiable, parse_range
from .responses import CONTENT_ERRORS, PARAMETER_CONTROL_ERRORS, PARAMETER_LOOKUP_ERRORS, problem
from .whole_numbers import DIGITS_ONLY
from .worker_siblings import CONTROL_MARGIN_S, apply_on_siblings

log = logging.getLogger(__name__)
_refusals = LimitedLog(log)

MAX_LIMIT = 1000
MAX_POSITION = (1 << 63) - 1  # every count and id the node keeps fits a signed 64-bit integer
MAX_WAIT_S = 300.0
CHUNK = 64 * 1024  # bytes of content per chunk streamed
UUID_PATTERN = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
# A media type as a header may carry it; anything else in mime.type is served as octet-stream.
_MEDIA_TYPE = re.compile(r"^[A-Za-z0-9!#$&^_.+-]+/[A-Za-z0-9!#$&^_.+-]+(\s*;[\x20-\x7e]*)?$")

_QUEUE = Path(description="the queue's id, '/' included (as it is, or as %2F)")
_UUID = Path(pattern=UUID_PATTERN, description="the FlowFile's uuid")
_SHARD = Query(None, description="look only in this shard (default: every shard this node runs)")


def register(app: FastAPI) -> None:
    # One secret per app (so per node process): tickets die with it.
    app.state.download_tickets = DownloadTickets()
    read = [Depends(requires("read"))]
    admin = [Depends(requires("admin"))]

    @app.get(
        f"{API}/queues/{{shard}}/{{queue:path}}/flowfiles",
        response_model=QueueListing,
        tags=["queues"],
        dependencies=read,
        responses=PARAMETER_LOOKUP_ERRORS,
        summary="list a queue: its FlowFiles in the order it hands them out, a page at a time",
    )
    def list_queue(
        request: Request,
        shard: str,
        queue: str = _QUEUE,
        offset: Annotated[
            int,
            Query(ge=0, le=MAX_POSITION, description="skip this many (position offset + 1 comes first)"),
            DIGITS_ONLY,
        ] = 0,
        limit: Annotated[int, Query(ge=1, le=MAX_LIMIT, description="at most this many"), DIGITS_ONLY] = 100,
    ) -> QueueListing:
        return QueueListing(**request.app.state.control.list_queue(shard, queue, offset, limit))

    @app.post(
        f"{API}/queues/{{shard}}/{{queue:path}}/drop",
        response_model=DropResult,
        tags=["queues"],
        dependencies=admin,
        responses=PARAMETER_LOOKUP_ERRORS,
        summary="drop every FlowFile of a queue, swapped ones too (a DROP event each); "
        "FlowFiles a running task holds stay",
    )
    def drop_queue(request: Request, shard: str, queue: str = _QUEUE) -> DropResult:
        return DropResult(**request.app.state.control.drop_queue(shard, queue))

    @app.get(
        f"{API}/flowfiles/{{uuid}}",
        response_model=FlowFileDetails,
        tags=["queues"],
        dependencies=read,
        responses=PARAMETER_LOOKUP_ERRORS,
        summary="one queued FlowFile: attributes, queue, shard, content claim",
    )
    def get_flowfile(request: Request, uuid: str = _UUID, shard: str | None = _SHARD) -> FlowFileDetails:
        return FlowFileDetails(**request.app.state.control.flowfile(uuid, shard))

    @app.post(
        f"{API}/flowfiles/{{uuid}}/content/ticket",
        response_model=DownloadTicket,
        tags=["queues"],
        dependencies=read,
        responses=PARAMETER_LOOKUP_ERRORS,
        summary="a download ticket for a queued FlowFile's content (NiFi's download token): its link serves "
        "the content without a token, for 60 s",
    )
    def content_ticket(request: Request, uuid: str = _UUID, shard: str | None = _SHARD) -> DownloadTicket:
        request.app.state.control.flowfile(uuid, shard)  # 404 for one the node does not hold
        ticket = request.app.state.download_tickets.issue(uuid)
        query = {"ticket": ticket.value, "download": "true", **({"shard": shard} if shard is not None else {})}
        return DownloadTicket(
            ticket=ticket.value,
            expires_at=ticket.expires_at,
            url=f"{API.lstrip('/')}/flowfiles/{uuid}/content?{urllib.parse.urlencode(query)}",
        )

    @app.get(
        f"{API}/flowfiles/{{uuid}}/content",
        tags=["queues"],
        dependencies=[Depends(requires_or_ticket("read", _check_ticket))],
        response_class=StreamingResponse,
        responses={
            200: {
                "content": {"application/octet-stream": {}},
                "description": "the whole content; Content-Type from the mime.type attribute",
            },
            206: {"content": {"application/octet-stream": {}}, "description": "the range asked for (Content-Range)"},
            **CONTENT_ERRORS,
        },
        summary="a queued FlowFile's content, streamed; one byte range with Range: bytes=start-end",
    )
    def get_content(
        request: Request,
        uuid: str = _UUID,
        shard: str | None = _SHARD,
        range_header: str | None = Header(
            None, alias="range", description="bytes=start-end, bytes=start- or bytes=-suffix"
        ),
        download: bool = Query(
            False, description='true: Content-Disposition attachment; filename="<its filename attribute, made safe>"'
        ),
    ):
        content = request.app.state.control.open_content(uuid, shard)
        try:
            wanted = parse_range(range_header, content.size)
        except RangeNotSatisfiable as error:
            return problem(416, str(error), {"Content-Range": f"bytes */{error.size}"})
        disposition = (
            f'attachment; filename="{attachment_filename(content.filename, uuid)}"'
            if download
            else f"attachment; filename*=UTF-8''{urllib.parse.quote(content.filename)}"
        )
        headers = {
            "Accept-Ranges": "bytes",
            "Content-Disposition": disposition,
            # A FlowFile's bytes, served from the page's origin to a ticket link: never
            # run as a page of that origin (its mime.type may say text/html).
            "Content-Security-Policy": "sandbox",
            "X-Content-Type-Options": "nosniff",
        }
        media_type = content.mime_type if _MEDIA_TYPE.fullmatch(content.mime_type) else "application/octet-stream"
        if wanted is None:
            start, length, status = 0, content.size, 200
        else:
            start, length, status = wanted.start, wanted.length, 206
            headers["Content-Range"] = wanted.content_range(content.size)
        headers["Content-Length"] = str(length)
        # Opened here, not in the stream: a failure to open is still an error answer.
        stream = content.open(start, length)
        return StreamingResponse(_chunks(stream, length), status_code=status, media_type=media_type, headers=headers)

    @app.post(
        f"{API}/provenance/events/{{event_id}}/replay",
        response_model=ReplayResult,
        tags=["provenance"],
        dependencies=admin,
        responses=PARAMETER_CONTROL_ERRORS,
        summary="replay a provenance event: a new FlowFile with its attributes and content, into the queue "
        "its component reads, with a REPLAY event",
    )
    def replay(
        request: Request,
        event_id: Annotated[int, Path(ge=0, le=MAX_POSITION), DIGITS_ONLY],
        queue: str | None = Query(
            None, description="the queue to replay into, when the event's component has several incoming queues"
        ),
    ) -> ReplayResult:
        return ReplayResult(**request.app.state.control.replay(event_id, queue))

    @app.post(
        f"{API}/processors/{{shard}}/{{processor}}/stop",
        response_model=ProcessorState,
        tags=["control"],
        dependencies=admin,
        responses=PARAMETER_CONTROL_ERRORS,
        summary="stop a processor: no new task, running ones finish, then on_stopped; kept across restarts "
        "and adoptions (see scope)",
    )
    def stop_processor(
        request: Request,
        shard: str,
        processor: str,
        wait_s: float = Query(30.0, ge=0.0, le=MAX_WAIT_S, description="wait this long for its running tasks to end"),
    ):
        answer = request.app.state.control.stop_processor(shard, processor, wait_s)
        return ProcessorState(**answer, workers=_on_other_workers(request, f"stop?wait_s={wait_s!r}", wait_s))

    @app.post(
        f"{API}/processors/{{shard}}/{{processor}}/start",
        response_model=ProcessorState,
        tags=["control"],
        dependencies=admin,
        responses=PARAMETER_CONTROL_ERRORS,
        summary="start a stopped processor again (on_scheduled, then tasks as usual); kept as the stop is",
    )
    def start_processor(request: Request, shard: str, processor: str):
        answer = request.app.state.control.start_processor(shard, processor)
        return ProcessorState(**answer, workers=_on_other_workers(request, "start", 0.0))

    @app.post(
        f"{API}/processors/{{shard}}/{{processor}}/run-once",
        response_model=ProcessorState,
        tags=["control"],
        dependencies=admin,
        responses=PARAMETER_CONTROL_ERRORS,
        summary="NiFi's Run Once: one task of a stopped processor (on_scheduled, one on_trigger, on_stopped), "
        "answered once it ended; it stays stopped. 409 while it runs: stop it first",
    )
    def run_processor_once(
        request: Request,
        shard: str,
        processor: str,
        wait_s: float = Query(30.0, ge=0.0, le=MAX_WAIT_S, description="wait this long for the task to end"),
    ):
        return ProcessorState(**request.app.state.control.run_once(shard, processor, wait_s))


def _on_other_workers(request: Request, action: str, wait_s: float) -> list[dict] | None:
    """On a node of workers, the same stop or start on every other worker, with the
    caller's token (`worker_siblings`), once it was done here, each given `wait_s` and
    a few seconds more to answer; None elsewhere."""
    siblings = request.app.state.workers
    if siblings is None or siblings.index != 0:  # worker 0 fans out; the others answer for themselves
        return None
    shard, processor = (urllib.parse.quote(request.path_params[k], safe="") for k in ("shard", "processor"))
    return apply_on_siblings(
        siblings,
        f"{API}/processors/{shard}/{processor}/{action}",
        request.headers.get("authorization"),
        timeout_s=wait_s + CONTROL_MARGIN_S,
    )


def _check_ticket(request: Request, ticket: str) -> None:
    """Admit a content request by its download ticket, for the uuid of its path; one
    401 for every refusal (the reason goes to the log only)."""
    try:
        request.app.state.download_tickets.check(ticket, request.path_params.get("uuid", ""))
    except TicketRefused as refused:
        # Once per kind a while: a client may send bad tickets as fast as it likes.
        _refusals.info(refused.reason, "refused a download ticket for %s: %s", request.url.path, refused.reason)
        raise AuthProblem(401, str(refused)) from None


def _chunks(stream, remaining: int):
    """The stream's bytes, CHUNK at a time; a short stream ends the body early, which
    the server reports to the client as a broken response (never as the whole)."""
    try:
        while remaining > 0:
            chunk = stream.read(min(CHUNK, remaining))
            if not chunk:
                return
            remaining -= len(chunk)
            yield chunk
    finally:
        stream.close()
