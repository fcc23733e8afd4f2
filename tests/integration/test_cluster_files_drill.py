"""The file drill in a cluster: a node whose GetFile moves files from its own inbox is
SIGKILLed at random moments and restarted, each time as a new incarnation with a new
home shard, while the other node adopts the dead incarnation's shards (without their
sources). Every file must still be delivered exactly once: a new incarnation takes
over what the earlier ones' GetFile recorded (`cluster.node.hand_over`) before its
own GetFile runs, finishes their deletes, and takes none of those files again.

Both nodes deliver to the cluster's one sink directory (`#{out}`), as a cluster's
PutFile should: PutFile is idempotent by FlowFile uuid in one destination, and an
adopter writes again the FlowFiles a dead incarnation had written but not committed.
A file GetFile took twice is two FlowFiles, two uuids: two files in the sink.

CI: 1,500 files and 4 kills. CUSTODY_LONG=1: 15,000 files and 10 kills."""

from __future__ import annotations

import os

import pytest

from cluster.drills.checker import check_delivery, ids_in_directory
from cluster.drills.flow_cluster import PROJECT_ROOT
from cluster.services.process import wait_until

from .cluster_inbox import drill_inboxes, kill_while_taking

LONG = os.environ.get("CUSTODY_LONG") == "1"
COUNT = 15_000 if LONG else 1_500
KILLS = 10 if LONG else 4
FLOW = os.path.join(PROJECT_ROOT, "examples", "files-drill.yaml")
pytestmark = [pytest.mark.zookeeper, pytest.mark.hdfs, pytest.mark.slow, pytest.mark.timeout(300 + 60 * KILLS)]


def test_getfile_takes_every_file_exactly_once_across_incarnations(flow_cluster, tmp_path):
    seed, rng, inbox, other = drill_inboxes(tmp_path)
    cluster = flow_cluster
    expected = [f"file-{i}" for i in range(COUNT)]
    for i, identifier in enumerate(expected):
        (inbox / f"{i:06d}").write_text(identifier)
    node = kill_while_taking(cluster, FLOW, inbox, other, KILLS, 400, rng, seed)

    def delivered() -> list[str]:
        return ids_in_directory(cluster.sink)

    wait_until(lambda: len(delivered()) >= COUNT, 300, f"every file to be delivered (seed {seed})")
    cluster.wait_settled(timeout=180)
    report = check_delivery(expected, delivered())
    assert report.ok, f"seed {seed}: {report.summary()}"
    handed = [e for e in node.find("sources-handed-over")]
    assert handed and handed[-1]["earlier"], handed  # the last incarnation took an earlier one's records over
