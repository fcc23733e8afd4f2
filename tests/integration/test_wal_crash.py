"""SIGKILL crash torture of the FlowFile WAL.

A writer process runs a deterministic workload (seeded) of durable updates and
periodic checkpoints, and reports on a pipe each transaction that returned ("A i")
and each checkpoint it starts ("K i"). The test kills it with SIGKILL at a random
moment, restores, and checks that the recovered map is exactly the model after
either every acknowledged transaction, or those plus the one in flight.

Local disk: the writer is forked from a fork server (cheap, so CI runs 200+ trials,
and safe whatever threads the test process runs). HDFS: the writer is a separate
interpreter (the HDFS client cannot be forked); after the kill a second client
recovers the leases, then restores.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import select
import signal
import subprocess
import sys
import time

import pytest

from repositories.claims import ContentClaim, ResourceClaim
from repositories.flowfile import Delete, FlowFileRecord, Put, SwapFile, SwapIn, SwapOut, WriteAheadLog
from repositories.flowfile.record import apply_update

TRANSACTIONS = 40
CHECKPOINT_EVERY = 9
LOCAL_TRIALS = int(os.environ.get("CUSTODY_WAL_CRASH_TRIALS", "300"))
HDFS_TRIALS = int(os.environ.get("CUSTODY_WAL_HDFS_CRASH_TRIALS", "6"))


def workload(seed: int) -> list:
    """The transactions of one trial: puts, replacements, deletes, swap out and in."""
    rng = random.Random(seed)
    live: dict = {}
    swapped: dict = {}
    transactions = []
    for txn in range(TRANSACTIONS):
        choice = rng.random()
        updates: list = []
        if choice < 0.55 or not live:
            for _ in range(rng.randint(1, 4)):
                n = rng.randrange(30)
                record = FlowFileRecord(
                    f"ff-{n}",
                    {"txn": str(txn), "filename": f"f{n}"},
                    ContentClaim(ResourceClaim("c", n % 3, f"r{txn // 5}"), n, txn),
                    "q1",
                    txn,
                    1000 + txn,
                    1000,
                    0,
                )
                updates.append(Put(record))
        elif choice < 0.75:
            updates.append(Delete(rng.choice(sorted(live))))
        elif choice < 0.9 or not swapped:
            ids = rng.sample(sorted(live), min(len(live), rng.randint(1, 3)))
            location = f"swap/{txn}"
            updates.append(SwapOut(SwapFile(location, "q1", len(ids), 0), tuple(ids)))
            swapped[location] = [live[i] for i in ids]
        else:
            location = rng.choice(sorted(swapped))
            updates.append(SwapIn(location))
            updates.extend(Put(record) for record in swapped.pop(location) if record.id not in live)
        for update in updates:
            apply_update(live, {}, update)
        transactions.append(updates)
    return transactions


def model_after(transactions: list, count: int) -> tuple[dict, dict]:
    records: dict = {}
    swaps: dict = {}
    for updates in transactions[:count]:
        for update in updates:
            apply_update(records, swaps, update)
    return records, swaps


def run_writer(storage, directory: str, seed: int, partitions: int, out) -> None:
    wal = WriteAheadLog(storage, directory, partitions=partitions, checkpoint_interval=None)
    wal.recover()
    for index, updates in enumerate(workload(seed)):
        if index and index % CHECKPOINT_EVERY == 0:
            out.write(f"K {index}\n".encode())
            out.flush()
            wal.checkpoint()
        wal.update(updates)
        out.write(f"A {index}\n".encode())
        out.flush()
    out.write(b"D\n")
    out.flush()
    # Stay alive until killed: the test decides when the "crash" happens.
    signal.pause()


def writer_main() -> None:
    """Entry point of the HDFS writer subprocess: URL DIRECTORY SEED PARTITIONS."""
    from replication.hdfs_storage import HdfsStorage

    url, directory, seed, partitions = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    run_writer(HdfsStorage(url), directory, seed, partitions, sys.stdout.buffer)


FORK_SERVER = multiprocessing.get_context("forkserver")
# Imported once in the fork server, so each writer starts without importing anything.
FORK_SERVER.set_forkserver_preload([__name__, "repositories.storage", "repositories.flowfile"])


def forked_writer(directory: str, seed: int, partitions: int, sender) -> None:
    from repositories.storage import LocalStorage

    run_writer(LocalStorage(), directory, seed, partitions, os.fdopen(sender.fileno(), "wb", buffering=0))


class AckReader:
    def __init__(self, fd: int):
        self.fd, self.buffer, self.acked, self.checkpoints, self.done = fd, b"", 0, 0, False

    def read_until(self, predicate, deadline: float) -> None:
        while not predicate():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("the writer stopped reporting progress")
            ready, _, _ = select.select([self.fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(self.fd, 4096)
            if not chunk:
                return
            self.buffer += chunk
            *lines, self.buffer = self.buffer.split(b"\n")
            for line in lines:
                if line.startswith(b"A "):
                    self.acked = int(line[2:]) + 1
                elif line.startswith(b"K "):
                    self.checkpoints += 1
                elif line == b"D":
                    self.done = True


def kill_at_random_moment(reader: AckReader, pid: int, rng: random.Random) -> None:
    target = rng.randrange(TRANSACTIONS + 1)
    in_checkpoint = rng.random() < 0.3
    deadline = time.monotonic() + 60
    if in_checkpoint:
        wanted = rng.randint(1, (TRANSACTIONS - 1) // CHECKPOINT_EVERY)
        reader.read_until(lambda: reader.checkpoints >= wanted or reader.done, deadline)
    else:
        reader.read_until(lambda: reader.acked >= target or reader.done, deadline)
    # The fault itself: a random sub-millisecond to few-millisecond delay lands the
    # kill inside an update, a sync or a checkpoint step.
    time.sleep(rng.random() * 0.004)
    os.kill(pid, signal.SIGKILL)
    reader.read_until(lambda: False, deadline)  # drain acks sent before the kill, until EOF


def check_recovery(storage, directory: str, seed: int, acked: int, partitions: int) -> str:
    wal = WriteAheadLog(storage, directory, partitions=partitions, checkpoint_interval=None)
    recovered = wal.recover()
    swaps = dict(wal.swap_files)
    wal.close()
    transactions = workload(seed)
    candidates = [acked] + ([acked + 1] if acked < TRANSACTIONS else [])
    for count in candidates:
        if (recovered, swaps) == model_after(transactions, count):
            return wal.last_recovery.case.name
    raise AssertionError(
        f"seed {seed}: recovered {len(recovered)} records matches no model state after {candidates} transactions"
    )


@pytest.mark.slow
def test_sigkill_torture_local(tmp_path):
    from repositories.storage import LocalStorage

    storage = LocalStorage()
    rng = random.Random(int(os.environ.get("CUSTODY_WAL_CRASH_SEED", "3")))
    cases = set()
    acknowledged = []
    for trial in range(LOCAL_TRIALS):
        seed = rng.randrange(1 << 30)
        partitions = rng.randint(1, 3)
        directory = str(tmp_path / f"trial-{trial}")
        # The writer comes from a fork server: a clean, single-threaded process. Forking
        # pytest itself deadlocked the child whenever another test had left threads
        # running (an HDFS client's runtime, Spark's gateway) holding a lock at fork time.
        receiver, sender = FORK_SERVER.Pipe(duplex=False)
        writer = FORK_SERVER.Process(target=forked_writer, args=(directory, seed, partitions, sender))
        writer.start()
        sender.close()
        reader = AckReader(receiver.fileno())
        try:
            kill_at_random_moment(reader, writer.pid, rng)
        finally:
            receiver.close()
            writer.join()
        cases.add(check_recovery(storage, directory, seed, reader.acked, partitions))
        acknowledged.append(reader.acked)
    # The kills must have landed all over the run, not only before the first update.
    assert {"SNAPSHOT_ONLY", "PARTIAL_ONLY", "BOTH"} <= cases, cases
    assert sum(1 for acked in acknowledged if acked >= TRANSACTIONS // 2) > LOCAL_TRIALS // 5


@pytest.mark.slow
@pytest.mark.hdfs
def test_sigkill_torture_hdfs_with_lease_recovery(hdfs_store):
    from replication.hdfs_storage import HdfsStorage

    from .test_wal_model import recover_leases

    url = hdfs_store.storage.url if hasattr(hdfs_store.storage, "url") else None
    if url is None:
        pytest.fail("HdfsStorage exposes no .url for the writer subprocess")
    second_client = HdfsStorage(url)
    rng = random.Random(11)
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for trial in range(HDFS_TRIALS):
        seed = rng.randrange(1 << 30)
        directory = f"{hdfs_store.root}/trial-{trial}"
        process = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from tests.integration.test_wal_crash import writer_main; writer_main()",
                url,
                directory,
                str(seed),
                "2",
            ],
            cwd=repo,
            stdout=subprocess.PIPE,
        )
        reader = AckReader(process.stdout.fileno())
        try:
            kill_at_random_moment(reader, process.pid, rng)
        finally:
            process.wait()
            process.stdout.close()
        recover_leases(second_client, directory)
        check_recovery(second_client, directory, seed, reader.acked, 2)
