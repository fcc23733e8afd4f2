"""End-to-end flow throughput: FlowFiles/s and MB/s against the raw repository limits.

Two flows run on a standalone node's engine with real local repositories (FlowFile
WAL with group commit, content, provenance, swapping), each GenerateFlowFile ->
UpdateAttribute -> RouteOnAttribute -> PutFile:

* small: 100-byte content, `flowfiles_per_sec` end to end (first FlowFile generated
  to last one written by PutFile);
* 1 MB: 1 MB content, `mb_per_sec_1mb`.

PutFile runs with `sync: false` here, as NiFi's PutFile (which never fsyncs); the
repositories keep every commit durable (WAL group commit, content synced per commit).

The raw limits are measured in the same run, on the same disk:
* `raw_wal_flowfiles_per_sec`: the WAL alone doing the four transactions a FlowFile
  costs in this flow (one per processor), in batches of the same size, synced;
  `ratio_small_to_wal` = flowfiles_per_sec / that.
* `raw_disk_mb_per_sec`: one plain file written and read back sequentially in 1 MB
  writes with one fdatasync per 1 MB (the content a session commits);
  `ratio_1mb_to_disk` = mb_per_sec_1mb / that.
Anchor: NiFi's published ~83,000 FlowFiles/s end to end on one node
(`ratio_to_nifi_anchor`). `--profile` adds the top functions by own time.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time

NIFI_ANCHOR_FLOWFILES_PER_SEC = 83_000


def add_arguments(parser) -> None:
    parser.add_argument("--dir", help="directory to run in (default: a fresh temporary directory)")
    parser.add_argument("--small", type=int, help="FlowFiles in the small-content flow")
    parser.add_argument("--large", type=int, help="FlowFiles in the 1 MB flow")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--profile", action="store_true", help="profile the small flow (slower) and report")
    parser.add_argument("--no-outbox", action="store_true", help="without the provenance outbox")


def flow_definition(out: str, count: int, size: int, batch: int):
    """GenerateFlowFile -> UpdateAttribute -> RouteOnAttribute -> PutFile into `out`."""
    from flow.loading import parse_flow

    swapping = {"swap_threshold": 20_000, "swap_batch": 10_000, "back_pressure": {"object_count": 50_000}}
    return parse_flow({
        "name": f"bench-{size}",
        "processors": [
            {"id": "generate", "type": "GenerateFlowFile",
             "properties": {"batch_size": batch, "file_size": size, "max_count": count}},
            {"id": "update", "type": "UpdateAttribute", "properties": {"stage": "updated", "size.class": "small"}},
            {"id": "route", "type": "RouteOnAttribute",
             "properties": {"routing_strategy": "route_to_matched_if_any_matches", "ok": "${stage:equals('updated')}"}},
            {"id": "put", "type": "PutFile",
             "properties": {"directory": out, "sync": False, "batch_size": batch}, "auto_terminate": ["success"]},
        ],
        "connections": [
            {"source": "generate", "destination": "update", **swapping},
            {"source": "update", "destination": "route", **swapping},
            {"source": "route", "relationships": ["matched", "unmatched"], "destination": "put", **swapping},
            {"source": "put", "relationships": ["failure"], "destination": "put"},
        ]})


def _run_flow(root: str, count: int, size: int, batch: int, threads: int, outbox: bool, profile: bool):
    from cluster.node.standalone import NodeSettings, StandaloneNode

    out = os.path.join(root, "out")
    node = StandaloneNode(flow_definition(out, count, size, batch), os.path.join(root, "node"),
                          NodeSettings(threads=threads, provenance_outbox=outbox))
    profiler = None
    if profile:
        profiler = _ThreadProfiler()
        profiler.install(node)
    node.start(paused=True)
    put = None
    started = time.perf_counter()
    node.resume()
    try:
        put = node.engine.nodes["put"]
        deadline = time.monotonic() + 3600
        while time.monotonic() < deadline:
            if node.engine.is_idle() and files_in(out) >= count:
                break
            time.sleep(0.02)
        elapsed = time.perf_counter() - started
    finally:
        node.stop()
    delivered = files_in(out)
    if delivered != count:
        raise RuntimeError(f"benchmark flow delivered {delivered} of {count} FlowFiles")
    result = {"seconds": elapsed, "flowfiles": count, "put_tasks": put.tasks if put else 0}
    if profiler is not None:
        result["profile"] = profiler.top(25)
    return result


def files_in(directory: str) -> int:
    """Files PutFile wrote to `directory`."""
    try:
        return sum(1 for name in os.listdir(directory) if not name.startswith("."))
    except FileNotFoundError:
        return 0


class _ThreadProfiler:
    """cProfile around every engine task (each thread has its own profiler)."""

    def __init__(self):
        import cProfile
        import threading

        self._profilers = []
        self._local = threading.local()
        self._lock = threading.Lock()
        self._cprofile = cProfile

    def install(self, node):
        from flow import engine

        original = engine.TraditionalEngine._run_task
        profilers = self

        def run_task(self_engine, task_node):
            profiler = getattr(profilers._local, "profiler", None)
            if profiler is None:
                profiler = profilers._local.profiler = profilers._cprofile.Profile()
                with profilers._lock:
                    profilers._profilers.append(profiler)
            profiler.enable()
            try:
                return original(self_engine, task_node)
            finally:
                profiler.disable()

        engine.TraditionalEngine._run_task = run_task
        self._restore = lambda: setattr(engine.TraditionalEngine, "_run_task", original)

    def top(self, n: int) -> list:
        import pstats

        self._restore()
        if not self._profilers:
            return []
        stats = pstats.Stats(self._profilers[0])
        for profiler in self._profilers[1:]:
            stats.add(profiler)
        total = sum(value[2] for value in stats.stats.values())
        rows = sorted(stats.stats.items(), key=lambda item: item[1][2], reverse=True)[:n]
        return [{"function": f"{os.path.basename(key[0])}:{key[1]}:{key[2]}", "own_s": round(value[2], 3),
                 "share": round(value[2] / total, 3) if total else 0.0, "calls": value[1]}
                for key, value in rows]


def _raw_wal(root: str, flowfiles: int, batch: int) -> float:
    """FlowFiles/s the WAL alone sustains for this flow's four transactions per FlowFile."""
    import uuid

    from repositories.claims import ContentClaim, ResourceClaim
    from repositories.flowfile import Delete, FlowFileRecord, Put, WriteAheadLog
    from repositories.storage import LocalStorage

    wal = WriteAheadLog(LocalStorage(), os.path.join(root, "raw-wal"), checkpoint_interval=None)
    wal.recover()
    claim = ContentClaim(ResourceClaim("local", 1, "r"), 0, 100)
    ids = [str(uuid.uuid4()) for _ in range(flowfiles)]
    attributes = {"filename": "x" * 36, "path": "./"}
    started = time.perf_counter()
    for start in range(0, flowfiles, batch):
        chunk = ids[start:start + batch]
        for queue, extra in (("a", {}), ("b", {"stage": "updated", "size.class": "small"}),
                             ("c", {"stage": "updated", "size.class": "small"})):
            wal.update([Put(FlowFileRecord(i, {**attributes, **extra}, claim, queue, 100, 1, 1)) for i in chunk])
        wal.update([Delete(i) for i in chunk])
    elapsed = time.perf_counter() - started
    wal.close()
    return flowfiles / elapsed


