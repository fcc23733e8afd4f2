"""A record flow in a cluster, its node SIGKILLed in the middle: GetFile takes CSV files
from one node's inbox, ConvertRecord turns each into an Avro container file, PutFile
writes it to the cluster's one sink. The node is killed at random moments while it
converts and restarted as a new incarnation; the other node adopts each dead
incarnation's shards and converts what they held. Every record of every CSV file must
be in the sink's Avro files exactly once, read back with fastavro and counted by key
(`check_delivery`: lost, duplicated, unexpected).

CI: 120 files of 100 records and 3 kills. CUSTODY_LONG=1: 1,200 files and 10 kills."""

from __future__ import annotations

import os

import pytest

from cluster.drills.checker import check_delivery
from cluster.drills.flow_cluster import PROJECT_ROOT
from cluster.node.events import NodeEvent
from cluster.services.process import wait_until

from .cluster_inbox import drill_inboxes, kill_while_taking

LONG = os.environ.get("CUSTODY_LONG") == "1"
FILES, ROWS = (1_200, 100) if LONG else (120, 100)
KILLS = 10 if LONG else 3
FLOW = os.path.join(PROJECT_ROOT, "examples", "records-drill.yaml")
pytestmark = [pytest.mark.zookeeper, pytest.mark.hdfs, pytest.mark.slow, pytest.mark.timeout(300 + 60 * KILLS)]


def _write_inputs(inbox) -> list[str]:
    keys = []
    for number in range(FILES):
        lines = ["key,amount,city"]
        for row in range(ROWS):
            keys.append(f"k-{number}-{row}")
            lines.append(f'{keys[-1]},{number * row},"{["Oslo", "Zürich", "São Paulo, SP"][row % 3]}"')
        (inbox / f".{number}.tmp").write_text("\n".join(lines) + "\n")
        (inbox / f".{number}.tmp").rename(inbox / f"{number:05d}.csv")
    return keys


def _keys_written(sink) -> list[str]:
    import fastavro

    keys = []
    for name in sorted(os.listdir(sink)):
        if name.startswith("."):
            continue
        with open(os.path.join(sink, name), "rb") as handle:
            keys += [record["key"] for record in fastavro.reader(handle)]
    return keys


def test_csv_to_avro_in_a_cluster_keeps_every_record_exactly_once_across_sigkills(flow_cluster, tmp_path):
    seed, rng, inbox, other = drill_inboxes(tmp_path)
    cluster = flow_cluster
    keys = _write_inputs(inbox)
    kill_while_taking(cluster, FLOW, inbox, other, KILLS, 15, rng, seed)
    wait_until(lambda: len(_keys_written(cluster.sink)) >= len(keys), 300, f"every record written (seed {seed})")
    cluster.wait_settled(timeout=180)
    report = check_delivery(keys, _keys_written(cluster.sink))
    assert report.ok, f"seed {seed}: {report.summary()}"
    adopted = sum(len(node.find(NodeEvent.ADOPTED)) for node in cluster.nodes.values())
    assert adopted >= 1, f"seed {seed}: no dead incarnation's shard was adopted"
    print(f"records cluster drill: {KILLS} kills, {len(keys)} records; {report.summary()}; {adopted} adoptions")
