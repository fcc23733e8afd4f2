"""`custody bench adoption` on this session's ZooKeeper and HDFS, small: a victim whose
PutFile an operator stopped queues a backlog that swaps, is killed, and its adopter
delivers all of it; the benchmark reports the figures it is run for."""

from __future__ import annotations

import argparse
from types import SimpleNamespace

import pytest

from benchmarks import adoption

pytestmark = [pytest.mark.zookeeper, pytest.mark.hdfs]


def test_an_adopter_delivers_a_killed_nodes_swapped_backlog_and_the_benchmark_times_it(
    zookeeper_ensemble, hdfs_cluster, tmp_path
):
    args = argparse.Namespace(quick=True, flowfiles=40_000, threads=2, workdir=str(tmp_path))
    result = adoption.run(args, services=SimpleNamespace(zookeeper=zookeeper_ensemble, hdfs=hdfs_cluster))
    # The operator's stop held the victim's PutFile while the backlog was made, and the
    # start before the kill let the adopter run it (a stop is kept with the shard).
    assert (result["victim_put_state_at_stop"], result["victim_put_state_at_kill"]) == ("STOPPED", "RUNNING")
    assert result["queued_at_kill"] >= 40_000 - result["delivered_before_the_stop"]
    recovered = result["adopter_recovered"]
    assert recovered["swap_files"] >= 2 and recovered["swapped_flowfiles"] >= 20_000
    # run() returned only once every FlowFile made was in the sink.
    assert result["takeover_s"] > 0 and result["resume_s"] > 0 and result["drain_flowfiles_per_sec"] > 0
