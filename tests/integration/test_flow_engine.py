"""The traditional engine on real local repositories: end to end, swapping, restart, crash points."""

from __future__ import annotations

import os
import textwrap
from itertools import repeat

import pytest

from cluster.drills.checker import check_delivery, check_node_repositories, claimant_mismatches, ids_in_directory
from cluster.node.standalone import StandaloneNode
from flow.commit import CommitHooks, DurableCommitter
from flow.loading import parse_flow
from flow.provenance_outbox import reconcile
from flow.queue import FlowFileQueue
from flow.session import ProcessSession
from flow.shard import open_shard
from repositories.claims import ContentClaim
from repositories.content import ContentRepositoryConfig, open_filesystem_content_repository
from repositories.provenance import EventType, ProvenanceConfig, ProvenanceRepository
from repositories.storage import LocalStorage


def pipeline(out_dir, count, *, sink="put", threshold=500, batch=100):
    processors = [
        {
            "id": "gen",
            "type": "GenerateFlowFile",
            "properties": {
                "batch_size": 250,
                "max_count": count,
                "sequence_attribute": "seq",
                "custom_text": "${seq} payload",
            },
        },
        {"id": "tag", "type": "UpdateAttribute", "properties": {"parity": "${seq:mod(2)}"}},
    ]
    connections = [
        {
            "id": "backlog",
            "source": "gen",
            "destination": "tag",
            "swap_threshold": threshold,
            "swap_batch": batch,
            "back_pressure": {"object_count": 1_000_000},
        },
    ]
    ports = []
    if sink == "put":
        processors.append(
            {
                "id": "put",
                "type": "PutFile",
                "properties": {"directory": str(out_dir), "sync": False},
                "auto_terminate": ["success"],
            }
        )
        connections += [
            {
                "id": "tagged",
                "source": "tag",
                "destination": "put",
                "swap_threshold": threshold,
                "swap_batch": batch,
                "back_pressure": {"object_count": 1_000_000},
            },
            {"source": "put", "relationships": ["failure"], "destination": "put"},
        ]
    else:  # nothing consumes: the FlowFiles pile up in "tagged"
        ports.append({"id": "sink", "type": "output"})
        connections.append(
            {
                "id": "tagged",
                "source": "tag",
                "destination": "sink",
                "swap_threshold": threshold,
                "swap_batch": batch,
                "back_pressure": {"object_count": 1_000_000},
            }
        )
    return parse_flow({"name": "pipeline", "processors": processors, "connections": connections, "ports": ports})


def live_claims(node):
    """Every claim the WAL and the swap files hold for FlowFiles of this node."""
    claims = [
        r.content_claim
        for r in node.shard.wal.records.values()
        if not r.queue.startswith("__") and r.content_claim is not None
    ]
    for queue in node.shard.queues.values():
        for summary in queue.swap_summaries():
            for resource, (count, end) in summary.resources.items():
                claims.extend(repeat(ContentClaim(resource, 0, end), count))
    return claims


@pytest.mark.slow
def test_a_flow_runs_to_completion_and_the_repositories_agree(tmp_path):
    out = tmp_path / "out"
    node = StandaloneNode(pipeline(out, 3000), str(tmp_path / "node"))
    node.start()
    try:
        assert node.wait_until(lambda: len(ids_in_directory(str(out))) >= 3000 and node.engine.is_idle(), 120), (
            node.status()
        )
    finally:
        node.stop()
    delivery = check_delivery([str(i) for i in range(3000)], ids_in_directory(str(out)))
    assert delivery.ok, delivery.summary()
    report = check_node_repositories(str(tmp_path / "node"), delivered_uuids=os.listdir(out), id_attribute="seq")
    assert report.ok, report.summary()
    assert len(report.provenance_sent) == 3000


