"""The `--events` stream: kinds are typed in the process (`NodeEvent`) and the lines on
the wire are what they were when kinds were strings, which drills and operators'
scripts read."""

import io
import json

from cluster.node.events import JsonEvents, NodeEvent

# Every kind as the wire has always spelled it (a drill compares the JSON to these).
WIRE = [
    "starting",
    "start-failed",
    "connected",
    "joined",
    "dead",
    "offloaded",
    "adopted",
    "retired",
    "leader",
    "not-leader",
    "recovered",
    "paused",
    "resumed",
    "storage-down",
    "storage-up",
    "first-output",
    "rejected write",
    "fenced",
    "refused",
    "sources-handed-over",
    "freezing",
    "thawed",
    "allowed",
]


def test_every_kind_keeps_its_spelling_on_the_wire():
    assert sorted(kind.value for kind in NodeEvent) == sorted(WIRE)


def test_a_line_names_its_kind_as_a_plain_json_string():
    stream = io.StringIO()
    emit = JsonEvents(stream)
    emit(NodeEvent.REJECTED_WRITE, shard="n1-7", epoch=8)
    emit(NodeEvent.NOT_LEADER, incarnation="n1-7")
    lines = stream.getvalue().splitlines()
    assert [line.split(", ")[0] for line in lines] == ['{"event": "rejected write"', '{"event": "not-leader"']
    first = json.loads(lines[0])
    assert first["event"] == "rejected write" and NodeEvent(first["event"]) is NodeEvent.REJECTED_WRITE
    assert (first["shard"], first["epoch"]) == ("n1-7", 8)
