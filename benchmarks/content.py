"""Content repository: write/read MB/s and claims/s against raw sequential writes.

For each content size (1 KB, 64 KB, 1 MB, 100 MB) the repository writes N claims and
reads them back; the anchor writes the very same bytes sequentially into one plain
file with the same fsync policy (`--fsync batch`: one fdatasync at the end of the run,
as a session commit does; `--fsync claim`: one per claim). `ratio_local_<size>` is
repository MB/s over raw MB/s. With `--hdfs URL`, the replicating repository (local +
HDFS, hsync) is compared with raw hdfs-native writes of the same bytes (one file,
hsync at the end, or per claim): `ratio_replicated_<size>`. The replicated claims are
written by `--sessions` threads side by side (4 by default), each committing (sync,
then check_durable) every 100 of its claims, as a node's sessions do: one commit's
hsync overlaps the others' writes. `--packed-resource-mb N` lets large claims share
resource files of up to N MB on both replicas (`packed_resource_size`). Reading up to 200 of
those claims back from HDFS, as an adopter reads a dead node's content, is measured
one claim at a time (`hdfs_read_claims_per_sec_<size>`) and all at once with
`read_many` (`hdfs_read_many_claims_per_sec_<size>`), from the writing repository
(its open resource is sealed first, which those figures include). What an adopter
does, a reader of the closed files reading every claim at once, is
`adopter_read_many_claims_per_sec_<size>`. What its tasks do, reading the claims a few
at a time (`ADOPTER_BATCH`, up to 500 of them, as a task polls a batch and reads its
contents together), is `adopter_batches_claims_per_sec_<size>` through the node's
reader of a dead incarnation's files, which keeps each window of a file it read
(`repositories.content.read_windows`), and `adopter_batches_unwindowed_claims_per_sec_<size>`
through the same reader without them, side by side in the same run:
`adopter_batches_vs_unwindowed_<size>` is their ratio.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import hdfs_native

    from repositories.storage import Storage

ADOPTER_BATCH = 5  # claims a task reads together, as the drills' first tasks did
ADOPTER_BATCHES_CLAIMS = 500
SIZES = {"1kb": 1024, "64kb": 64 * 1024, "1mb": 1 << 20, "100mb": 100 << 20}
COUNTS = {"1kb": 200_000, "64kb": 4000, "1mb": 300, "100mb": 3}
QUICK_COUNTS = {"1kb": 30_000, "64kb": 500, "1mb": 50, "100mb": 1}
HDFS_COUNTS = {"1kb": 20_000, "64kb": 500, "1mb": 100, "100mb": 2}
HDFS_QUICK_COUNTS = {"1kb": 10_000, "64kb": 100, "1mb": 50, "100mb": 1}  # enough commits to overlap
COMMIT_CLAIMS = 100
SESSIONS = 4
CHUNK = 1 << 20


def add_arguments(parser) -> None:
    parser.add_argument("--dir", help="directory to write in (default: a fresh temporary directory)")
    parser.add_argument(
        "--fsync",
        choices=["batch", "claim"],
        default="batch",
        help="fsync once per run (group commit) or once per claim",
    )
    parser.add_argument("--hdfs", metavar="URL", help="also benchmark replication to this HDFS")
    parser.add_argument("--hdfs-base", default="/custody-bench", help="HDFS directory to use (deleted after)")
    parser.add_argument("--sizes", default=",".join(SIZES), help="comma-separated subset of " + ",".join(SIZES))
    parser.add_argument(
        "--packed-resource-mb",
        type=int,
        default=0,
        help="replicated: large claims share a resource file of up to this many MB (packed_resource_size; "
        "default 0: each fills one alone, as a clustered node configures today)",
    )
    parser.add_argument(
        "--sessions",
        type=int,
        default=SESSIONS,
        help=f"threads writing replicated claims side by side, each committing every {COMMIT_CLAIMS} claims "
        f"(a node's sessions; default {SESSIONS})",
    )


def _pieces(size: int, buffer: memoryview):
    """The bytes of one claim as chunks of at most 1 MB (a 100 MB claim is streamed)."""
    left = size
    while left > 0:
        step = min(left, CHUNK)
        yield buffer[:step]
        left -= step


def _write_claims(
    repository, size: int, count: int, buffer: memoryview, per_claim_sync: bool, commit_every: int | None = None
):
    """Write `count` claims; sync per claim, every `commit_every` claims, or once at the end."""
    claims = []
    start = time.perf_counter()
    if size <= CHUNK:
        data = bytes(buffer[:size])
        for number in range(1, count + 1):
            writer = repository.write()
            writer.write(data)
            claims.append(writer.close(sync=per_claim_sync) if hasattr(writer, "_buffer_size") else writer.close())
            if commit_every and number % commit_every == 0:
                repository.sync()
    else:
        for _ in range(count):
            with repository.write() as writer:
                for piece in _pieces(size, buffer):
                    writer.write(piece)
            claims.append(writer.claim)
    if not per_claim_sync:
        repository.sync()
    return claims, time.perf_counter() - start


def _write_sessions(repository, size: int, count: int, buffer: memoryview, sessions: int):
    """Write `count` claims from `sessions` threads side by side, each committing every
    `COMMIT_CLAIMS` of its claims (`sync`, then `check_durable`, as a session commit
    does): the commits of one overlap the writes of the others."""
    if sessions <= 1:
        return _write_claims(repository, size, count, buffer, False, COMMIT_CLAIMS)
    shares = _shares(count, sessions)
    written: list[list] = [[] for _ in shares]
    errors: list[BaseException] = []
    start_line = threading.Barrier(sessions + 1)

    def session(index: int) -> None:
        try:
            start_line.wait()
            claims = written[index]
            for number in range(1, shares[index] + 1):
                with repository.write() as writer:
                    for piece in _pieces(size, buffer):
                        writer.write(piece)
                claims.append(writer.claim)
                if number % COMMIT_CLAIMS == 0 or number == shares[index]:
                    repository.sync()
                    repository.check_durable(claims[-COMMIT_CLAIMS:])
        except BaseException as error:  # noqa: BLE001 - raised below, in the benchmark's thread
            errors.append(error)

    threads = [
        threading.Thread(target=session, args=(index,), name=f"bench-session-{index}") for index in range(sessions)
    ]
    for thread in threads:
        thread.start()
    start_line.wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    if errors:
        raise errors[0]
    return [claim for claims in written for claim in claims], elapsed


def _shares(count: int, sessions: int) -> list[int]:
    """How many of `count` claims each of `sessions` sessions writes."""
    sessions = max(1, sessions)
    return [count // sessions + (1 if index < count % sessions else 0) for index in range(sessions)]


def _read_claims(repository, claims) -> float:
    start = time.perf_counter()
    for claim in claims:
        with repository.open_read(claim) as reader:
            while reader.read(CHUNK):
                pass
    return time.perf_counter() - start


def _raw_local(directory: str, size: int, count: int, buffer: memoryview, per_claim_sync: bool) -> float:
    path = os.path.join(directory, f"raw-{size}")
    start = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
    try:
        for _ in range(count):
            for piece in _pieces(size, buffer):
                os.write(fd, piece)
            if per_claim_sync:
                os.fdatasync(fd)
        if not per_claim_sync:
            os.fdatasync(fd)
    finally:
        os.close(fd)
    elapsed = time.perf_counter() - start
    os.unlink(path)
    return elapsed


def _raw_hdfs(
    client: hdfs_native.Client, path: str, size: int, count: int, buffer: memoryview, per_claim_sync: bool
) -> float:
    import hdfs_native

    start = time.perf_counter()
    writer = client.create(path, hdfs_native.WriteOptions(overwrite=True))
    for _ in range(count):
        for piece in _pieces(size, buffer):
            writer.write(bytes(piece))
        if per_claim_sync:
            writer.hsync()
    writer.hsync()
    writer.close()
    elapsed = time.perf_counter() - start
    client.delete(path, False)
    return elapsed


def run(args) -> dict:
    from repositories.content import ArchivePolicy, ContentRepositoryConfig, open_filesystem_content_repository

    per_claim_sync = args.fsync == "claim"
    sizes = [name.strip() for name in args.sizes.split(",") if name.strip()]
    counts = QUICK_COUNTS if args.quick else COUNTS
    buffer = memoryview(os.urandom(CHUNK))
    workdir = tempfile.mkdtemp(prefix="custody-bench-content-", dir=args.dir)
    config = ContentRepositoryConfig(sync_on_close=per_claim_sync, archive=ArchivePolicy(max_usage=None))
    result: dict = {"fsync": args.fsync, "quick": bool(args.quick), "directory": workdir}
    try:
        for name in sizes:
            size, count = SIZES[name], counts[name]
            if per_claim_sync and name == "1kb":
                count = min(count, 2000)
            total_mb = size * count / 1e6
            repository = open_filesystem_content_repository({"bench": os.path.join(workdir, f"content-{name}")}, config)
            claims, write_s = _write_claims(repository, size, count, buffer, per_claim_sync)
            read_s = _read_claims(repository, claims)
            repository.close()
            shutil.rmtree(os.path.join(workdir, f"content-{name}"))
            raw_s = _raw_local(workdir, size, count, buffer, per_claim_sync)
            result[f"claims_{name}"] = count
            result[f"write_mb_per_sec_{name}"] = total_mb / write_s
            result[f"read_mb_per_sec_{name}"] = total_mb / read_s
            result[f"claims_per_sec_{name}"] = count / write_s
            result[f"read_claims_per_sec_{name}"] = count / read_s
            result[f"raw_write_mb_per_sec_{name}"] = total_mb / raw_s
            result[f"ratio_local_{name}"] = raw_s / write_s
        if args.hdfs:
            result.update(_run_hdfs(args, sizes, buffer, workdir, per_claim_sync))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return result


def _run_hdfs(args, sizes, buffer, workdir, per_claim_sync) -> dict:
    import hdfs_native

    from cluster.clients import ClientFactory, HdfsSettings
    from cluster.node.content import REPLICATED_RESOURCE_SIZE, REPLICATED_SHARED_RESOURCE_SIZE
    from replication.hdfs_content import DEFAULT_HDFS_CONFIG, open_hdfs_content_reader, open_hdfs_content_repository
    from replication.replicating_content import ReplicatingContentRepository
    from repositories.content import ArchivePolicy, ContentRepositoryConfig, open_filesystem_content_repository

    out: dict = {}
    counts = HDFS_QUICK_COUNTS if args.quick else HDFS_COUNTS
    storage = ClientFactory(hdfs=HdfsSettings(args.hdfs)).hdfs_storage()
    client = hdfs_native.Client(args.hdfs)  # the anchor: hdfs-native alone
    base = args.hdfs_base.rstrip("/")
    storage.mkdir(base, parents=True, exist_ok=True)
    # As a clustered node configures its two replicas (`cluster.node.content`).
    # With --packed-resource-mb, both replicas pack large claims alike (they must).
    sizes_of_node = {
        "max_appendable_claim_size": REPLICATED_RESOURCE_SIZE,
        "shared_resource_size": REPLICATED_SHARED_RESOURCE_SIZE,
    }
    if args.packed_resource_mb:
        sizes_of_node["packed_resource_size"] = args.packed_resource_mb << 20
    local_config = ContentRepositoryConfig(
        sync_on_close=per_claim_sync, archive=ArchivePolicy(max_usage=None), **sizes_of_node
    )
    hdfs_config = dataclasses.replace(DEFAULT_HDFS_CONFIG, **sizes_of_node)
    commit_every = None if per_claim_sync else COMMIT_CLAIMS
    sessions = 1 if per_claim_sync else max(1, args.sessions)
    out["replicated_sessions"] = sessions
    out["replicated_packed_resource_mb"] = args.packed_resource_mb
    try:
        for name in sizes:
            size, count = SIZES[name], counts[name]
            total_mb = size * count / 1e6
            local = open_filesystem_content_repository(
                {"bench": os.path.join(workdir, f"replicated-{name}")}, local_config
            )
            hdfs = open_hdfs_content_repository(
                storage, f"{base}/{name}", "bench-node", ["bench"], hdfs_config, keep_open=True
            )
            repository = ReplicatingContentRepository([local, hdfs], sync_on_close=per_claim_sync)
            calls_before = _hdfs_calls(storage)
            if per_claim_sync:
                claims, write_s = _write_claims(repository, size, count, buffer, per_claim_sync, commit_every)
            else:
                claims, write_s = _write_sessions(repository, size, count, buffer, sessions)
            calls = {op: n - calls_before[op] for op, n in _hdfs_calls(storage).items()}
            commits = count if per_claim_sync else sum(-(-share // COMMIT_CLAIMS) for share in _shares(count, sessions))
            sample = claims[: max(1, min(len(claims), 200))]
            # What an adopter does with a dead node's claims: all of them at once (first,
            # so that it is the one that meets colder caches), then one by one.
            many_start = time.perf_counter()
            for resource in {claim.resource: None for claim in sample}:
                repository.seal(resource)  # hdfs-native reads an open file only to its last finished block
            hdfs.read_many(sample)
            many_s = time.perf_counter() - many_start
            read_s = _read_claims(hdfs, sample)
            read_mb = size * len(sample) / 1e6
            repository.close()
            # An adopter: a reader of the dead node's files (closed, or their leases
            # recovered at fencing) reading every claim of the shard at once.
            adopter = open_hdfs_content_reader(storage, f"{base}/{name}", "bench-node", ["bench"])
            try:
                adopter_start = time.perf_counter()
                adopted = adopter.read_many(claims)
                adopter_s = time.perf_counter() - adopter_start
            finally:
                adopter.close()
            if sum(map(len, adopted)) != size * len(claims):
                raise RuntimeError(f"the adopter read {sum(map(len, adopted))} bytes of {size * len(claims)}")
            batches = {
                side: _adopter_batches(storage, f"{base}/{name}", claims[:ADOPTER_BATCHES_CLAIMS], side == "windows")
                for side in ("windows", "unwindowed")
            }
            shutil.rmtree(os.path.join(workdir, f"replicated-{name}"))
            raw_s = _raw_hdfs(client, f"{base}/raw-{name}", size, count, buffer, per_claim_sync)
            out[f"replicated_claims_{name}"] = count
            out[f"replicated_write_mb_per_sec_{name}"] = total_mb / write_s
            out[f"replicated_claims_per_sec_{name}"] = count / write_s
            out[f"hdfs_read_mb_per_sec_{name}"] = read_mb / read_s
            out[f"hdfs_read_claims_per_sec_{name}"] = len(sample) / read_s
            out[f"hdfs_read_many_claims_per_sec_{name}"] = len(sample) / many_s
            out[f"adopter_read_many_claims_per_sec_{name}"] = len(claims) / adopter_s
            out[f"adopter_batches_claims_per_sec_{name}"] = batches["windows"]
            out[f"adopter_batches_unwindowed_claims_per_sec_{name}"] = batches["unwindowed"]
            out[f"adopter_batches_vs_unwindowed_{name}"] = batches["windows"] / batches["unwindowed"]
            out[f"raw_hdfs_write_mb_per_sec_{name}"] = total_mb / raw_s
            out[f"ratio_replicated_{name}"] = raw_s / write_s
            for operation in ("hsync", "create", "close"):
                out[f"hdfs_{operation}s_per_commit_{name}"] = calls[operation] / commits
    finally:
        try:
            storage.delete(base, recursive=True)
        except Exception:  # noqa: BLE001 - best-effort cleanup of the benchmark's directory
            pass
    return out


def _adopter_batches(storage: Storage, base: str, claims: list, windows: bool) -> float:
    """Claims per second a reader of the dead node's files (`recover_open_files`, as a
    node's) reads, `ADOPTER_BATCH` at a time, with or without its read windows."""
    from replication.hdfs_content import open_hdfs_content_reader
    from repositories.content.read_windows import ReadWindows

    reader = open_hdfs_content_reader(
        storage, base, "bench-node", ["bench"], recover_open_files=True, cache=ReadWindows() if windows else None
    )
    try:
        started = time.perf_counter()
        for first in range(0, len(claims), ADOPTER_BATCH):
            batch = claims[first : first + ADOPTER_BATCH]
            if sum(map(len, reader.read_many(batch))) != sum(claim.length for claim in batch):
                raise RuntimeError("an adopter's batch read fewer bytes than its claims hold")
        return len(claims) / (time.perf_counter() - started)
    finally:
        reader.close()


def _hdfs_calls(storage: Storage) -> dict[str, int]:
    """How many hsync, create and close calls the storage made so far."""
    return {op: storage.call_durations.of(op).snapshot().count for op in ("hsync", "create", "close")}