def _raw_disk(root: str, megabytes: int) -> float:
    block = os.urandom(1 << 20)
    path = os.path.join(root, "raw-disk")
    started = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for _ in range(megabytes):
            os.write(fd, block)
            os.fdatasync(fd)
    finally:
        os.close(fd)
    with open(path, "rb") as handle:
        while handle.read(1 << 20):
            pass
    return megabytes / (time.perf_counter() - started)


def run(args) -> dict:
    small = args.small or (20_000 if args.quick else 200_000)
    large = args.large or (50 if args.quick else 300)
    batch = 1000
    root = args.dir or tempfile.mkdtemp(prefix="custody-bench-flow-")
    os.makedirs(root, exist_ok=True)
    try:
        os.makedirs(os.path.join(root, "raw"), exist_ok=True)
        raw_wal = _raw_wal(os.path.join(root, "raw"), min(small, 50_000), batch)
        raw_disk = _raw_disk(os.path.join(root, "raw"), large)
        small_run = _run_flow(os.path.join(root, "small"), small, 100, batch, args.threads, not args.no_outbox,
                              False)
        large_run = _run_flow(os.path.join(root, "large"), large, 1 << 20, 1, args.threads, not args.no_outbox,
                              False)
        flowfiles_per_sec = small / small_run["seconds"]
        mb_per_sec = large / large_run["seconds"]
        result = {
            "flowfiles_per_sec": round(flowfiles_per_sec, 1),
            "mb_per_sec_1mb": round(mb_per_sec, 2),
            "flowfiles_per_sec_1mb": round(large / large_run["seconds"], 2),
            "small_flowfiles": small,
            "small_s": round(small_run["seconds"], 3),
            "large_flowfiles": large,
            "large_s": round(large_run["seconds"], 3),
            "raw_wal_flowfiles_per_sec": round(raw_wal, 1),
            "raw_disk_mb_per_sec": round(raw_disk, 1),
            "ratio_small_to_wal": round(flowfiles_per_sec / raw_wal, 3) if raw_wal else None,
            "ratio_1mb_to_disk": round(mb_per_sec / raw_disk, 3) if raw_disk else None,
            "nifi_anchor_flowfiles_per_sec": NIFI_ANCHOR_FLOWFILES_PER_SEC,
            "ratio_to_nifi_anchor": round(flowfiles_per_sec / NIFI_ANCHOR_FLOWFILES_PER_SEC, 4),
            "provenance_outbox": not args.no_outbox,
            "threads": args.threads,
            "cpu_count": os.cpu_count(),
        }
        if args.profile:
            profiled = _run_flow(os.path.join(root, "profiled"), min(small, 20_000), 100, batch, args.threads,
                                 not args.no_outbox, True)
            result["profile_small_flow"] = profiled["profile"]
        return result
    finally:
        if not args.dir:
            shutil.rmtree(root, ignore_errors=True)
