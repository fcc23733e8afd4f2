"""An input whose content cannot be read goes to `failure` alone and the Spark batch runs
without it, under the batch id of the inputs left: ExecuteSparkSQL routes the others
to `original`, and PutParquet's committed manifest never names it. The content is
staged for real (through the session, on local staging); only Spark's own part (the
query, the Parquet write) is stubbed out. With real Spark:
tests/integration/test_damaged_content.py."""

from __future__ import annotations

from flow.processors.parquet import PutParquet
from flow.processors.spark import ExecuteSparkSQL
from flow.services import ServiceRegistry
from flow.spark.batches import batch_id
from flow.spark.manifest_format import BatchManifest
from flow.spark.session import SPARK_SERVICE
from flow.spark.staging import STAGING_SERVICE, SparkStaging, stage_inputs
from repositories.storage import LocalStorage
from tests.unit.flow.test_unreadable_content import CORRUPTED, NOW, PENALTY_MS, Bench


class _SparkContext:
    def setJobGroup(self, *args, **kwargs):
        pass

    def cancelJobGroup(self, *args):
        pass

    def setLocalProperty(self, *args):
        pass


class _Spark:
    """What the processors ask of a SparkSession before the query runs."""

    sparkContext = _SparkContext()


class StagedSQL(ExecuteSparkSQL):
    """ExecuteSparkSQL whose query is not run: it records what was staged for it."""

    type_name = "TestStagedSQL"
    staged: list = []

    def _run(self, context, spark, staging, directory, inputs, staged):
        StagedSQL.staged.append(sorted(flowfile.attributes["i"] for flowfile, _ in inputs))
        return None


class StagedParquet(PutParquet):
    """PutParquet that stages its batch and commits its manifest, with no Parquet file."""

    type_name = "TestStagedParquet"
    committed: list = []

    def _write(self, context, session, spark, staging, dataset, directory, batch_key, fresh):
        stage_inputs(session, staging, directory, fresh)
        manifest = BatchManifest(
            batch_key, session.shard_id, session.epoch, tuple(flowfile.id for flowfile, _ in fresh), ()
        )
        with staging.storage.create(f"{directory}/manifest.json", overwrite=True) as out:
            out.write(manifest.encode())
        StagedParquet.committed.append(dataset.commit(manifest, f"{directory}/manifest.json"))
        return StagedParquet.committed[-1]


def bench(tmp_path, processor_type: str, stub, properties, relationships) -> Bench:
    """A Bench of `processor_type` configured with `properties`, run by `stub` (the same
    processor with Spark's part stubbed), with a Spark session stub and local staging."""
    services = ServiceRegistry()
    services.register(SPARK_SERVICE, _Spark)
    services.register(STAGING_SERVICE, lambda: SparkStaging(LocalStorage(), str(tmp_path / "spark"), "file://"))
    bench = Bench(processor_type, properties, relationships, services=services)
    bench.processor = stub("p")
    return bench


def test_execute_spark_sql_runs_its_batch_without_the_input_it_cannot_read(tmp_path):
    StagedSQL.staged = []
    sql = bench(
        tmp_path, "ExecuteSparkSQL", StagedSQL, {"sql": "SELECT * FROM flowfiles"}, ("success", "original", "failure")
    )
    flowfiles = sql.add(*(f'{{"id": {index}}}\n'.encode() for index in range(4)), filename="x.json")
    sql.damage(flowfiles[2], CORRUPTED, good=5)
    sql.run_once()
    assert StagedSQL.staged == [["0", "1", "3"]], "Spark ran once, without it"
    assert [a["i"] for a, _, _ in sql.drain("original")] == ["0", "1", "3"]
    ((attributes, _, penalty),) = sql.drain("failure")
    assert attributes["i"] == "2" and attributes["content.error"].startswith("ContentCorrupted: ")
    assert penalty == NOW + PENALTY_MS
    assert list((tmp_path / "spark").rglob("*.json")) == [], "the staging of both attempts is gone"


def test_put_parquet_commits_a_manifest_that_never_names_the_input_it_cannot_read(tmp_path):
    dataset = tmp_path / "dataset"
    StagedParquet.committed = []
    parquet = bench(tmp_path, "PutParquet", StagedParquet, {"directory": str(dataset)}, ("success", "failure"))
    flowfiles = parquet.add(*(f'{{"id": {index}}}\n'.encode() for index in range(3)), filename="x.json")
    parquet.damage(flowfiles[0], CORRUPTED)
    parquet.run_once()
    good = sorted(flowfile.id for flowfile in flowfiles[1:])
    (committed,) = StagedParquet.committed
    assert sorted(committed.flowfiles) == good and committed.batch == batch_id(good)
    assert sorted(a["parquet.batch.id"] for a, _, _ in parquet.drain("success")) == [committed.batch] * 2
    ((attributes, _, _),) = parquet.drain("failure")
    assert attributes["i"] == "0" and "parquet.batch.id" not in attributes
    assert attributes["content.error"].startswith("ContentCorrupted: ")
