"""PutParquet on the real embedded Spark: a retried batch is written once, in whatever
grouping its FlowFiles come back; files are partitioned and named by their batch; a
node that may no longer commit for the shard never commits into the dataset."""

from __future__ import annotations

import json
from collections import Counter

import pyarrow.dataset
import pytest

from flow.commit import CommitHooks
from flow.errors import CommitError
from flow.loading import parse_flow
from flow.processor import ProcessContext
from flow.processors import PROCESSOR_TYPES
from flow.services import ServiceRegistry
from flow.session import ProcessSession
from flow.spark.staging import SparkStaging
from repositories.storage import LocalStorage
from tests.durable_shard import DurableShard

pytestmark = [pytest.mark.spark]


class Refused(Exception):
    pass


def put_parquet(tmp_path, spark, **properties):
    properties = {"directory": str(tmp_path / "dataset"), "record_format": "json", **properties}
    definition = parse_flow(
        {
            "processors": [
                {"id": "put", "type": "PutParquet", "properties": properties, "auto_terminate": ["success", "failure"]}
            ]
        }
    )
    services = ServiceRegistry()
    services.register("spark", lambda: spark)
    services.register("spark.staging", lambda: SparkStaging(LocalStorage(), str(tmp_path / "staging"), "file://"))
    context = ProcessContext("put", definition.processors["put"].properties, {}, services=services, has_incoming=True)
    return PROCESSOR_TYPES["PutParquet"]("put"), context


def records(first: int, count: int = 3) -> bytes:
    return "".join(json.dumps({"id": n, "day": f"d{n % 2}"}) + "\n" for n in range(first, first + count)).encode()


def trigger(durable, processor, context):
    session = ProcessSession(
        component_id="put",
        component_type="PutParquet",
        committer=durable.committer,
        content=durable.content,
        shard=durable.shard,
        incoming=[durable.queue],
        auto_terminated=["success", "failure"],
        clock_ms=durable.clock_ms,
        gate=durable.committer.gate,
        penalty_ms=0,
    )
    processor.on_trigger(context, session)
    if not session.is_closed:
        session.commit() if session.touched else session.rollback()


def ids_in(dataset_directory) -> Counter:
    table = pyarrow.dataset.dataset(str(dataset_directory), format="parquet", partitioning="hive").to_table()
    return Counter(table.column("id").to_pylist())


def test_a_batch_retried_after_its_commit_failed_is_written_once(tmp_path, spark_local):
    durable = DurableShard(LocalStorage(), str(tmp_path / "shard"), str(tmp_path / "content"))
    durable.create([records(0), records(3), records(6), records(9)])
    processor, context = put_parquet(tmp_path, spark_local, batch_size=3, partition_by="day")

    # The manifest's rename commits the batch into the dataset; then the session's own
    # commit fails: its FlowFiles go back to their queue.
    durable.committer.hooks = CommitHooks(before_wal=lambda component: (_ for _ in ()).throw(Refused("disk gone")))
    with pytest.raises(CommitError):
        trigger(durable, processor, context)
    written = ids_in(tmp_path / "dataset")
    assert sum(written.values()) == 9 and set(written.values()) == {1}
    assert durable.queue.count == 4

    # The retry takes them in another grouping (all four at once): the three already
    # written are recognised by their manifest, only the fourth is written.
    durable.committer.hooks = CommitHooks()
    context.properties["batch_size"] = 10
    trigger(durable, processor, context)
    assert durable.queue.count == 0
    assert ids_in(tmp_path / "dataset") == Counter(range(12)), "a record was lost or written twice"
    assert not list((tmp_path / "dataset" / "_custody" / "batches").iterdir()), "a finished batch's manifest stayed"
    names = sorted(
        path.relative_to(tmp_path / "dataset").as_posix() for path in (tmp_path / "dataset").rglob("*.parquet")
    )
    assert {name.split("/")[0] for name in names} == {"day=d0", "day=d1"}
    assert all(name.split("/")[1].startswith("part-") for name in names)
    assert len({name.split("/")[1].split("-")[1] for name in names}) == 2, names  # two batches
    assert not list((tmp_path / "staging").rglob("*.parquet")), "staging was left behind"


def test_a_node_that_may_no_longer_commit_for_the_shard_writes_nothing_into_the_dataset(tmp_path, spark_local):
    durable = DurableShard(LocalStorage(), str(tmp_path / "shard"), str(tmp_path / "content"))
    durable.create([records(0)])
    processor, context = put_parquet(tmp_path, spark_local, max_attempts=1)

    class LostShard:
        def admit(self, component):
            raise Refused("this node's ZooKeeper session expired: the shard may have a new owner")

        def committed(self, component):
            pass

        def failed(self, component, error):
            pass

    durable.committer.gate = LostShard()
    trigger(durable, processor, context)
    assert durable.queue.count == 1, "the batch did not roll back to its queue"
    assert not (tmp_path / "dataset").exists() or not list((tmp_path / "dataset").rglob("*.parquet"))
