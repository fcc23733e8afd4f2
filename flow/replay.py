"""Replaying a FlowFile from a provenance event, as NiFi's provenance view offers it.

    queue = replay_queue(graph, event)               # where it goes; ReplayRefused if nowhere
    flowfile = replay_flowfile(event, queue, committer=..., content=..., shard=..., clock_ms=...)

As NiFi does, the replay is a new FlowFile (a new uuid) made of the FlowFile as the
event's component received it: the event's attributes and content from before the
event (those after it when the event records none before, as a CLONE does), put
into the queue it came from: the component's incoming queue, or the queue itself
for an event a queue recorded (a drop). It is committed by a session of the event's
component through the shard's committer (content durable, one WAL transaction, a
REPLAY event whose parent is the original FlowFile and whose child is the new one).

The content is copied into a new claim, streamed, never shared with the event's claim:
that claim may be archived (no claimant left), about to be aged off, or on a shard
this node does not own any more, and a copy depends on none of them. The new
FlowFile's lineage starts at the replay (events do not record the original start).

`ReplayRefused` says why a replay cannot be done (the content is gone, the component
has no incoming queue or several); an unreachable content replica raises the content
repository's `ContentUnavailable` as it is (an outage, not a refusal).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from repositories.content.errors import ContentRepositoryError, ContentUnavailable

from .errors import ReplayRefused
from .flowfile import FlowFile
from .session import ProcessSession

if TYPE_CHECKING:
    from repositories.content import ContentStore

RELATIONSHIP = "replay"  # the session's one relationship: into the chosen queue


def replay_queue(graph, event, queue_id: str | None = None):
    """The queue a replay of `event` goes into (`queue_id` chooses among several)."""
    component = event.component_id
    what = f"provenance event {event.event_id} ({event.event_type.value} by {component!r})"
    if component in graph.queues:
        candidates = [graph.queues[component]]
    elif component in graph.incoming:
        candidates = list(graph.incoming[component])
    else:
        raise ReplayRefused(
            f"{what}: {component!r} is neither a processor nor a connection of the flow this "
            "shard runs, so there is no queue to replay into"
        )
    if queue_id is not None:
        chosen = [queue for queue in candidates if queue.id == queue_id]
        if not chosen:
            raise ReplayRefused(
                f"{what}: queue {queue_id!r} does not lead into {component!r} (its incoming "
                f"queues: {', '.join(q.id for q in candidates) or 'none'})"
            )
        return chosen[0]
    if not candidates:
        raise ReplayRefused(
            f"{what}: {component!r} has no incoming queue (it is a source); a replay goes into "
            "the queue the FlowFile came from"
        )
    if len(candidates) > 1:
        raise ReplayRefused(
            f"{what}: {component!r} has several incoming queues "
            f"({', '.join(q.id for q in candidates)}); say which one to replay into"
        )
    return candidates[0]


def replay_flowfile(
    event, queue, *, committer, content: ContentStore, shard, clock_ms: Callable[[], int], details: str | None = None
) -> FlowFile:
    """Commit the replay of `event` into `queue`; returns the new FlowFile as queued."""
    if event.attributes_before:
        attributes, claim = event.attributes_before, event.content_before
    else:
        attributes, claim = event.attributes_after, event.content_after
    session = ProcessSession(
        component_id=event.component_id,
        component_type=event.component_type,
        committer=committer,
        content=content,
        shard=shard,
        outgoing={RELATIONSHIP: [queue]},
        clock_ms=clock_ms,
    )
    try:
        flowfile = session.create(attributes=dict(attributes))
        if claim is not None:
            try:
                with content.open_read(claim) as stream:
                    flowfile = session.import_from(flowfile, stream)
            except ContentUnavailable:
                raise
            except ContentRepositoryError as error:
                raise ReplayRefused(
                    f"provenance event {event.event_id}: its content ({claim.length} bytes at {claim.offset} of "
                    f"{claim.resource.relative_path}) is no longer available: "
                    f"{str(error).splitlines()[0][:300]}"
                ) from None
        session.replay(flowfile, event.flowfile_uuid, details or f"Replay of provenance event {event.event_id}")
        session.transfer(flowfile, RELATIONSHIP)
    except BaseException:
        session.rollback()
        raise
    session.commit()
    return flowfile.in_queue(queue.id)
