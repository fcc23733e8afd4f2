"""One damaged content claim never stops a queue: a standalone node, 1,500 FlowFiles
queued for PutFile, five of them damaged on disk in each way bit rot, a bad copy or a
careless hand damages them (a flipped byte, the content file cut short or deleted, its
`.crc` checksum file flipped or deleted). Every other FlowFile is delivered exactly
once; the five go to PutFile's `failure`, penalized, with `content.error` saying why;
no `.partial` temporary file stays in the sink.

A deleted `.crc` file leaves bytes that may well be intact, but nothing can vouch for
them on a node with one copy: the content repository returns no unverified byte of a
claim that must have checksums, so that FlowFile goes to `failure` too (`ContentCorrupted`,
"its checksum file is missing"), its claim kept for an operator who restores the file.

Each victim is large enough (200 KB) to retire its resource file, and is taken before
any other file, so it is the only claim of its own resource file: the damage touches it
alone (the test checks that). The node's large claims would otherwise share resource
files (`LOCAL_PACKED_RESOURCE_SIZE`), where a file cut short or deleted damages every
claim in it: this test is about one damaged claim, so it runs the node without packing.

Phase 1 runs GetFile with PutFile stopped, so that everything waits in the queue;
phase 2 damages the files of the stopped node; phase 3 runs the node again and waits,
with a deadline, until the queue has drained.
"""

from __future__ import annotations

import json
import os
from collections import Counter

import pytest

from cluster.node import standalone
from cluster.node.standalone import NodeSettings, StandaloneNode
from flow.loading import parse_flow
from repositories.content.checksum_format import HEADER_SIZE
from repositories.content.format import checksum_path, resource_path
from tests.inbox import drop

COUNT = 1_500
VICTIM_SIZE = 200 * 1024
DAMAGES = (
    "flip content byte",
    "truncate content file",
    "delete content file",
    "flip checksum byte",
    "delete checksum file",
)
EXPECTED_ERROR = {
    "flip content byte": "ContentCorrupted",
    "truncate content file": "ContentTruncated",
    "delete content file": "ContentNotFound",
    "flip checksum byte": "ContentCorrupted",
    "delete checksum file": "ContentCorrupted",
}
DEADLINE_S = 60.0
TIMEOUT_SPARK_S = 180.0


def flow(inbox, out):
    return parse_flow(
        {
            "name": "damaged-content",
            "processors": [
                {
                    "id": "get",
                    "type": "GetFile",
                    "properties": {"input_directory": str(inbox), "batch_size": 100},
                    "scheduling": {"yield_duration": "20 ms"},
                },
                {
                    "id": "put",
                    "type": "PutFile",
                    "properties": {"directory": str(out), "sync": False},
                    "scheduling": {"yield_duration": "50 ms"},
                    "auto_terminate": ["success"],
                },
                # Holds what PutFile routes to failure: stopped, so the FlowFiles wait in its queue.
                {"id": "hold", "type": "LogAttribute", "auto_terminate": ["success"]},
            ],
            "connections": [
                {"id": "queued", "source": "get", "destination": "put"},
                {"id": "failed", "source": "put", "relationships": ["failure"], "destination": "hold"},
            ],
        }
    )


@pytest.fixture(autouse=True)
def unpacked_resources(monkeypatch):
    """Large claims alone in their resource files (see the module docstring)."""
    monkeypatch.setattr(standalone, "LOCAL_PACKED_RESOURCE_SIZE", None)


def start(definition, data_dir, *stopped, spark=None) -> StandaloneNode:
    node = StandaloneNode(definition, str(data_dir), NodeSettings(threads=2), spark_session=spark)
    node.start(paused=True)
    for processor in stopped:
        node.engine.stop_processor(processor)
    node.resume()
    return node


def flowfiles(node, queue: str) -> list:
    return [entry[2] for entry in node.graph.queues[queue].snapshot().entries]


def waiting(inbox) -> int:
    return sum(1 for name in os.listdir(inbox) if not name.startswith("."))


def delivered_count(out) -> int:
    return sum(1 for name in os.listdir(out) if not name.startswith(".")) if os.path.isdir(out) else 0


def delivered(out) -> list[str]:
    return [open(os.path.join(out, name)).read() for name in os.listdir(out) if not name.startswith(".")]


def flip(path: str, offset: int) -> None:
    with open(path, "r+b") as handle:
        handle.seek(offset)
        byte = handle.read(1)
        handle.seek(offset)
        handle.write(bytes([byte[0] ^ 0x10]))


