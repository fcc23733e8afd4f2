"""What `NodeControl` does with the flows of a node's shards: list a queue, find a
FlowFile and open its content, drop a queue, replay a provenance event, stop and
start a processor.

Each function takes the node's running engines (`ControlledNode.engines()`: shard
-> `flow.engine.TraditionalEngine`, whose graph, shard, content and committer are
the shard's own) and answers as the control does: copies of plain values, and the
errors the admin API maps (`NotFound` 404, `Conflict` 409, `Unavailable` 503).
The flow does the work (`flow.queue_inspection`, `flow.queue_drop`, `flow.replay`,
the engine's `stop_processor`); this module finds the shard, queue or processor
asked for, and says what was not found.
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass

from flow.errors import CommitError, ProcessorStateError, ReplayRefused
from flow.queue_drop import drop_queue
from flow.queue_inspection import find_flowfile
from flow.replay import replay_flowfile, replay_queue
from repositories.content.errors import ContentRepositoryError
from repositories.provenance.errors import EventNotFoundError, ProvenanceError
from repositories.storage import StorageError
from repositories.swap import SwapError

from ..errors import first_line
from .control_errors import Conflict, NotFound, Unavailable

MIME_TYPE = "mime.type"
DEFAULT_MIME_TYPE = "application/octet-stream"


@contextlib.contextmanager
def answering(what: str):
    """The flow's and the repositories' failures as the control's errors, naming `what`."""
    try:
        yield
    except (ReplayRefused, ProcessorStateError) as error:
        raise Conflict(str(error)) from None
    except EventNotFoundError as error:
        raise NotFound(first_line(error, 300)) from None
    except CommitError as error:
        raise Unavailable(f"{what}: the commit failed, nothing changed: {first_line(error, 300)}") from None
    except (ContentRepositoryError, SwapError, StorageError, ProvenanceError) as error:
        raise Unavailable(f"{what}: storage did not answer: {type(error).__name__}: {first_line(error, 300)}") from None


def engine_of(engines: dict, shard: str):
    engine = engines.get(shard)
    if engine is None:
        runs = ", ".join(sorted(engines)) or "none"
        raise NotFound(
            f"shard {shard!r} does not run on this node (it runs: {runs}); its owner's admin API "
            "answers for it (GET /api/v1/cluster names the owners)"
        )
    return engine


def queue_of(engine, shard: str, queue_id: str):
    queue = engine.graph.queues.get(queue_id)
    if queue is None:
        raise NotFound(
            f"shard {shard!r} has no queue {queue_id!r} (its queues: {', '.join(sorted(engine.graph.queues))})"
        )
    return queue


def processor_of(engine, shard: str, processor_id: str):
    if processor_id not in engine.nodes:
        raise NotFound(
            f"shard {shard!r} has no processor {processor_id!r} (its processors: {', '.join(sorted(engine.nodes))})"
        )
    return processor_id


# -- listing and looking up ---------------------------------------------------------
def list_queue(engines: dict, shard: str, queue_id: str, offset: int, limit: int, now_ms: int) -> dict:
    queue = queue_of(engine_of(engines, shard), shard, queue_id)
    page = queue.snapshot().page(offset, limit, now_ms)
    return {
        "shard": shard,
        "queue": queue_id,
        "offset": offset,
        "limit": limit,
        "listable": page.listable,
        "count": page.count,
        "bytes": page.size,
        "swapped_count": page.swapped_count,
        "swapped_bytes": page.swapped_size,
        "in_flight": page.in_flight,
        "flowfiles": [
            {"position": item.position, "penalized": item.penalized, **_flowfile_figures(item.flowfile)}
            for item in page.items
        ],
    }


def _flowfile_figures(flowfile) -> dict:
    return {
        "uuid": flowfile.id,
        "filename": flowfile.attributes.get("filename", ""),
        "size": flowfile.size,
        "entry_date_ms": flowfile.entry_date,
        "lineage_start_date_ms": flowfile.lineage_start_date,
        "penalty_expiration_ms": flowfile.penalty_expiration or None,
    }


