"""Replay from a provenance event (NiFi's replay): a new FlowFile with the event's
attributes and a copy of its content, in the queue the event's FlowFile came from,
committed durably with a REPLAY event whose parent is the original."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest

from flow.commit import DurableCommitter
from flow.errors import ReplayRefused
from flow.queue import FlowFileQueue
from flow.queue_drop import drop_queue
from flow.replay import replay_flowfile, replay_queue
from repositories.provenance import EventType, ProvenanceEvent
from tests.durable_shard import QUEUE, DurableShard, RecordedProvenance
from tests.storage_faults import FaultyStorage, UnbufferedLocalStorage


@pytest.fixture
def durable(tmp_path):
    made = DurableShard(FaultyStorage(UnbufferedLocalStorage()), str(tmp_path / "shard"), str(tmp_path / "content"))
    yield made
    made.close()


def dropped_event(durable, events, payload=b"the original bytes"):
    """A FlowFile queued, then dropped: its DROP event (id 41), as provenance would hand it out."""
    session = durable.session()
    flowfile = session.write_bytes(session.create(attributes={"mime.type": "text/plain", "k": "v"}), payload)
    session.transfer(flowfile, "success")
    session.commit()
    drop_queue(durable.shard, durable.queue, DurableCommitter(durable.shard, durable.content, events))
    [event] = [e for e in events.events if e.event_type is EventType.DROP]
    return dataclasses.replace(event, event_id=41)


def replay(durable, event, events):
    committer = DurableCommitter(durable.shard, durable.content, events)
    return replay_flowfile(
        event,
        durable.queue,
        committer=committer,
        content=durable.content,
        shard=durable.shard,
        clock_ms=durable.clock_ms,
    )


def test_a_replay_is_a_new_flowfile_with_the_events_attributes_and_content_and_a_replay_event(durable):
    events = RecordedProvenance()
    original = dropped_event(durable, events)
    replayed = replay(durable, original, events)
    assert replayed.id != original.flowfile_uuid and replayed.queue == QUEUE
    assert replayed.attributes == dict(original.attributes_before)
    assert replayed.content_claim != original.content_before, "a copy, not the event's claim"
    assert durable.content.read(replayed.content_claim) == b"the original bytes" and replayed.size == 18
    assert durable.queue.count == 1 and durable.queue.find(replayed.id) == replayed
    replay_events = [e for e in events.events if e.event_type is EventType.REPLAY]
    assert [(e.flowfile_uuid, e.parent_uuids, e.child_uuids, e.component_id) for e in replay_events] == [
        (replayed.id, (original.flowfile_uuid,), (replayed.id,), QUEUE)
    ]
    assert [e.event_type for e in events.events if e.flowfile_uuid == replayed.id] == [EventType.REPLAY]
    durable.collect()  # the original's content goes; the replay's stays
    durable.restart()
    assert durable.live() == {replayed.id: b"the original bytes"}


def test_a_replay_whose_content_is_gone_is_refused_and_leaves_nothing(durable):
    events = RecordedProvenance()
    original = dropped_event(durable, events)
    durable.collect()  # no archive: the dropped content is destroyed
    with pytest.raises(ReplayRefused, match="event 41: its content .* is no longer available"):
        replay(durable, original, events)
    assert durable.queue.count == 0 and durable.records() == {}
    assert not [e for e in events.events if e.event_type is EventType.REPLAY]


def test_the_replay_is_of_the_flowfile_as_the_component_received_it(durable):
    """Attributes and content from before the event; after it only when it records nothing before."""
    before, after = durable.content.write_bytes(b"input"), durable.content.write_bytes(b"output")
    changed = ProvenanceEvent(
        EventType.CONTENT_MODIFIED,
        "u1",
        "rewrite",
        attributes_before={"a": "in"},
        attributes_after={"a": "out"},
        content_before=before,
        content_after=after,
        event_id=3,
    )
    cloned = ProvenanceEvent(
        EventType.CLONE,
        "u2",
        "copy",
        child_uuids=("u3",),
        attributes_after={"a": "out"},
        content_after=after,
        event_id=4,
    )
    first, second = (replay(durable, event, RecordedProvenance()) for event in (changed, cloned))
    assert (first.attributes["a"], durable.content.read(first.content_claim)) == ("in", b"input")
    assert (second.attributes["a"], durable.content.read(second.content_claim)) == ("out", b"output")


def graph_of(incoming: dict[str, list[str]]):
    queues = {queue_id: FlowFileQueue(queue_id) for ids in incoming.values() for queue_id in ids}
    return SimpleNamespace(queues=queues, incoming={p: [queues[q] for q in ids] for p, ids in incoming.items()})


@pytest.mark.parametrize(
    "component,queue_id,answer",
    [
        ("one", None, "a"),
        ("a", None, "a"),  # a queue's own event (a drop): that queue
        ("two", "c", "c"),
        ("two", None, "several incoming queues \\(b, c\\)"),
        ("two", "a", "queue 'a' does not lead into 'two'"),
        ("source", None, "no incoming queue \\(it is a source\\)"),
        ("gone", None, "neither a processor nor a connection"),
    ],
)
def test_the_queue_a_replay_goes_into(component, queue_id, answer):
    graph = graph_of({"one": ["a"], "two": ["b", "c"], "source": []})
    event = ProvenanceEvent(EventType.DROP, "u1", component, event_id=9)
    if len(answer) == 1:
        assert replay_queue(graph, event, queue_id).id == answer
    else:
        with pytest.raises(ReplayRefused, match=f"provenance event 9 .*{answer}"):
            replay_queue(graph, event, queue_id)
