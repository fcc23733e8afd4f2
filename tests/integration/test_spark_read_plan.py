"""A deterministic Spark batch writes the same files, byte for byte, when it is rerun
on a cluster of another size, on the real embedded Spark: a narrow query through the
fixed read plan and no shuffle, any other query through hash partitioning and a sort."""

from __future__ import annotations

import json

import pytest

from flow.spark import records as records_module
from flow.spark.batches import part_index
from flow.spark.records import StagedInput, arrange, is_narrow, plan_batch_reads, read_batch, write_records

pytestmark = [pytest.mark.spark]

NARROW = "SELECT id, upper(name) AS name, amount * 2 AS doubled FROM flowfiles WHERE amount % 7 <> 0"
SHUFFLING = "SELECT amount % 10 AS bucket, count(*) AS records, sum(id) AS ids FROM flowfiles GROUP BY amount % 10"
PARTITIONS = 3


@pytest.fixture
def inputs(tmp_path) -> list[StagedInput]:
    """Six JSON lines files of different sizes (about 30 to 180 KB), ids distinct."""
    directory = tmp_path / "in"
    directory.mkdir()
    staged, first = [], 0
    for index in range(6):
        count = 500 * (index + 1)
        lines = [
            json.dumps({"id": n, "name": f"record-{n:07d}", "amount": n % 1000}) for n in range(first, first + count)
        ]
        first += count
        path = directory / f"in-{index:06d}.json"
        path.write_text("\n".join(lines) + "\n")
        staged.append(StagedInput(index, "json", f"file://{path}"))
    return staged


def run(spark, out, inputs, query: str, *, cores: int, fixed: bool) -> tuple[bool, list[bytes]]:
    """The batch on a session that takes `cores` as its cluster's size (and a cluster's
    own small open cost); whether its arranged plan stayed narrow, and its part files'
    bytes by partition."""
    session = spark.newSession()
    session.conf.set("spark.sql.leafNodeDefaultParallelism", str(cores))
    session.conf.set("spark.sql.files.openCostInBytes", "1024")
    if fixed:
        plan_batch_reads(session, PARTITIONS)
    read_batch(session, inputs).createOrReplaceTempView("flowfiles")
    arranged = arrange(session.sql(query), PARTITIONS, deterministic=True)
    write_records(arranged, f"file://{out}", "json")
    parts = sorted(
        (part_index(path.name), path.read_bytes()) for path in out.iterdir() if part_index(path.name) is not None
    )
    return is_narrow(arranged), [data for _, data in parts]


def records(parts: list[bytes]) -> list[dict]:
    return [json.loads(line) for data in parts for line in data.splitlines()]


def test_a_narrow_query_is_rerun_file_for_file_on_a_cluster_of_another_size(spark_local, inputs, tmp_path):
    narrow, on_one = run(spark_local, tmp_path / "one", inputs, NARROW, cores=1, fixed=True)
    _, on_seven = run(spark_local, tmp_path / "seven", inputs, NARROW, cores=7, fixed=True)
    assert narrow, "a projection and a filter should need no shuffle"
    assert len(on_one) > 1
    assert on_one == on_seven
    expected = sorted(n for n in range(10_500) if (n % 1000) % 7)
    assert sorted(record["id"] for record in records(on_one)) == expected
    assert all(record["doubled"] == 2 * (record["id"] % 1000) for record in records(on_one))

    # The control: with the cluster's own split plan the same query writes other files.
    _, unfixed_one = run(spark_local, tmp_path / "unfixed-one", inputs, NARROW, cores=1, fixed=False)
    _, unfixed_seven = run(spark_local, tmp_path / "unfixed-seven", inputs, NARROW, cores=7, fixed=False)
    assert unfixed_one != unfixed_seven
    assert sorted(records(unfixed_one), key=lambda r: r["id"]) == sorted(records(on_one), key=lambda r: r["id"])


def test_a_query_that_shuffles_is_partitioned_and_sorted_to_the_same_files(spark_local, inputs, tmp_path):
    narrow, on_one = run(spark_local, tmp_path / "one", inputs, SHUFFLING, cores=1, fixed=True)
    _, on_seven = run(spark_local, tmp_path / "seven", inputs, SHUFFLING, cores=7, fixed=True)
    assert not narrow
    assert on_one == on_seven
    assert sorted(record["bucket"] for record in records(on_one)) == list(range(10))
    assert sum(record["records"] for record in records(on_one)) == 10_500


def test_a_query_with_a_random_column_is_never_taken_for_narrow(spark_local, inputs):
    session = spark_local.newSession()
    plan_batch_reads(session, PARTITIONS)
    read_batch(session, inputs).createOrReplaceTempView("flowfiles")
    assert is_narrow(session.sql("SELECT id FROM flowfiles").coalesce(PARTITIONS))
    assert not is_narrow(session.sql("SELECT id, rand() AS r FROM flowfiles").coalesce(PARTITIONS))


def test_a_narrow_batch_larger_than_the_split_cap_is_read_in_tasks_of_one_size(spark_local, tmp_path, monkeypatch):
    """Twelve inputs of one size, four partitions, a split cap of two inputs' bytes: in
    capped splits a coalesce groups six splits into tasks of 2, 4, 2 and 4 inputs;
    read in one split per partition, each task takes 3."""
    directory = tmp_path / "in"
    directory.mkdir()
    staged = []
    for index in range(12):
        lines = [json.dumps({"id": f"{index:02d}-{n:05d}", "amount": n}) for n in range(1000)]
        path = directory / f"in-{index:06d}.json"
        path.write_text("\n".join(lines) + "\n")
        staged.append(StagedInput(index, "json", f"file://{path}"))
    size = (directory / "in-000000.json").stat().st_size
    assert {path.stat().st_size for path in directory.iterdir()} == {size}
    monkeypatch.setattr(records_module, "OPEN_COST_BYTES", 1024)
    monkeypatch.setattr(records_module, "MAX_SPLIT_BYTES", 2 * (size + 1024))
    session = spark_local.newSession()
    plan_batch_reads(session, 4)
    read_batch(session, staged).createOrReplaceTempView("flowfiles")
    query = session.sql("SELECT id, amount + 1 AS next FROM flowfiles")
    assert query.rdd.getNumPartitions() == 6  # the capped splits, before `arrange`
    out = tmp_path / "out"
    write_records(arrange(query, 4, deterministic=True), f"file://{out}", "json")
    counts = sorted(len(path.read_bytes().splitlines()) for path in out.iterdir() if part_index(path.name) is not None)
    assert counts == [3000] * 4