def locate(engines: dict, uuid: str, shard: str | None = None):
    """(shard, engine, FoundFlowFile) of the FlowFile `uuid` in the shard named, or in
    any shard this node runs."""
    shards = [shard] if shard is not None else sorted(engines)
    for name in shards:
        engine = engine_of(engines, name)
        with answering(f"looking for FlowFile {uuid} in shard {name}"):
            found = find_flowfile(engine.shard, uuid)
        if found is not None:
            return name, engine, found
    where = f"shard {shard!r}" if shard is not None else f"the shards of this node ({', '.join(shards) or 'none'})"
    raise NotFound(
        f"FlowFile {uuid} is in no queue of {where}: it left the flow, is held by a running task, "
        "or is on a shard another node owns"
    )


def flowfile_details(engines: dict, uuid: str, shard: str | None, now_ms: int) -> dict:
    name, _engine, found = locate(engines, uuid, shard)
    flowfile = found.flowfile
    claim = flowfile.content_claim
    return {
        **_flowfile_figures(flowfile),
        "shard": name,
        "queue": found.queue,
        "swapped": found.swapped,
        "penalized": flowfile.penalty_expiration > now_ms,
        "attributes": dict(flowfile.attributes),
        "content_claim": None
        if claim is None
        else {
            "container": claim.resource.container,
            "section": claim.resource.section,
            "resource": claim.resource.id,
            "offset": claim.offset,
            "length": claim.length,
        },
    }


@dataclass(frozen=True)
class FlowFileContent:
    """The content of one FlowFile, to stream: `open(offset, length)` gives a binary
    stream of that slice (close it); nothing is read before."""

    uuid: str
    shard: str
    queue: str
    size: int
    mime_type: str
    filename: str
    _content: object
    _claim: object

    def open(self, offset: int = 0, length: int | None = None):
        if self._claim is None or length == 0:
            return io.BytesIO(b"")
        with answering(f"reading the content of FlowFile {self.uuid}"):
            return self._content.open_read(self._claim, offset, length)


def open_content(engines: dict, uuid: str, shard: str | None = None) -> FlowFileContent:
    name, engine, found = locate(engines, uuid, shard)
    flowfile = found.flowfile
    return FlowFileContent(
        uuid,
        name,
        found.queue,
        flowfile.size,
        flowfile.attributes.get(MIME_TYPE) or DEFAULT_MIME_TYPE,
        flowfile.attributes.get("filename", uuid),
        engine.content,
        flowfile.content_claim,
    )


# -- changing -----------------------------------------------------------------------
def drop(engines: dict, shard: str, queue_id: str, details: str) -> dict:
    engine = engine_of(engines, shard)
    queue = queue_of(engine, shard, queue_id)
    with answering(f"dropping the FlowFiles of queue {queue_id} of shard {shard}"):
        report = drop_queue(engine.shard, queue, engine.committer, details=details)
    return {
        "shard": shard,
        "queue": queue_id,
        "dropped": report.dropped,
        "dropped_bytes": report.dropped_bytes,
        "swap_files": report.swap_files,
        "swapped_dropped": report.swapped_dropped,
        "in_flight": report.in_flight,
        "remaining": report.remaining,
    }


def replay(engines: dict, provenance, event_id: int, shard: str | None, queue_id: str | None, details: str) -> dict:
    if shard is None:
        raise Conflict("this node runs no shard that takes new FlowFiles (it is starting or offloaded)")
    engine = engine_of(engines, shard)
    if provenance is None:
        raise Unavailable("the node's provenance repository is not open yet")
    with answering(f"replaying provenance event {event_id}"):
        event = provenance.get(event_id)
        queue = replay_queue(engine.graph, event, queue_id)
        flowfile = replay_flowfile(
            event,
            queue,
            committer=engine.committer,
            content=engine.content,
            shard=engine.shard,
            clock_ms=engine.clock_ms,
            details=details,
        )
    return {
        "event_id": event_id,
        "parent_uuid": event.flowfile_uuid,
        "shard": shard,
        "queue": queue.id,
        **_flowfile_figures(flowfile),
    }


def set_processor_state(engines: dict, shard: str, processor_id: str, running: bool, wait_s: float) -> dict:
    engine = engine_of(engines, shard)
    processor_of(engine, shard, processor_id)
    with answering(f"{'starting' if running else 'stopping'} processor {processor_id} of shard {shard}"):
        state = engine.start_processor(processor_id) if running else engine.stop_processor(processor_id, timeout=wait_s)
    figures = engine.status()["processors"][processor_id]
    return {"shard": shard, "processor": processor_id, "state": state, "running": figures["running"]}
