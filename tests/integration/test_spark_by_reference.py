"""Pass by reference on real HDFS and the real embedded Spark: a clustered node's
ExecuteSparkSQL hands Spark its input claims and takes Spark's output files in as
content, without the node reading or writing a byte of either.

The node here is a clustered node's content (`open_node_content`: this incarnation's
container on local disk and HDFS) under a durable shard, as a clustered node runs it."""

from __future__ import annotations

import json
import logging
import time

import pytest

from cluster.core.incarnation import Incarnation
from cluster.core.layout import ClusterLayout
from cluster.node.content import REPLICATED_RESOURCE_SIZE, NodeContent, open_node_content
from flow.commit import DurableCommitter
from flow.loading import parse_flow
from flow.processor import ProcessContext
from flow.processors.spark import ExecuteSparkSQL
from flow.queue import FlowFileQueue
from flow.services import ServiceRegistry
from flow.session import ProcessSession
from flow.shard import open_shard
from flow.spark.staging import SparkStaging
from repositories.content.format import resource_path
from repositories.storage import LocalStorage

pytestmark = [pytest.mark.spark, pytest.mark.hdfs]

INCARNATION = Incarnation("n1", 5)
QUERY = "SELECT id, upper(name) AS name FROM flowfiles"


class CountingContent(NodeContent):
    """The node's content, counting what the node itself reads."""

    def __init__(self, content: NodeContent):
        super().__init__(content.replicas, content.foreign, content.container)
        self.reads = []

    def open_read(self, claim, offset=0, length=None):
        self.reads.append(claim)
        return super().open_read(claim, offset, length)

    def read_many(self, claims):
        self.reads += list(claims)
        return super().read_many(claims)


class RefusingGate:
    """A node deposed after its job ran: it may no longer commit for the shard."""

    def admit(self, component_id):
        raise RuntimeError("the shard was taken over")

    def committed(self, component_id):
        pass

    def failed(self, component_id, error):
        pass


@pytest.fixture
def clustered(tmp_path, hdfs_cluster, hdfs_store, spark_local):
    layout = ClusterLayout("main", hdfs_store.root)
    storage = hdfs_store.storage
    content = CountingContent(open_node_content(storage, layout, INCARNATION, str(tmp_path / "local")))
    queue, results = FlowFileQueue("in", swap_threshold=1 << 30), FlowFileQueue("out", swap_threshold=1 << 30)
    shard = open_shard(
        LocalStorage(), str(tmp_path / "shard"), INCARNATION.id, [queue, results], checkpoint_interval=None
    )
    shard.recover()
    staging = SparkStaging(storage, f"{layout.hdfs_cluster}/spark", hdfs_cluster.url)
    services = ServiceRegistry()
    services.register("spark", lambda: spark_local)
    services.register("spark.staging", lambda: staging)
    node = Node(content, queue, results, shard, staging, layout, storage, services)
    yield node
    shard.wal.close()
    content.close()


class Node:
    def __init__(self, content, queue, results, shard, staging, layout, storage, services):
        self.content, self.queue, self.results, self.shard = content, queue, results, shard
        self.staging, self.layout, self.storage, self.services = staging, layout, storage, services

    def session(self, gate=None) -> ProcessSession:
        """`success` and `failure` both go to `results` (a test tells them by `spark.error`)."""
        committer = DurableCommitter(self.shard, self.content, None, outbox=False, gate=gate)
        return ProcessSession(
            component_id="sql",
            component_type="ExecuteSparkSQL",
            committer=committer,
            content=self.content,
            shard=self.shard,
            incoming=[self.queue],
            outgoing={"in": [self.queue], "success": [self.results], "failure": [self.results]},
            auto_terminated=("original",),
            clock_ms=lambda: int(time.time() * 1000),
            gate=gate,
        )

    def load(self, payloads) -> None:
        loading = self.session()
        for number, payload in enumerate(payloads):
            flowfile = loading.create(attributes={"mime.type": "application/x-ndjson", "filename": f"f{number}"})
            loading.transfer(loading.write_bytes(flowfile, payload), "in")
        loading.commit()

    def run(self, gate=None, **properties) -> list:
        """One batch through ExecuteSparkSQL, committed; the outputs it queued."""
        definition = parse_flow(
            {
                "processors": [
                    {
                        "id": "sql",
                        "type": "ExecuteSparkSQL",
                        "properties": {
                            "sql": QUERY,
                            "record_format": "json",
                            "batch_size": 1000,
                            "output_partitions": 2,
                            **properties,
                        },
                        "auto_terminate": ["success", "original", "failure"],
                    }
                ]
            }
        )
        context = ProcessContext(
            "sql", definition.processors["sql"].properties, {}, services=self.services, has_incoming=True
        )
        work = self.session(gate)
        self.processor = ExecuteSparkSQL("sql")
        self.processor.on_trigger(context, work)
        if not work.is_closed:
            work.commit()
        return self.results.poll(self.results.count, int(time.time() * 1000))[0] if self.results.count else []


