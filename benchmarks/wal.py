"""FlowFile WAL: custody durable (group commit) against NiFi's own WAL, side by side.

Both sides write the same records (10 attributes, a content claim) in batches of 1,
10 and 100 from 1 and 4 writer threads, into a fresh directory each run. NiFi runs in
the Java harness of benchmarks/nifi_wal (org.apache.nifi:nifi-write-ahead-log,
SequentialAccessWriteAheadLog) with always.sync true ("durable") and false ("default",
NiFi's shipped setting, which loses recent updates on power loss). Updates per second
counts FlowFile records written (batch size x transactions).

Also measured: recovery of 1,000,000 records (snapshot plus a journal tail), and, with
--hdfs URL, commit latency p50/p99 against the raw hsync latency of the same cluster,
and the recovery an adopter waits for (a WAL of 500 FlowFiles read back, then its
forced checkpoint: a new snapshot and journals) against one new HDFS file made and
synced, the least any checkpoint costs.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from repositories.storage import Storage

NIFI_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nifi_wal")
CONFIGURATIONS = [(1, 1), (10, 1), (100, 1), (1, 4), (10, 4), (100, 4)]  # (batch, threads)


def add_arguments(parser) -> None:
    parser.add_argument(
        "--seconds", type=float, default=None, help="seconds per throughput run (default 5, --quick 1.5)"
    )
    parser.add_argument("--partitions", type=int, default=4, help="custody WAL partitions")
    parser.add_argument(
        "--records", type=int, default=None, help="records for the recovery run (default 1,000,000; --quick 100,000)"
    )
    parser.add_argument(
        "--hdfs", default=None, metavar="URL", help="also measure commit latency on this HDFS (hdfs://host:port/dir)"
    )
    parser.add_argument("--directory", default=None, help="where to write (default: a temporary directory under /tmp)")
    parser.add_argument("--no-nifi", action="store_true", help="skip the Java side (no Maven/Java here)")
    parser.add_argument(
        "--profile", action="store_true", help="profile custody's batch-10/4-thread run and include the top functions"
    )


def make_record(n: int):
    from repositories.claims import ContentClaim, ResourceClaim
    from repositories.flowfile import FlowFileRecord

    attributes = {
        "filename": f"file-{n}.json",
        "path": "/data/in/",
        "uuid": f"00000000-0000-4000-8000-{n:012d}",
        "mime.type": "application/json",
        "source": "ListenHTTP",
        "http.remote.host": f"10.0.0.{n % 250}",
        "kafka.partition": str(n % 16),
        "kafka.offset": str(n * 7),
        "record.count": str(n % 1000),
        "schema.name": "events-v3",
    }
    # 1000 FlowFiles share one resource claim, as NiFi appends many contents to one file.
    claim = ContentClaim(
        ResourceClaim("default", (n // 1000) % 1024, f"1700000000000-{n // 1000}"), (n % 1000) * 4096, 4096
    )
    return FlowFileRecord(f"ff-{n}", attributes, claim, "queue-1", 4096, 1700000000000 + n, 1700000000000, 0)


def custody_throughput(
    storage: Storage,
    directory: str,
    *,
    threads: int,
    batch: int,
    seconds: float,
    partitions: int,
    latencies: list | None = None,
    profilers: list | None = None,
) -> dict:
    from repositories.flowfile import Put, WriteAheadLog

    wal = WriteAheadLog(storage, directory, partitions=partitions, checkpoint_interval=None)
    wal.recover()
    counter = iter(range(1 << 62))
    lock = threading.Lock()

    def next_batch():
        with lock:
            numbers = [next(counter) for _ in range(batch)]
        return [Put(make_record(n)) for n in numbers]

    for _ in range(50):  # warm up the file and the code paths
        wal.update(next_batch())
    syncs_before = wal.sync_count()
    written = [0] * threads
    start = threading.Event()
    deadline = [0.0]
    errors: list = []

    def worker(index: int) -> None:
        start.wait()
        if profilers is not None:  # one per thread: cProfile sees only the thread that enabled it
            import cProfile

            profiler = cProfile.Profile()
            profilers.append(profiler)
            profiler.enable()
        try:
            clock = time.perf_counter
            while clock() < deadline[0]:
                updates = next_batch()
                begin = clock()
                wal.update(updates)
                if latencies is not None:
                    latencies.append(clock() - begin)
                written[index] += batch
        except BaseException as error:  # reported below
            errors.append(error)
        finally:
            if profilers is not None:
                profiler.disable()

    workers = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for thread in workers:
        thread.start()
    began = time.perf_counter()
    deadline[0] = began + seconds
    start.set()
    for thread in workers:
        thread.join()
    elapsed = time.perf_counter() - began
    syncs = wal.sync_count() - syncs_before
    wal.close()
    if errors:
        raise errors[0]
    total = sum(written)
    return {
        "updates": total,
        "seconds": elapsed,
        "updates_per_sec": total / elapsed,
        "syncs": syncs,
        "transactions_per_sync": (total / batch) / syncs if syncs else None,
    }


def nifi_build() -> str:
    jar = os.path.join(NIFI_DIR, "target", "custody-nifi-wal-bench-1.jar")
    sources = [
        os.path.join(root, name) for root, _dirs, names in os.walk(os.path.join(NIFI_DIR, "src")) for name in names
    ] + [os.path.join(NIFI_DIR, "pom.xml")]
    if not os.path.exists(jar) or os.path.getmtime(jar) < max(os.path.getmtime(path) for path in sources):
        # Built again when its source changed: a stale jar would answer in an old format.
        # Maven's own output goes to stderr: stdout carries the benchmark's JSON only.
        subprocess.run(
            ["mvn", "-q", "-B", "-Dstyle.color=never", "package"], cwd=NIFI_DIR, check=True, stdout=sys.stderr
        )
    return f"{jar}:{os.path.join(NIFI_DIR, 'target', 'lib', '*')}"


def nifi_run(classpath: str, *args: str) -> dict:
    out = subprocess.run(
        ["java", "-cp", classpath, "io.custody.bench.NiFiWalBench", *args], check=True, capture_output=True, text=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def recover_records(storage: Storage, directory: str, count: int) -> dict:
    """Fill a WAL with `count` records (a snapshot plus 1% in the journals), then time recover()."""
    from repositories.flowfile import Put, WriteAheadLog

    wal = WriteAheadLog(storage, directory, partitions=4, checkpoint_interval=None)
    wal.recover()
    in_snapshot = count - count // 100
    for first in range(0, in_snapshot, 1000):
        wal.update([Put(make_record(n)) for n in range(first, min(first + 1000, in_snapshot))], sync=False)
    wal.checkpoint()
    for first in range(in_snapshot, count, 100):
        wal.update([Put(make_record(n)) for n in range(first, min(first + 100, count))], sync=False)
    wal.close()
    # Recovery runs in a process that starts without the writer's million records:
    # drop them, or every allocation and collection below would also wade through them.
    del wal
    gc.collect()
    began = time.perf_counter()
    reopened = WriteAheadLog(storage, directory, partitions=4, checkpoint_interval=None)
    records = reopened.recover()
    elapsed = time.perf_counter() - began
    # Recovery runs with the cyclic GC off; the objects it built are collected once it
    # is back on, by whatever allocates next. Measured apart, so that neither recovery
    # nor the decode below is charged with it.
    began = time.perf_counter()
    gc.collect()
    gc_debt = time.perf_counter() - began
    # Restored records decode lazily: what recover() saved is paid on first access.
    # Measured as a flow engine would pay it: the head (queue, claim) of every
    # FlowFile to rebuild the queues, then the attributes of every one (the worst case).
    began = time.perf_counter()
    for record in records.values():
        _ = record.queue, record.content_claim
    head = time.perf_counter() - began
    began = time.perf_counter()
    for record in records.values():
        _ = record.attributes
    attributes = time.perf_counter() - began
    reopened.close()
    assert len(records) == count, (len(records), count)
    return {
        "records": count,
        "seconds": elapsed,
        "then_gc_s": gc_debt,
        "then_decode_heads_s": head,
        "then_decode_attributes_s": attributes,
    }


def percentile(values: list, fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def hdfs_latency(url: str, seconds: float) -> dict:
    """Commit latency of custody (batch 10, 1 and 4 threads) against raw hsync latency."""
    from urllib.parse import urlparse

    from cluster.clients import ClientFactory, HdfsSettings

    parsed = urlparse(url)
    storage = ClientFactory(hdfs=HdfsSettings(f"{parsed.scheme}://{parsed.netloc}")).hdfs_storage()
    base = f"{parsed.path.rstrip('/') or ''}/custody-bench-wal-{os.getpid()}-{int(time.time())}"
    storage.mkdir(base, parents=True, exist_ok=True)
    try:
        raw = []
        with storage.create(f"{base}/raw-hsync") as file:
            payload = b"x" * 2000
            deadline = time.perf_counter() + seconds
            while time.perf_counter() < deadline:
                began = time.perf_counter()
                file.write(payload)
                file.sync()
                raw.append(time.perf_counter() - began)
        result = {
            "hdfs_raw_hsync_p50_ms": percentile(raw, 0.5) * 1e3,
            "hdfs_raw_hsync_p99_ms": percentile(raw, 0.99) * 1e3,
        }
        result.update(takeover_recovery(storage, base))
        for threads in (1, 4):
            latencies: list = []
            run = custody_throughput(
                storage,
                f"{base}/wal-{threads}",
                threads=threads,
                batch=10,
                seconds=seconds,
                partitions=4,
                latencies=latencies,
            )
            result[f"hdfs_commit_p50_ms_threads{threads}"] = percentile(latencies, 0.5) * 1e3
            result[f"hdfs_commit_p99_ms_threads{threads}"] = percentile(latencies, 0.99) * 1e3
            result[f"hdfs_custody_updates_per_sec_threads{threads}"] = run["updates_per_sec"]
        return result
    finally:
        storage.delete(base, recursive=True)


def takeover_recovery(storage: Storage, base: str, rounds: int = 15) -> dict:
    """Recovery of a 500-FlowFile WAL on HDFS, which ends in a forced checkpoint (what
    an adopter waits for before its shard runs), against one new file's create, write,
    hsync and close on the same HDFS, alternated round by round; medians."""
    from repositories.flowfile import Put, WriteAheadLog

    recoveries, new_files = [], []
    for index in range(rounds):
        directory = f"{base}/takeover-{index}"
        storage.mkdir(directory)
        wal = WriteAheadLog(storage, directory, partitions=4, checkpoint_interval=None)
        wal.recover()
        for transaction in range(50):
            wal.update([Put(make_record(transaction * 10 + n)) for n in range(10)])
        wal.close()
        began = time.perf_counter()
        again = WriteAheadLog(storage, directory, partitions=4, checkpoint_interval=None)
        again.recover()
        recoveries.append(time.perf_counter() - began)
        again.close()
        began = time.perf_counter()
        with storage.create(f"{base}/new-file-{index}") as file:
            file.write(b"x" * 2000)
            file.sync()
        new_files.append(time.perf_counter() - began)
    recovery, new_file = percentile(recoveries, 0.5), percentile(new_files, 0.5)
    return {
        "hdfs_takeover_recovery_p50_ms": recovery * 1e3,
        "hdfs_new_file_p50_ms": new_file * 1e3,
        "hdfs_takeover_recovery_vs_new_file": recovery / new_file,
    }


def run(args) -> dict:
    from repositories.storage import LocalStorage

    seconds = args.seconds or (1.5 if args.quick else 5.0)
    record_count = args.records or (100_000 if args.quick else 1_000_000)
    configurations = [(10, 1), (10, 4)] if args.quick else CONFIGURATIONS
    root = tempfile.mkdtemp(prefix="custody-bench-wal-", dir=args.directory)
    storage = LocalStorage()
    result: dict = {"seconds_per_run": seconds, "partitions": args.partitions, "runs": []}
    try:
        classpath = None if args.no_nifi else nifi_build()
        for batch, threads in configurations:
            tag = f"b{batch}_t{threads}"
            custody = custody_throughput(
                storage,
                os.path.join(root, f"custody-{tag}"),
                threads=threads,
                batch=batch,
                seconds=seconds,
                partitions=args.partitions,
            )
            row = {
                "batch": batch,
                "threads": threads,
                "custody_durable": custody["updates_per_sec"],
                "custody_transactions_per_sync": custody["transactions_per_sync"],
            }
            if classpath:
                durable = nifi_run(
                    classpath,
                    "throughput",
                    os.path.join(root, f"nifi-durable-{tag}"),
                    str(threads),
                    str(batch),
                    str(seconds),
                    "true",
                )
                default = nifi_run(
                    classpath,
                    "throughput",
                    os.path.join(root, f"nifi-default-{tag}"),
                    str(threads),
                    str(batch),
                    str(seconds),
                    "false",
                )
                row.update(
                    nifi_durable=durable["updates_per_sec"],
                    nifi_default=default["updates_per_sec"],
                    custody_vs_nifi_durable=custody["updates_per_sec"] / durable["updates_per_sec"],
                    custody_vs_nifi_default=custody["updates_per_sec"] / default["updates_per_sec"],
                )
            result["runs"].append(row)
            if (batch, threads) == (10, 4):
                result["custody_updates_per_sec"] = row["custody_durable"]
                if classpath:
                    result["nifi_durable_updates_per_sec"] = row["nifi_durable"]
                    result["nifi_default_updates_per_sec"] = row["nifi_default"]
                    result["custody_vs_nifi_durable"] = row["custody_vs_nifi_durable"]
                    result["custody_vs_nifi_default"] = row["custody_vs_nifi_default"]
        if args.profile:
            result["profile_b10_t4"] = profile_run(
                storage, os.path.join(root, "custody-profile"), seconds, args.partitions
            )
        recovery = recover_records(storage, os.path.join(root, "custody-recover"), record_count)
        if args.profile:
            result["profile_recover"] = profile_recover(storage, os.path.join(root, "custody-recover"))
        result["recover_records"] = record_count
        result["recover_s"] = recovery["seconds"]
        result["recover_then_gc_s"] = recovery["then_gc_s"]
        result["recover_then_decode_heads_s"] = recovery["then_decode_heads_s"]
        result["recover_then_decode_attributes_s"] = recovery["then_decode_attributes_s"]
        if record_count == 1_000_000:
            result["recover_1m_seconds"] = recovery["seconds"]
        else:  # scaled, and said so
            result["recover_1m_seconds_extrapolated"] = recovery["seconds"] * 1_000_000 / record_count
        if classpath:
            nifi_recovery = nifi_run(classpath, "recover", os.path.join(root, "nifi-recover"), str(record_count))
            result["nifi_recover_s"] = nifi_recovery["recover_s"]
        if args.hdfs:
            result.update(hdfs_latency(args.hdfs, seconds))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return result


def profile_recover(storage: Storage, directory: str) -> list:
    """Profile of a second recover() of the recovery run's directory."""
    import cProfile

    from repositories.flowfile import WriteAheadLog

    profiler = cProfile.Profile()
    wal = WriteAheadLog(storage, directory, partitions=4, checkpoint_interval=None)
    profiler.enable()
    wal.recover()
    profiler.disable()
    wal.close()
    return top_functions(profiler)


def profile_run(storage: Storage, directory: str, seconds: float, partitions: int) -> list:
    """The writer threads' profiles, merged (time in the benchmark's own record
    building, make_record, is included: NiFi's harness builds its records too)."""
    profilers: list = []
    custody_throughput(
        storage, directory, threads=4, batch=10, seconds=seconds, partitions=partitions, profilers=profilers
    )
    return top_functions(*profilers)


def top_functions(*profilers) -> list:
    import pstats

    stats = pstats.Stats(*profilers).sort_stats("tottime")
    rows = []
    for (filename, line, name), (_, calls, total, cumulative, _) in list(stats.stats.items()):
        rows.append(
            {
                "function": f"{os.path.basename(filename)}:{line}:{name}",
                "calls": calls,
                "tottime": round(total, 4),
                "cumtime": round(cumulative, 4),
            }
        )
    rows.sort(key=lambda row: row["tottime"], reverse=True)
    return rows[:12]
