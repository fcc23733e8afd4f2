"""A Spark step in a cluster of real `custody node` processes (real ZooKeeper, real
HDFS, each node's embedded Spark): a node SIGKILLed, or SIGSTOPped until its shard is
taken over and then let go on, while its Spark job runs leaves the batch queued, the
adopter runs it again, and every generated record reaches the sink and the Parquet
dataset on HDFS exactly once, in outputs each created once. The paused node's job
finishes after the takeover and commits nothing, and the batch directories of both
victims are collected."""

from __future__ import annotations

import json
import os
import signal
from collections import Counter

import pytest

from cluster.core.ownership import ShardState
from cluster.drills.checker import check_delivery, cluster_provenance
from cluster.services.process import wait_until
from flow.spark import provenance_analysis as analysis
from repositories.provenance import EventType, ProvenanceRepository
from repositories.provenance.lineage import lineage_across
from repositories.storage import StorageFileNotFound

pytestmark = [pytest.mark.zookeeper, pytest.mark.hdfs, pytest.mark.spark, pytest.mark.slow]

FLOW = """\
name: spark-cluster
parameters:
  count: 300
  put_batch: 10
processors:
  - id: generate
    type: GenerateFlowFile
    properties:
      batch_size: 50
      max_count: "#{count}"
      custom_text: '{"id": "${uuid}", "node": "#{node}"}'
    scheduling: {run_schedule: 100 ms}
  - id: sql
    type: ExecuteSparkSQL
    properties:
      sql: "SELECT id, upper(node) AS node FROM flowfiles"
      record_format: json
      batch_size: 100
    auto_terminate: [original, failure]
  - id: parquet
    type: PutParquet
    properties:
      directory: "#{dataset}"
      partition_by: node
      record_format: json
    auto_terminate: [success, failure]
  - id: put
    type: PutFile
    properties:
      directory: "#{out}"
      sync: false
    auto_terminate: [success]
connections:
  - {source: generate, destination: sql}
  - {source: sql, relationships: [success], destination: put}
  - {source: sql, relationships: [success], destination: parquet}
  - {source: put, relationships: [failure], destination: put}
"""


def staging_batches(storage, directory: str) -> list[str]:
    try:
        return [entry.name for entry in storage.list(directory)]
    except StorageFileNotFound:
        return []


def dataset_ids(storage, directory: str) -> Counter:
    import pyarrow.dataset

    table = pyarrow.dataset.dataset(
        directory, filesystem=storage.arrow_filesystem(), format="parquet", partitioning="hive"
    ).to_table()
    return Counter(table.column("id").to_pylist())


def cut_short(cluster, hdfs_store, victim_node, adopter, fault: int) -> str:
    """Once a batch of `victim_node`'s home shard is staged on HDFS (its directory goes
    when the batch is done), so while its Spark job runs: SIGKILL the node, or SIGSTOP
    it until `adopter` took the shard over and then let it go on (its job finishes now
    and must commit nothing). Returns the victim's incarnation once the shard is
    adopted (the adopter drains and retires it meanwhile)."""
    victim = victim_node.incarnation
    staging = f"{hdfs_store.root}/{cluster.cluster}/spark/{victim}/sql"
    wait_until(
        lambda: staging_batches(hdfs_store.storage, staging),
        240,
        f"a Spark batch of {victim} to be staged in {staging}",
    )
    victim_node.signal(fault)
    wait_until(
        lambda: (
            (s := cluster.shard(victim)) is not None
            and s.owner == adopter.incarnation
            and s.state in (ShardState.DRAINING, ShardState.RETIRED)
        ),
        60,
        f"{victim}'s shard to be adopted",
    )
    if fault == signal.SIGSTOP:
        victim_node.signal(signal.SIGCONT)
    return victim