def payloads(files: int, records: int) -> list[bytes]:
    return [
        b"".join(json.dumps({"id": f * records + r, "name": f"n{f}-{r}"}).encode() + b"\n" for r in range(records))
        for f in range(files)
    ]


def records_of(node, flowfiles) -> list[dict]:
    return sorted(
        (
            json.loads(line)
            for flowfile in flowfiles
            for line in node.content.read(flowfile.content_claim).splitlines()
            if line
        ),
        key=lambda record: record["id"],
    )


def container_files(node) -> set[str]:
    root = f"{node.layout.hdfs_content}/{INCARNATION.id}/{INCARNATION.id}"
    return {
        entry.path
        for section in node.storage.list(root)
        if section.is_dir
        for entry in node.storage.list(section.path)
        if not entry.is_dir
    }


def test_claims_go_to_spark_by_reference_and_its_output_comes_back_as_hdfs_only_claims(clustered):
    node = clustered
    node.load(payloads(6, 50))
    node.content.reads.clear()
    outputs = node.run()
    assert outputs, "the batch made no output"
    assert node.content.reads == [], "the node read input content itself"
    records = records_of(node, outputs)
    assert records == [{"id": n, "name": f"N{n // 50}-{n % 50}"} for n in range(300)]
    local, hdfs = node.content.replicas.replicas
    root = f"{node.layout.hdfs_content}/{INCARNATION.id}/{INCARNATION.id}"
    for flowfile in outputs:
        claim = flowfile.content_claim
        assert claim.resource.container == INCARNATION.id and claim.offset == 0
        assert node.storage.exists(resource_path(root, claim.resource))  # in the container, on HDFS only
        assert not local.exists(claim)
        assert node.content.claimant_count(claim) == 1
    assert node.queue.count == 0  # the inputs left with the commit that made the outputs
    # Small JSON-lines claims: copied by the executors into one shared staging file.
    assert node.processor.last_batch_inputs == {
        "in_place": 0,
        "copied_by_executors": 6,
        "copied_by_node": 0,
        "vouched_by_hdfs": 0,
        "joined_by_executors": 6,
    }
    assert not node.storage.list(node.staging.processor_directory(INCARNATION.id, "sql")), "staging was left"


def test_a_record_that_does_not_parse_sends_a_joined_batch_to_failure_whole_and_intact(clustered):
    node = clustered
    sent = payloads(3, 10) + [b'{"id": 30, "name": "n3-0"}\n{"id": 31, "name": \n']
    node.load(sent)
    outputs = node.run()
    assert node.processor.last_batch_inputs["joined_by_executors"] == 4  # one staging file for the four
    assert len(outputs) == 4 and all(
        "MALFORMED_RECORD" in flowfile.attributes.get("spark.error", "") for flowfile in outputs
    ), [f.attributes.get("spark.error") for f in outputs]
    assert sorted(node.content.read(flowfile.content_claim) for flowfile in outputs) == sorted(sent)
    assert node.queue.count == 0