@pytest.mark.slow
def test_swapped_queues_keep_claimant_counts_and_come_back_registered_not_loaded(tmp_path):
    data = tmp_path / "node"
    node = StandaloneNode(pipeline(None, 5000, sink="none"), str(data))
    node.start()
    try:
        tagged = node.graph.queues["tagged"]
        assert node.wait_until(lambda: tagged.count == 5000 and not tagged._swapping, 120), node.status()
        summary = tagged.summary()
        assert summary.swap_files >= 40 and tagged.in_memory() <= 500
        assert summary.oldest_entry is not None and summary.newest_entry >= summary.oldest_entry
        assert claimant_mismatches(node.content, live_claims(node)) == {}
    finally:
        node.stop()

    again = StandaloneNode(pipeline(None, 5000, sink="none"), str(data))
    again.start(paused=True)
    try:
        tagged = again.graph.queues["tagged"]
        assert again.recovery["swapped_flowfiles"] >= 4500
        assert tagged.count == 5000 and tagged.in_memory() <= 500, "swapped FlowFiles stay swapped"
        assert claimant_mismatches(again.content, live_claims(again)) == {}
    finally:
        again.stop()

    out = tmp_path / "out"
    drain = StandaloneNode(pipeline(out, 5000), str(data))
    drain.start()
    try:
        assert drain.wait_until(lambda: len(ids_in_directory(str(out))) >= 5000 and drain.engine.is_idle(), 120)
        assert claimant_mismatches(drain.content, live_claims(drain)) == {}
    finally:
        drain.stop()
    assert check_delivery([str(i) for i in range(5000)], ids_in_directory(str(out))).ok
    report = check_node_repositories(str(data), delivered_uuids=os.listdir(out), id_attribute="seq")
    assert report.ok and report.swap_files == 0, report.summary()


class SimulatedCrash(BaseException):
    pass


class CrashAt(CommitHooks):
    def __init__(self, point):
        def crash(component_id):
            raise SimulatedCrash(point)

        super().__init__({point: crash})  # a misspelt point raises UnknownSeam


def open_repositories(root, hooks=None):
    queue = FlowFileQueue("q")
    shard = open_shard(LocalStorage(), str(root / "shard"), "s", [queue], checkpoint_interval=None)
    report = shard.recover()
    content = open_filesystem_content_repository(
        {"c": str(root / "content")}, ContentRepositoryConfig(sync_on_close=False)
    )
    content_report = content.recover(report.live_claims)
    provenance = ProvenanceRepository(
        ProvenanceConfig(
            containers=(str(root / "provenance"),), rollover_check_interval_s=None, age_off_interval_s=None
        )
    )
    replayed = reconcile(report.outbox, provenance)
    committer = DurableCommitter(shard, content, provenance, hooks=hooks)
    return queue, shard, content, provenance, committer, content_report, replayed


def create_some(queue, shard, content, committer, n=3):
    session = ProcessSession(
        component_id="src",
        component_type="Test",
        committer=committer,
        content=content,
        shard=shard,
        outgoing={"success": [queue]},
        clock_ms=lambda: 1_000,
    )
    for i in range(n):
        session.transfer(session.write_bytes(session.create(attributes={"i": str(i)}), b"data %d" % i), "success")
    session.commit()


def close_after_crash(shard, content, provenance):
    shard.wal.close()  # no checkpoint: what is in the journals is what a crash leaves
    provenance.close()


def test_a_crash_between_the_wal_and_provenance_is_repaired_by_the_outbox(tmp_path):
    queue, shard, content, provenance, committer, _, _ = open_repositories(tmp_path, CrashAt("before_provenance"))
    with pytest.raises(SimulatedCrash):
        create_some(queue, shard, content, committer)
    close_after_crash(shard, content, provenance)

    queue, shard, content, provenance, committer, _, replayed = open_repositories(tmp_path)
    assert queue.count == 3 and replayed == 3
    provenance.sync()
    creates = [e for e in provenance.events(0, 100) if e.event_type is EventType.CREATE]
    assert sorted(e.attributes_after["i"] for e in creates) == ["0", "1", "2"]
    close_after_crash(shard, content, provenance)

    *_, replayed_again = open_repositories(tmp_path)
    assert replayed_again == 0, "registered once, never twice"


def test_a_crash_before_the_wal_leaves_only_unreferenced_content_which_recovery_removes(tmp_path):
    queue, shard, content, provenance, committer, _, _ = open_repositories(tmp_path, CrashAt("before_wal"))
    with pytest.raises(SimulatedCrash):
        create_some(queue, shard, content, committer)
    close_after_crash(shard, content, provenance)
    queue, shard, content, provenance, committer, content_report, replayed = open_repositories(tmp_path)
    assert queue.count == 0 and replayed == 0
    assert content_report.destroyed or content_report.truncated_bytes, "the orphaned content was reclaimed"
    assert not [r for r, info in content.list_resources().items() if not info.archived]
    close_after_crash(shard, content, provenance)


def test_a_crash_after_the_wal_keeps_the_commit(tmp_path):
    queue, shard, content, provenance, committer, _, _ = open_repositories(tmp_path, CrashAt("after_wal"))
    with pytest.raises(SimulatedCrash):
        create_some(queue, shard, content, committer)
    close_after_crash(shard, content, provenance)
    queue, shard, content, provenance, committer, _, replayed = open_repositories(tmp_path)
    flowfiles = queue.poll(10)[0]
    assert sorted(content.read(f.content_claim) for f in flowfiles) == [b"data 0", b"data 1", b"data 2"]
    assert replayed == 3
    close_after_crash(shard, content, provenance)


