"""A NiFi 2 Python processor in a cluster, its node SIGKILLed in the middle: GetFile takes
one node's inbox, TagAndUpper (tests/data/python_processors, loaded by NODE.toml
[python] extensions) upper-cases each file, PutFile writes it to the cluster's one
sink. The node is killed at random moments while it works and restarted as a new
incarnation; the other node adopts each dead incarnation's shards, Python processor
included, and runs what they held. Every file must be in the sink exactly once,
upper-cased (`check_delivery`: lost, duplicated, unexpected).

CI: 300 files and 2 kills. CUSTODY_LONG=1: 4,000 files and 8 kills."""

from __future__ import annotations

import os

import pytest

from cluster.drills.checker import check_delivery, ids_in_directory
from cluster.drills.flow_cluster import PROJECT_ROOT
from cluster.node.events import NodeEvent
from cluster.services.process import wait_until
from tests.python_processors import PROCESSORS

from .cluster_inbox import drill_inboxes, kill_while_taking

LONG = os.environ.get("CUSTODY_LONG") == "1"
COUNT, KILLS = (4_000, 8) if LONG else (300, 2)
FLOW = os.path.join(PROJECT_ROOT, "tests", "data", "python-processors-drill.yaml")
pytestmark = [pytest.mark.zookeeper, pytest.mark.hdfs, pytest.mark.slow, pytest.mark.timeout(300 + 60 * KILLS)]


def test_a_python_processor_in_a_cluster_delivers_every_file_exactly_once_across_sigkills(flow_cluster, tmp_path):
    seed, rng, inbox, other = drill_inboxes(tmp_path)
    cluster = flow_cluster
    expected = [f"file-{i}" for i in range(COUNT)]
    for i, identifier in enumerate(expected):
        (inbox / f".{i}.tmp").write_text(identifier)
        (inbox / f".{i}.tmp").rename(inbox / f"{i:06d}")
    python = {"python": {"extensions": [PROCESSORS]}}
    kill_while_taking(cluster, FLOW, inbox, other, KILLS, 60, rng, seed, sections=python)

    def delivered() -> list[str]:
        return ids_in_directory(cluster.sink)

    wait_until(lambda: len(delivered()) >= COUNT, 300, f"every file to be delivered (seed {seed})")
    cluster.wait_settled(timeout=180)
    report = check_delivery([identifier.upper() for identifier in expected], delivered())
    assert report.ok, f"seed {seed}: {report.summary()}"
    adopted = sum(len(node.find(NodeEvent.ADOPTED)) for node in cluster.nodes.values())
    assert adopted >= 1, f"seed {seed}: no dead incarnation's shard was adopted"
    print(f"python processor cluster drill: {KILLS} kills, {COUNT} files; {report.summary()}; {adopted} adoptions")
