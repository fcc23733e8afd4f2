"""Fencing on real HDFS: an old owner, a separate process still writing its shard's
WAL, is fenced by renaming the directory and recovering every lease; its next write
fails, it cannot re-create the directory, and the adopter recovers every committed
record at epoch + 1. Re-running the fence after a crash mid-fence is harmless."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time

import pytest

from cluster.core.layout import ClusterLayout
from cluster.failover.fencing import FenceHooks, current_directory, fence
from repositories.flowfile import FlowFileRecord, Put, WriteAheadLog

pytestmark = [pytest.mark.hdfs]
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EPOCH = 7


def record(index: int) -> FlowFileRecord:
    return FlowFileRecord(f"ff-{index}", {"i": str(index)}, None, "q", index, index, index)


def writer_main() -> None:
    """The old owner: URL WAL_DIRECTORY EPOCH COUNT. Commits COUNT records, says
    "A <n>" after each, then on each stdin line "write" tries one more commit, and on
    "create" tries to create a file in its (fenced) shard directory."""
    from replication.hdfs_storage import HdfsStorage

    url, directory, epoch, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    storage = HdfsStorage(url)
    wal = WriteAheadLog(storage, directory, partitions=2, epoch=epoch, checkpoint_interval=None)
    wal.recover()
    out = sys.stdout
    for index in range(count):
        wal.update([Put(record(index))])
        out.write(f"A {index}\n")
        out.flush()
    next_index = count
    for line in sys.stdin:
        command = line.strip()
        try:
            if command == "write":
                wal.update([Put(record(next_index))])
                next_index += 1
            elif command == "create":
                with storage.create(directory.rsplit("/", 1)[0] + "/zombie-file") as file:
                    file.write(b"zombie")
                    file.sync()
            out.write("OK\n")
        except Exception as error:  # noqa: BLE001 - reported to the test
            chain, cause = [], error
            while cause is not None:
                chain.append(type(cause).__name__)
                cause = cause.__cause__ or cause.__context__
            out.write(f"ERR {','.join(chain)} {str(error).splitlines()[0][:200]}\n")
        out.flush()


def read_line(process, timeout=60.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the writer process stopped answering")
        ready, _, _ = select.select([process.stdout], [], [], remaining)
        if ready:
            line = process.stdout.readline()
            if not line:
                raise EOFError(f"the writer exited: {process.stderr.read()[-2000:]}")
            return line.strip()


@pytest.fixture
def layout(hdfs_store):
    layout = ClusterLayout("c1", hdfs_store.root)
    hdfs_store.storage.mkdir(layout.hdfs_shards, parents=True)
    return layout


def start_writer(hdfs_cluster, layout, shard, count):
    directory = layout.shard_directory(shard)
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from tests.integration.test_cluster_fencing import writer_main; writer_main()",
            hdfs_cluster.url,
            layout.wal_directory(directory),
            str(EPOCH),
            str(count),
        ],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_old_owner_process_is_fenced_and_the_adopter_recovers_every_committed_record(hdfs_cluster, hdfs_store, layout):
    storage = hdfs_store.storage
    shard = "n1-7"
    storage.mkdir(layout.shard_directory(shard))
    count = 25
    writer = start_writer(hdfs_cluster, layout, shard, count)
    try:
        acked = [read_line(writer) for _ in range(count)]
        assert acked[-1] == f"A {count - 1}"

        report = fence(storage, layout, shard, EPOCH + 1)
        assert report.directory == layout.fenced_directory(shard, EPOCH + 1)
        assert {p.rsplit("/", 1)[-1] for p in report.files} >= {"journal-0", "journal-1"}

        # The old owner is still running, with its files open: every write now fails.
        writer.stdin.write("write\n")
        writer.stdin.flush()
        answer = read_line(writer)
        assert answer.startswith("ERR"), answer
        assert "LeaseLost" in answer or "StorageError" in answer or "StorageFileNotFound" in answer, answer
        writer.stdin.write("create\n")
        writer.stdin.flush()
        answer = read_line(writer)
        assert answer.startswith("ERR") and "StorageFileNotFound" in answer, answer
        assert not storage.exists(layout.shard_directory(shard))

        # The adopter restores the shard at epoch + 1 from the fenced directory.
        adopted = WriteAheadLog(
            storage, layout.wal_directory(report.directory), partitions=2, epoch=EPOCH + 1, checkpoint_interval=None
        )
        recovered = adopted.recover()
        assert sorted(recovered) == sorted(f"ff-{i}" for i in range(count))
        assert recovered["ff-3"] == record(3)
        adopted.update([Put(record(1000))])
        adopted.close()
    finally:
        writer.kill()
        writer.wait()
        for stream in (writer.stdin, writer.stdout, writer.stderr):
            stream.close()
    # The old owner's epoch can never write this WAL again (StaleEpochError).
    from repositories.flowfile import StaleEpochError

    with pytest.raises(StaleEpochError):
        WriteAheadLog(
            storage, layout.wal_directory(report.directory), partitions=2, epoch=EPOCH, checkpoint_interval=None
        ).recover()


def test_a_crash_mid_fence_is_finished_by_the_next_adopter(hdfs_cluster, hdfs_store, layout):
    storage = hdfs_store.storage
    shard = "n2-7"
    storage.mkdir(layout.shard_directory(shard))
    writer = start_writer(hdfs_cluster, layout, shard, 5)
    try:
        for _ in range(5):
            read_line(writer)

        class Crash(Exception):
            pass

        def crash(path):
            raise Crash(path)

        # The first adopter renames, then dies before recovering any lease.
        with pytest.raises(Crash):
            fence(storage, layout, shard, EPOCH + 1, hooks=FenceHooks(after_rename=crash))
        assert current_directory(storage, layout, shard) == (layout.fenced_directory(shard, EPOCH + 1), EPOCH + 1)
        # The next adopter (the shard moved again, epoch + 2) fences from where it is.
        report = fence(storage, layout, shard, EPOCH + 2)
        assert report.renamed_from == layout.fenced_directory(shard, EPOCH + 1)
        writer.stdin.write("write\n")
        writer.stdin.flush()
        assert read_line(writer).startswith("ERR")
        wal = WriteAheadLog(
            storage, layout.wal_directory(report.directory), partitions=2, epoch=EPOCH + 2, checkpoint_interval=None
        )
        assert sorted(wal.recover()) == sorted(f"ff-{i}" for i in range(5))
        wal.close()
    finally:
        writer.kill()
        writer.wait()
        for stream in (writer.stdin, writer.stdout, writer.stderr):
            stream.close()
