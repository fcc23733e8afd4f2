"""The Parquet export through the storage protocol (local disk here; HDFS in
tests/integration/test_provenance_spark.py): temporary name then rename, idempotent,
and a failure logged and retried by the next pass."""

import logging
import os
import threading
import time

import pyarrow.parquet as pq
import pytest

from replication.provenance_export import ProvenanceExporter, ProvenanceExportThread
from repositories.provenance import ProvenanceRepository
from repositories.provenance.parquet_export import EXPORT_SCHEMA, hour_of
from repositories.storage import LocalStorage
from tests.storage_faults import Fault, FaultyStorage

from .conftest import event, make_config


@pytest.fixture
def repository(tmp_path, clock):
    repository = ProvenanceRepository(make_config(tmp_path / "provenance"), clock=clock)
    yield repository
    repository.close(timeout=30)


def rolled_over(repository, count):
    repository.register_events([event("CREATE") for _ in range(count)])
    repository.sync(timeout=30)


def parquet_files(root):
    return sorted(os.path.relpath(os.path.join(d, n), root) for d, _, names in os.walk(root) for n in names)


def wait_until(condition, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


def test_each_event_file_becomes_a_parquet_file_once(repository, tmp_path, clock):
    root = str(tmp_path / "hdfs" / "provenance")
    exporter = ProvenanceExporter(LocalStorage(), root, "n1", str(tmp_path / "markers"))
    rolled_over(repository, 3)
    rolled_over(repository, 2)
    first = exporter.export_pending(repository)
    hour = hour_of(int(clock() * 1000))
    assert (first.written, first.found, first.event_files, first.error) == (2, 0, 2, None)
    assert parquet_files(root) == [f"node=n1/hour={hour}/events-1-3.parquet", f"node=n1/hour={hour}/events-4-5.parquet"]
    table = pq.read_table(os.path.join(root, f"node=n1/hour={hour}/events-1-3.parquet"))
    assert table.schema.equals(EXPORT_SCHEMA) and table.column("event_id").to_pylist() == [1, 2, 3]
    assert exporter.export_pending(repository).event_files == 0  # marked: nothing to do

    # Without markers (a lost local disk), a pass finds every part and writes none.
    fresh = ProvenanceExporter(LocalStorage(), root, "n1", str(tmp_path / "other-markers"))
    again = fresh.export_pending(repository)
    assert (again.written, again.found, again.event_files) == (0, 2, 2)


def test_a_failed_export_leaves_no_final_file_logs_one_line_and_the_next_pass_finishes(repository, tmp_path, caplog):
    root = str(tmp_path / "hdfs" / "provenance")
    storage = FaultyStorage(LocalStorage())
    exporter = ProvenanceExporter(storage, root, "n1", str(tmp_path / "markers"))
    rolled_over(repository, 3)
    storage.arm(Fault("rename", "before"))
    with caplog.at_level(logging.ERROR, logger="replication.provenance_export"):
        failed = exporter.export_pending(repository)
    assert failed.error is not None and failed.written == 0
    said = [r.getMessage() for r in caplog.records if r.name == "replication.provenance_export"]
    assert [message.count("\n") for message in said] == [0]
    assert "event file 1" in said[0] and "retried later" in said[0]
    assert all(name.rsplit("/", 1)[-1].startswith("_") for name in parquet_files(root))  # only the partial

    rolled_over(repository, 1)
    retried = exporter.export_pending(repository)
    assert (retried.written, retried.event_files, retried.error) == (2, 2, None)
    assert [name.rsplit("/", 1)[-1] for name in parquet_files(root)] == ["events-1-3.parquet", "events-4-4.parquet"]


def test_the_export_thread_runs_a_pass_at_start_and_at_each_event_file(tmp_path, clock):
    root = str(tmp_path / "hdfs" / "provenance")
    thread = ProvenanceExportThread(ProvenanceExporter(LocalStorage(), root, "n1", str(tmp_path / "markers")))
    repository = ProvenanceRepository(make_config(tmp_path / "provenance"), clock=clock, on_event_file=thread.wake)
    try:
        thread.start(repository)
        wait_until(lambda: thread.passes >= 1)
        rolled_over(repository, 2)
        wait_until(lambda: len(parquet_files(root)) == 1)
        assert thread.last.error is None
    finally:
        thread.stop()
        repository.close(timeout=30)
    assert not any(t.name.startswith("provenance-export") for t in threading.enumerate())