def test_a_node_whose_spark_job_is_cut_short_by_a_takeover_is_rerun_by_the_adopter_exactly_once(
    flow_cluster, hdfs_store, spark_local, tmp_path
):
    """Both faults in one cluster, one after the other: n1 is SIGSTOPped mid-job until
    n2 took its shard over, goes on and joins again as a new incarnation (making its
    FlowFiles again), and that one is SIGKILLed mid-job; n2 adopts both."""
    cluster = flow_cluster
    flow = tmp_path / "spark.yaml"
    flow.write_text(FLOW)
    dataset = f"{hdfs_store.root}/dataset"
    n1 = cluster.start("n1", flow=str(flow), count=200, parameters={"dataset": dataset})
    n1.wait("joined", timeout=60)
    n2 = cluster.start("n2", flow=str(flow), count=50, parameters={"dataset": dataset})
    n2.wait("joined", timeout=60)
    paused = cut_short(cluster, hdfs_store, n1, n2, signal.SIGSTOP)
    wait_until(lambda: n1.incarnation != paused, 60, f"n1 to join again after {paused} was deposed")
    killed = cut_short(cluster, hdfs_store, n1, n2, signal.SIGKILL)
    # The node comes back (and exports the provenance it had not exported yet).
    cluster.start("n1", flow=str(flow), count=1, parameters={"dataset": dataset}).wait("joined", timeout=60)
    cluster.wait_settled(timeout=240)  # the victims' shards retired too
    # The victims' batch directories are collected: by the adopter when it first ran
    # their shards, and by the leader's collector once the shards retired (a paused
    # node's batch may have made its directory again after the adopter's collection).
    for victim in (paused, killed):
        staging = f"{hdfs_store.root}/{cluster.cluster}/spark/{victim}/sql"
        wait_until(
            lambda: not staging_batches(hdfs_store.storage, staging),  # noqa: B023
            90,
            f"{victim}'s abandoned Spark staging to be collected",
        )
    cluster.stop_all()

    events = cluster_provenance([os.path.join(d, "provenance") for d in cluster.directories.values()])
    created = [e.flowfile_uuid for e in events if e.event_type is EventType.CREATE and e.component_id == "generate"]
    delivered, sink_files = [], sorted(name for name in os.listdir(cluster.sink) if not name.startswith("."))
    for name in sink_files:
        with open(os.path.join(cluster.sink, name)) as file:
            delivered += [json.loads(line)["id"] for line in file if line.strip()]
    report = check_delivery(created, delivered)
    assert report.ok, report.summary()
    assert len(created) > 100, report.summary()  # each victim made some before it was cut short
    in_dataset = check_delivery(created, dataset_ids(hdfs_store.storage, dataset).elements())
    assert in_dataset.ok, f"Parquet dataset: {in_dataset.summary()}"
    # Each output of the Spark step was created once (one JOIN or FORK naming it), and
    # that output is the one sink file of that name.
    made = Counter()
    for event in events:
        if event.component_id == "sql" and event.event_type is EventType.JOIN:
            made[event.flowfile_uuid] += 1
        elif event.component_id == "sql" and event.event_type is EventType.FORK:
            made.update(event.child_uuids)
    assert set(made) == set(sink_files) and set(made.values()) == {1}, (len(made), len(sink_files))
    logs = {}
    for node in (n1, n2):
        with open(node.log.name) as log_file:
            logs[node.name] = log_file.read()
    for victim in (killed, paused):
        assert n2.find("first-output", shard=victim), f"the adopter never delivered from {victim}'s shard"
        # The content went to Spark and came back by reference: the victim's batch,
        # and the adopter's rerun of it.
        for name, text in logs.items():
            assert f"batches of shard {victim} go to Spark by reference" in text, (name, victim)
    check_lineage_across_the_failover(cluster, hdfs_store, spark_local, killed)


def check_lineage_across_the_failover(cluster, hdfs_store, spark, victim: str) -> None:
    """A FlowFile the victim made and the adopter turned into an output: its lineage,
    as Spark finds it in the whole cluster's exported provenance, is what the nodes'
    own repositories find together."""
    repositories = {
        name: ProvenanceRepository.open(os.path.join(directory, "provenance"))
        for name, directory in cluster.directories.items()
    }
    try:
        made_by_victim = {
            e.flowfile_uuid
            for e in repositories["n1"].events(0, repositories["n1"].next_event_id)
            if e.event_type is EventType.CREATE and e.component_id == "generate"
        }
        joined_on_adopter = [
            e
            for e in repositories["n2"].events(0, repositories["n2"].next_event_id)
            if e.component_id == "sql" and e.event_type is EventType.JOIN and made_by_victim & set(e.parent_uuids)
        ]
        assert joined_on_adopter, f"no output of the adopter has a parent {victim} made"
        crossed = sorted(made_by_victim & set(joined_on_adopter[0].parent_uuids))[0]
        expected, expected_events = lineage_across(repositories, crossed)
    finally:
        for repository in repositories.values():
            repository.close()
    source = f"{cluster.hdfs_url}{cluster.layout.hdfs_provenance}"
    found = analysis.lineage(analysis.load_events(spark, source), crossed, source=source)
    assert set(found["descendants"]) == expected.descendants and expected.descendants
    assert set(found["ancestors"]) == expected.ancestors
    assert {(e["node"], e["event_id"]) for e in found["events"]} == expected_events
    assert found["nodes"] == ["n1", "n2"]