def test_every_kind_of_damaged_claim_goes_to_failure_and_the_queue_flows(tmp_path):
    data_dir, inbox, out = tmp_path / "node", tmp_path / "inbox", tmp_path / "out"
    inbox.mkdir()
    definition = flow(inbox, out)

    # Phase 1: queue everything for a stopped PutFile, the five victims first.
    node = start(definition, data_dir, "put", "hold")
    try:
        for index, damage in enumerate(DAMAGES):
            drop(inbox, f"victim-{index}", f"victim-{index} ({damage})\n" + "x" * VICTIM_SIZE)
        assert node.wait_until(lambda: node.graph.queues["queued"].count == len(DAMAGES), DEADLINE_S), node.status()
        for index in range(COUNT - len(DAMAGES)):
            drop(inbox, f"file-{index:05d}", f"file-{index}")
        assert node.wait_until(
            lambda: node.graph.queues["queued"].count == COUNT and waiting(inbox) == 0, DEADLINE_S
        ), node.status()
        queued = flowfiles(node, "queued")
    finally:
        node.stop()
    assert len(queued) == COUNT
    victims = {f.attributes["filename"]: f for f in queued if f.attributes["filename"].startswith("victim-")}
    by_resource = Counter(f.content_claim.resource for f in queued)
    for victim in victims.values():
        assert victim.content_claim.offset == 0 and by_resource[victim.content_claim.resource] == 1, (
            "each victim is the only claim of its resource file: the damage touches it alone"
        )

    # Phase 2: damage each victim's files, one way each, on the stopped node.
    root = os.path.join(data_dir, "content")
    for index, damage in enumerate(DAMAGES):
        resource = victims[f"victim-{index}"].content_claim.resource
        content, checksums = resource_path(root, resource), checksum_path(root, resource)
        if damage == "flip content byte":
            flip(content, VICTIM_SIZE // 2)
        elif damage == "truncate content file":
            os.truncate(content, VICTIM_SIZE // 2)
        elif damage == "delete content file":
            os.remove(content)
        elif damage == "flip checksum byte":
            flip(checksums, HEADER_SIZE + 12)  # the first block's CRC
        else:
            os.remove(checksums)

    # Phase 3: run PutFile; the queue drains.
    node = start(definition, data_dir, "hold")
    try:
        assert node.wait_until(
            lambda: (
                node.graph.queues["queued"].count == 0
                and delivered_count(out) == COUNT - len(DAMAGES)
                and node.graph.queues["failed"].count == len(DAMAGES)
            ),
            DEADLINE_S,
        ), node.status()
        failed = flowfiles(node, "failed")
    finally:
        node.stop()

    ids = delivered(out)
    assert sorted(ids) == sorted(f"file-{index}" for index in range(COUNT - len(DAMAGES))), "each exactly once"
    assert [name for name in os.listdir(out) if name.startswith(".")] == [], "no .partial file stays behind"
    assert sorted(f.attributes["filename"] for f in failed) == sorted(victims)
    for flowfile in failed:
        damage = DAMAGES[int(flowfile.attributes["filename"].split("-")[1])]
        assert flowfile.attributes["content.error"].startswith(EXPECTED_ERROR[damage]), (damage, flowfile.attributes)
        assert flowfile.penalty_expiration > 0, "routed to failure penalized"
        assert flowfile.content_claim == victims[flowfile.attributes["filename"]].content_claim, "its claim is kept"
    assert "its checksum file is missing" in next(
        f.attributes["content.error"] for f in failed if f.attributes["filename"] == "victim-4"
    )


@pytest.mark.spark
def test_a_spark_batch_runs_without_the_input_whose_content_cannot_be_read(tmp_path, spark_local):
    data_dir, inbox, out = tmp_path / "node", tmp_path / "inbox", tmp_path / "out"
    inbox.mkdir()
    definition = parse_flow(
        {
            "name": "damaged-spark-input",
            "processors": [
                {
                    "id": "get",
                    "type": "GetFile",
                    "properties": {"input_directory": str(inbox), "batch_size": 100},
                    "scheduling": {"yield_duration": "20 ms"},
                },
                {
                    "id": "sql",
                    "type": "ExecuteSparkSQL",
                    "properties": {"sql": "SELECT id FROM flowfiles", "batch_size": 10},
                    "auto_terminate": ["original"],
                },
                {
                    "id": "put",
                    "type": "PutFile",
                    "properties": {"directory": str(out), "sync": False},
                    "auto_terminate": ["success", "failure"],
                },
                {"id": "hold", "type": "LogAttribute", "auto_terminate": ["success"]},
            ],
            "connections": [
                {"id": "queued", "source": "get", "destination": "sql"},
                {"source": "sql", "relationships": ["success"], "destination": "put"},
                {"id": "failed", "source": "sql", "relationships": ["failure"], "destination": "hold"},
            ],
        }
    )
    node = start(definition, data_dir, "sql", "hold", spark=spark_local)
    try:
        drop(inbox, "victim.json", "".join(f'{{"id": 0, "pad": "{index:08d}"}}\n' for index in range(8000)))
        assert node.wait_until(lambda: node.graph.queues["queued"].count == 1, DEADLINE_S), node.status()
        for index in range(1, 10):
            drop(inbox, f"{index}.json", f'{{"id": {index}}}\n')
        assert node.wait_until(lambda: node.graph.queues["queued"].count == 10, DEADLINE_S), node.status()
        (victim,) = [f for f in flowfiles(node, "queued") if f.attributes["filename"] == "victim.json"]
    finally:
        node.stop()
    flip(resource_path(os.path.join(data_dir, "content"), victim.content_claim.resource), 100_000)

    node = start(definition, data_dir, "hold", spark=spark_local)
    try:
        assert node.wait_until(
            lambda: (
                node.graph.queues["queued"].count == 0
                and delivered_count(out) == 1
                and node.graph.queues["failed"].count == 1
            ),
            TIMEOUT_SPARK_S,
        ), node.status()
        (failed,) = flowfiles(node, "failed")
    finally:
        node.stop()
    (result,) = [name for name in os.listdir(out) if not name.startswith(".")]
    with open(os.path.join(out, result)) as handle:
        assert sorted(json.loads(line)["id"] for line in handle if line.strip()) == list(range(1, 10))
    assert failed.id == victim.id and failed.attributes["content.error"].startswith("ContentCorrupted")