def test_claims_that_fill_their_resource_files_are_read_where_they_are(clustered):
    node = clustered
    big = payloads(3, 40_000)  # each over a clustered node's 1 MB resource: a resource of its own
    assert all(len(payload) > REPLICATED_RESOURCE_SIZE for payload in big)
    node.load(big)
    outputs = node.run(sql="SELECT id, _attr_filename AS source FROM flowfiles", attribute_columns="filename")
    assert node.processor.last_batch_inputs == {
        "in_place": 3,
        "copied_by_executors": 0,
        "copied_by_node": 0,
        "vouched_by_hdfs": 3,
        "joined_by_executors": 0,
    }  # not read before
    assert node.content.reads == []
    assert records_of(node, outputs) == [{"id": n, "source": f"f{n // 40_000}"} for n in range(120_000)]


def test_a_node_that_may_no_longer_commit_moves_nothing_into_its_container(clustered):
    node = clustered
    node.load(payloads(3, 20))
    before = container_files(node)
    assert node.run(gate=RefusingGate()) == []
    assert container_files(node) == before
    assert node.queue.count == 3 and node.results.count == 0  # rolled back: every input is queued again


def test_an_input_damaged_on_hdfs_is_staged_by_the_node_from_its_local_copy(clustered, caplog):
    node = clustered
    node.load(payloads(4, 10))
    node.content.reads.clear()
    claim = next(record.content_claim for record in node.shard.wal.records.values() if record.content_claim is not None)
    node.content.replicas.seal(claim.resource)
    path = resource_path(f"{node.layout.hdfs_content}/{INCARNATION.id}/{INCARNATION.id}", claim.resource)
    damaged = bytearray(node.storage.read(path))
    damaged[claim.offset + 3] ^= 0x55
    node.storage.delete(path)
    with node.storage.create(path) as out:
        out.write(bytes(damaged))
    with caplog.at_level(logging.WARNING):
        outputs = node.run()
    assert [r for r in caplog.records if "could not be read from HDFS on the executors" in r.getMessage()]
    assert node.content.reads == [claim]  # the node read the damaged one itself, from its local copy
    assert node.processor.last_batch_inputs == {
        "in_place": 0,
        "copied_by_executors": 3,
        "copied_by_node": 1,
        "vouched_by_hdfs": 0,
        "joined_by_executors": 3,
    }
    assert [record["id"] for record in records_of(node, outputs)] == list(range(40))


def test_an_input_rewritten_on_hdfs_is_not_vouched_for_and_is_staged_by_the_node_from_its_local_copy(clustered, caplog):
    """A claim that fills its resource file is read in place unread only while HDFS's
    whole-file CRC equals the one its checksum records compose. Rewritten through the
    HDFS API, the file's HDFS CRCs describe the new bytes: the CRCs disagree, the
    executors read it, find the damage, and the node stages its local copy."""
    node = clustered
    big = payloads(3, 40_000)
    node.load(big)
    node.content.reads.clear()
    claim = next(
        record.content_claim for record in node.shard.wal.records.values() if record.attributes.get("filename") == "f1"
    )
    node.content.replicas.seal(claim.resource)
    path = resource_path(f"{node.layout.hdfs_content}/{INCARNATION.id}/{INCARNATION.id}", claim.resource)
    assert claim.offset == 0 and node.storage.status(path).length == claim.length
    damaged = bytearray(node.storage.read(path))
    damaged[len(damaged) // 2] ^= 0x55
    node.storage.delete(path)
    with node.storage.create(path) as out:
        out.write(bytes(damaged))
    with caplog.at_level(logging.WARNING):
        outputs = node.run()
    assert node.processor.last_batch_inputs == {
        "in_place": 2,
        "copied_by_executors": 0,
        "copied_by_node": 1,
        "vouched_by_hdfs": 2,
        "joined_by_executors": 0,
    }
    assert [r for r in caplog.records if "could not be read from HDFS on the executors" in r.getMessage()]
    assert node.content.reads == [claim]  # the node read the damaged one itself, from its local copy
    assert [record["id"] for record in records_of(node, outputs)] == list(range(120_000))