def test_execute_stateless_inside_a_traditional_flow(tmp_path):
    sub = tmp_path / "sub.yaml"
    sub.write_text(
        textwrap.dedent("""
        processors:
          - {id: upper, type: ReplaceText, properties: {replacement_strategy: prepend, replacement_value: "sub:"}}
          - {id: route, type: RouteOnAttribute, properties: {bad: "${seq:equals('3')}"}}
        ports:
          - {id: in, type: input}
          - {id: out, type: output}
          - {id: failed, type: failure}
        connections:
          - {source: in, destination: upper}
          - {source: upper, relationships: [success], destination: route}
          - {source: upper, relationships: [failure], destination: failed}
          - {source: route, relationships: [unmatched], destination: out}
          - {source: route, relationships: [bad], destination: failed}
    """)
    )
    out, failed = tmp_path / "out", tmp_path / "failed"
    definition = parse_flow(
        {
            "processors": [
                {
                    "id": "gen",
                    "type": "GenerateFlowFile",
                    "properties": {
                        "batch_size": 5,
                        "max_count": 5,
                        "sequence_attribute": "seq",
                        "custom_text": "${seq}",
                    },
                },
                {
                    "id": "stateless",
                    "type": "ExecuteStateless",
                    "properties": {"flow": str(sub)},
                    "scheduling": {"penalty_duration": "100 ms"},
                    "auto_terminate": ["original"],
                },
                {"id": "put", "type": "PutFile", "properties": {"directory": str(out)}, "auto_terminate": ["success"]},
                {
                    "id": "put_failed",
                    "type": "PutFile",
                    "properties": {"directory": str(failed)},
                    "auto_terminate": ["success", "failure"],
                },
            ],
            "connections": [
                {"source": "gen", "destination": "stateless"},
                {"source": "stateless", "relationships": ["output"], "destination": "put"},
                {"source": "stateless", "relationships": ["failure"], "destination": "put_failed"},
                {"source": "put", "relationships": ["failure"], "destination": "put"},
            ],
        }
    )
    node = StandaloneNode(definition, str(tmp_path / "node"))
    node.start()
    try:
        assert node.wait_until(
            lambda: (
                len(ids_in_directory(str(out))) == 4
                and len(ids_in_directory(str(failed))) == 1
                and node.engine.is_idle()
            ),
            60,
        ), node.status()
    finally:
        node.stop()
    assert sorted(ids_in_directory(str(out))) == ["sub:0", "sub:1", "sub:2", "sub:4"]
    assert ids_in_directory(str(failed)) == ["3"]


class Tracked:
    """How many tasks of the test processor run at once."""

    active = 0
    most = 0
    done = 0


def test_back_pressure_and_concurrent_tasks(tmp_path):
    import threading
    import time

    from flow.processor import Processor
    from flow.processors import PROCESSOR_TYPES

    lock = threading.Lock()

    class Concurrent(Processor):
        type_name = "TestConcurrent"

        def on_trigger(self, context, session):
            flowfile = session.get()
            if flowfile is None:
                return
            with lock:
                Tracked.active += 1
                Tracked.most = max(Tracked.most, Tracked.active)
            time.sleep(0.02)  # the work itself: long enough for tasks to overlap
            with lock:
                Tracked.active -= 1
                Tracked.done += 1
            session.transfer(flowfile, "success")

    registry = {**PROCESSOR_TYPES, "TestConcurrent": Concurrent}
    definition = parse_flow(
        {
            "processors": [
                {"id": "gen", "type": "GenerateFlowFile", "properties": {"batch_size": 50}},
                {
                    "id": "work",
                    "type": "TestConcurrent",
                    "scheduling": {"concurrent_tasks": 2},
                    "auto_terminate": ["success"],
                },
            ],
            "connections": [
                {"id": "full", "source": "gen", "destination": "work", "back_pressure": {"object_count": 200}}
            ],
        },
        registry=registry,
    )
    Tracked.active = Tracked.most = Tracked.done = 0
    node = StandaloneNode(definition, str(tmp_path / "node"))
    node.start()
    try:
        queue = node.graph.queues["full"]
        assert node.wait_until(lambda: Tracked.done >= 40, 60)
        counts = []
        for _ in range(20):  # sample the queue's size over 0.4 s of running
            counts.append(queue.count)
            time.sleep(0.02)
        assert max(counts) <= 200 + 50, "back-pressure: at most one batch past the threshold"
        assert Tracked.most == 2, "concurrent_tasks: 2 - no more, and they did overlap"
    finally:
        node.stop()
