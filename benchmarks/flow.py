"""End-to-end flow throughput: FlowFiles/s and MB/s against the raw repository limits.

Three flows run on a standalone node's engine with real local repositories (FlowFile
WAL with group commit, content, provenance), their connections at NiFi's default
queue settings (back pressure at 10,000 FlowFiles, swapping above 20,000), so that
the flows are the ones NiFi runs with its defaults; `--back-pressure 50000` lets the
queues grow past the swap threshold and measures the flows with swapping:

* engine: GenerateFlowFile -> UpdateAttribute -> RouteOnAttribute -> MergeContent
  (1,000 per bundle) -> PutFile, 100-byte content, `engine_flowfiles_per_sec`: the
  sink writes one file per thousand FlowFiles, so the figure measures the engine and
  the repositories, not the file system;
* small: GenerateFlowFile -> UpdateAttribute -> RouteOnAttribute -> PutFile, 100-byte
  content, `flowfiles_per_sec` end to end (first FlowFile generated to last one
  written by PutFile): one file per FlowFile;
* 1 MB: the same flow with 1 MB content, `mb_per_sec_1mb`;
* single: the small flow with one FlowFile per session in every processor (a source
  that takes one request or message per session, the 1 MB flow's sessions),
  `single_flowfiles_per_sec` and `single_cpu_us_per_flowfile`: what a commit costs
  beyond its data.

PutFile runs with `sync: false` here, as NiFi's PutFile (which never fsyncs); the
repositories keep every commit durable (WAL group commit, content synced per commit).

The raw limits are measured in the same run, on the same disk:
* `raw_wal_flowfiles_per_sec`: the WAL alone doing the four transactions a FlowFile
  costs in this flow (one per processor), in batches of the same size, synced;
  `ratio_small_to_wal` = flowfiles_per_sec / that.
* `raw_wal_engine_flowfiles_per_sec`: the same for the engine flow's five processors
  (MergeContent's bundle and PutFile's delete of it cost one update per thousand);
  `ratio_engine_to_wal` = engine_flowfiles_per_sec / that.
* `raw_files_per_sec`: what PutFile needs per FlowFile, create, write 100 bytes,
  close, rename, in a plain loop on one thread in the same directory tree;
  `ratio_putfile_to_raw_files` = flowfiles_per_sec / that.
* `raw_disk_mb_per_sec`: one plain file written and read back sequentially in 1 MB
  writes with one fdatasync per 1 MB (the content a session commits), the mean of a run
  just before the 1 MB flow and one just after it (both in
  `raw_disk_mb_per_sec_before_after`);
  `ratio_1mb_to_disk` = mb_per_sec_1mb / that.
CPU beside each rate: `engine_cpu_us_per_flowfile`, `small_cpu_us_per_flowfile` and
`large_cpu_ms_per_flowfile`, the CPU time (user + system, every thread) the node spent
while the flow ran, per FlowFile: on a shared machine the load changes it far less than
the rate.

`--workers N` runs each flow through `custody run --workers N`, a process per worker
(`benchmarks._flow_workers`): the same flows, GenerateFlowFile's count split exactly
over the workers, the same keys (`--workers 1`, the default, is the figure of the engine
in this process) and `workers` in the result.
Anchor: NiFi's published ~83,000 FlowFiles/s end to end on one node
(`ratio_to_nifi_anchor`, `ratio_engine_to_nifi_anchor`). `--profile` adds the top
functions by own time of the engine flow and of the 1 MB flow (`profile_engine_flow`,
`profile_1mb_flow`), and the microseconds per FlowFile they take.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time

NIFI_ANCHOR_FLOWFILES_PER_SEC = 83_000
DEFAULT_BACK_PRESSURE = 10_000  # NiFi's nifi.queue.backpressure.count, and Custody's


def add_arguments(parser) -> None:
    parser.add_argument("--dir", help="directory to run in (default: a fresh temporary directory)")
    parser.add_argument("--engine", type=int, help="FlowFiles in the engine flow (MergeContent before PutFile)")
    parser.add_argument("--small", type=int, help="FlowFiles in the small-content flow")
    parser.add_argument("--large", type=int, help="FlowFiles in the 1 MB flow")
    parser.add_argument("--single", type=int, help="FlowFiles in the flow of one FlowFile per session")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="run the flows through custody run --workers N, a process per worker (default 1: in this process)",
    )
    parser.add_argument("--profile", action="store_true", help="profile the engine flow (slower) and report")
    parser.add_argument("--no-outbox", action="store_true", help="without the provenance outbox")
    parser.add_argument(
        "--back-pressure",
        type=int,
        default=DEFAULT_BACK_PRESSURE,
        help="FlowFiles a connection holds before back pressure (default: NiFi's 10,000; above 20,000 queues swap)",
    )
    from benchmarks.nifi_anchor.rounds import add_arguments as add_nifi_arguments

    add_nifi_arguments(parser)


def flow_definition(
    out: str,
    count: int,
    size: int,
    batch: int,
    merge: int = 0,
    back_pressure: int = DEFAULT_BACK_PRESSURE,
    names: int = 0,
):
    """GenerateFlowFile -> UpdateAttribute -> RouteOnAttribute [-> MergeContent of
    `merge` per bundle] -> PutFile into `out`; each connection holds `back_pressure`
    FlowFiles and swaps above 20,000. PutFile names each file after its FlowFile's
    uuid, or with `names` (a flow without `merge`) after a `filename` that
    GenerateFlowFile draws from `names` ("${random():mod(names)}"), replacing the file
    of that name: the directory then never holds more than `names` files."""
    from flow.loading import parse_flow

    return parse_flow(flow_document(out, count, size, batch, merge, back_pressure, names))


def flow_document(
    out: str,
    count: int,
    size: int,
    batch: int,
    merge: int = 0,
    back_pressure: int = DEFAULT_BACK_PRESSURE,
    names: int = 0,
) -> dict:
    """The flow of `flow_definition` as a flow file holds it."""
    if names and merge:
        raise ValueError("names: PutFile takes the FlowFiles' own names only in a flow without merge")
    swapping = {"swap_threshold": 20_000, "swap_batch": 10_000, "back_pressure": {"object_count": back_pressure}}
    processors = [
        {
            "id": "generate",
            "type": "GenerateFlowFile",
            "properties": {
                "batch_size": batch,
                "file_size": size,
                "max_count": count,
                **({"filename": f"${{random():mod({names})}}"} if names else {}),
            },
        },
        {"id": "update", "type": "UpdateAttribute", "properties": {"stage": "updated", "size.class": "small"}},
        {
            "id": "route",
            "type": "RouteOnAttribute",
            "properties": {"routing_strategy": "route_to_matched_if_any_matches", "ok": "${stage:equals('updated')}"},
        },
        {
            "id": "put",
            "type": "PutFile",
            "properties": {
                "directory": out,
                "sync": False,
                "batch_size": batch,
                **({"file_name": "${filename}", "conflict_resolution": "replace"} if names else {}),
            },
            "auto_terminate": ["success"],
        },
    ]
    into_put = "route"
    connections = [
        {"source": "generate", "destination": "update", **swapping},
        {"source": "update", "destination": "route", **swapping},
    ]
    if merge:
        processors.insert(
            3,
            {
                "id": "merge",
                "type": "MergeContent",
                "auto_terminate": ["original", "failure"],
                "properties": {"min_entries": merge, "max_entries": merge, "max_bin_age": "1 s"},
            },
        )
        connections.append(
            {"source": "route", "relationships": ["matched", "unmatched"], "destination": "merge", **swapping}
        )
        into_put = "merge"
    connections += [
        {
            "source": into_put,
            "relationships": ["merged"] if merge else ["matched", "unmatched"],
            "destination": "put",
            **swapping,
        },
        {"source": "put", "relationships": ["failure"], "destination": "put"},
    ]
    return {"name": f"bench-{size}{'-merged' if merge else ''}", "processors": processors, "connections": connections}


def _run_flow(
    root: str,
    count: int,
    size: int,
    batch: int,
    threads: int,
    outbox: bool,
    profile: bool,
    merge: int = 0,
    back_pressure: int = DEFAULT_BACK_PRESSURE,
):
    """Runs the flow until PutFile wrote every FlowFile (`count`, or `count / merge`
    bundles) and the engine is idle."""
    from cluster.node.standalone import NodeSettings, StandaloneNode

    out = os.path.join(root, "out")
    files = -(-count // merge) if merge else count
    node = StandaloneNode(
        flow_definition(out, count, size, batch, merge, back_pressure),
        os.path.join(root, "node"),
        NodeSettings(threads=threads, provenance_outbox=outbox),
    )
    profiler = None
    if profile:
        profiler = _ThreadProfiler()
        profiler.install(node)
    node.start(paused=True)
    put = None
    started = time.perf_counter()
    cpu_started = time.process_time()
    node.resume()
    try:
        put = node.engine.nodes["put"]
        deadline = time.monotonic() + 3600
        while time.monotonic() < deadline:
            if node.engine.is_idle() and files_in(out) >= files:
                break
            time.sleep(0.02)
        elapsed = time.perf_counter() - started
        cpu = time.process_time() - cpu_started
    finally:
        node.stop()
    delivered = files_in(out)
    if delivered != files:
        raise RuntimeError(f"benchmark flow delivered {delivered} of {files} files")
    result = {"seconds": elapsed, "cpu_s": cpu, "flowfiles": count, "put_tasks": put.tasks if put else 0}
    if profiler is not None:
        result["profile"] = profiler.top(25, count)
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

    def top(self, n: int, flowfiles: int) -> list:
        import pstats

        self._restore()
        if not self._profilers:
            return []
        stats = pstats.Stats(self._profilers[0])
        for profiler in self._profilers[1:]:
            stats.add(profiler)
        total = sum(value[2] for value in stats.stats.values())
        rows = sorted(stats.stats.items(), key=lambda item: item[1][2], reverse=True)[:n]
        return [
            {
                "function": f"{os.path.basename(key[0])}:{key[1]}:{key[2]}",
                "own_s": round(value[2], 3),
                "share": round(value[2] / total, 3) if total else 0.0,
                "calls": value[1],
                "us_per_flowfile": round(value[2] / flowfiles * 1e6, 2),
            }
            for key, value in rows
        ]


def _raw_wal(root: str, flowfiles: int, batch: int, merge: int = 0) -> float:
    """FlowFiles/s the WAL alone sustains for the transactions of the flow's processors:
    one per processor and batch, synced; with `merge`, MergeContent's (the bundle in,
    the originals out) and PutFile's (the bundle out) per `merge` FlowFiles."""
    import uuid

    from repositories.claims import ContentClaim, ResourceClaim
    from repositories.flowfile import Delete, FlowFileRecord, Put, WriteAheadLog
    from repositories.storage import LocalStorage

    wal = WriteAheadLog(LocalStorage(), os.path.join(root, f"raw-wal-{merge}"), checkpoint_interval=None)
    wal.recover()
    claim = ContentClaim(ResourceClaim("local", 1, "r"), 0, 100)
    ids = [str(uuid.uuid4()) for _ in range(flowfiles)]
    attributes = {"filename": "x" * 36, "path": "./"}
    updated = {**attributes, "stage": "updated", "size.class": "small"}
    started = time.perf_counter()
    for start in range(0, flowfiles, batch):
        chunk = ids[start : start + batch]
        for queue, values in (("a", attributes), ("b", updated), ("c", updated)):
            wal.update([Put(FlowFileRecord(i, values, claim, queue, 100, 1, 1)) for i in chunk])
        if merge:
            for bundle in range(0, len(chunk), merge):
                bundle_id = str(uuid.uuid4())
                wal.update(
                    [Put(FlowFileRecord(bundle_id, {"merge.count": str(merge)}, claim, "d", 100 * merge, 1, 1))]
                    + [Delete(i) for i in chunk[bundle : bundle + merge]]
                )
                wal.update([Delete(bundle_id)])
        else:
            wal.update([Delete(i) for i in chunk])
    elapsed = time.perf_counter() - started
    wal.close()
    return flowfiles / elapsed


def _raw_files(root: str, count: int) -> float:
    """Files/s of what PutFile does per FlowFile: create a temporary file, write 100
    bytes, close it, rename it into place; one thread, a plain loop."""
    directory = os.path.join(root, "raw-files")
    os.makedirs(directory, exist_ok=True)
    data = b"x" * 100
    started = time.perf_counter()
    for index in range(count):
        temporary = os.path.join(directory, f".{index}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        os.rename(temporary, os.path.join(directory, f"{index}"))
    return count / (time.perf_counter() - started)


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
    engine = args.engine or (50_000 if args.quick else 500_000)
    large = args.large or (50 if args.quick else 300)
    single = args.single or (500 if args.quick else 3_000)
    if args.workers != 1:
        from benchmarks._flow_workers import refusal

        problem = refusal(args)
        if problem is not None:
            raise SystemExit(f"custody bench flow: {problem}")
    run_flow = _run_flow
    if args.workers != 1:
        from benchmarks._flow_workers import worker_runner

        run_flow = worker_runner(args.workers, flow_document, files_in)
    if args.against_nifi:
        from benchmarks.nifi_anchor.rounds import run as run_against_nifi

        counts = {"engine": engine, "small": small, "1mb": large}
        return run_against_nifi(args, counts, run_flow, flow_definition, flow_document)
    batch, merge = 1000, 1000
    pressure = args.back_pressure
    outbox = not args.no_outbox
    root = args.dir or tempfile.mkdtemp(prefix="custody-bench-flow-")
    os.makedirs(root, exist_ok=True)
    try:
        raw = os.path.join(root, "raw")
        os.makedirs(raw, exist_ok=True)
        raw_wal = _raw_wal(raw, min(small, 50_000), batch)
        raw_wal_engine = _raw_wal(raw, min(engine, 50_000), batch, merge)
        raw_files = _raw_files(raw, min(small, 20_000))
        engine_run = run_flow(
            os.path.join(root, "engine"), engine, 100, batch, args.threads, outbox, False, merge, pressure
        )
        small_run = run_flow(os.path.join(root, "small"), small, 100, batch, args.threads, outbox, False, 0, pressure)
        # Just before the 1 MB flow and just after it, not minutes away: on a shared disk
        # the two halves of their ratio must see the same load (one reading alone moved
        # by a third from run to run here).
        raw_disk_before = _raw_disk(raw, large)
        large_run = run_flow(os.path.join(root, "large"), large, 1 << 20, 1, args.threads, outbox, False, 0, pressure)
        raw_disk_after = _raw_disk(raw, large)
        raw_disk = (raw_disk_before + raw_disk_after) / 2
        single_run = run_flow(os.path.join(root, "single"), single, 100, 1, args.threads, outbox, False, 0, pressure)
        engine_per_sec = engine / engine_run["seconds"]
        flowfiles_per_sec = small / small_run["seconds"]
        mb_per_sec = large / large_run["seconds"]
        result = {
            "engine_flowfiles_per_sec": round(engine_per_sec, 1),
            "flowfiles_per_sec": round(flowfiles_per_sec, 1),
            "mb_per_sec_1mb": round(mb_per_sec, 2),
            "flowfiles_per_sec_1mb": round(large / large_run["seconds"], 2),
            "engine_flowfiles": engine,
            "engine_s": round(engine_run["seconds"], 3),
            "small_flowfiles": small,
            "small_s": round(small_run["seconds"], 3),
            "large_flowfiles": large,
            "large_s": round(large_run["seconds"], 3),
            "raw_wal_flowfiles_per_sec": round(raw_wal, 1),
            "raw_wal_engine_flowfiles_per_sec": round(raw_wal_engine, 1),
            "raw_files_per_sec": round(raw_files, 1),
            "raw_disk_mb_per_sec": round(raw_disk, 1),
            "raw_disk_mb_per_sec_before_after": [round(raw_disk_before, 1), round(raw_disk_after, 1)],
            "ratio_engine_to_wal": round(engine_per_sec / raw_wal_engine, 3) if raw_wal_engine else None,
            "ratio_small_to_wal": round(flowfiles_per_sec / raw_wal, 3) if raw_wal else None,
            "ratio_putfile_to_raw_files": round(flowfiles_per_sec / raw_files, 3) if raw_files else None,
            "ratio_1mb_to_disk": round(mb_per_sec / raw_disk, 3) if raw_disk else None,
            "nifi_anchor_flowfiles_per_sec": NIFI_ANCHOR_FLOWFILES_PER_SEC,
            "ratio_engine_to_nifi_anchor": round(engine_per_sec / NIFI_ANCHOR_FLOWFILES_PER_SEC, 4),
            "ratio_to_nifi_anchor": round(flowfiles_per_sec / NIFI_ANCHOR_FLOWFILES_PER_SEC, 4),
            "engine_cpu_us_per_flowfile": round(engine_run["cpu_s"] / engine * 1e6, 2),
            "small_cpu_us_per_flowfile": round(small_run["cpu_s"] / small * 1e6, 2),
            "large_cpu_ms_per_flowfile": round(large_run["cpu_s"] / large * 1e3, 2),
            "single_flowfiles_per_sec": round(single / single_run["seconds"], 1),
            "single_cpu_us_per_flowfile": round(single_run["cpu_s"] / single * 1e6, 1),
            "single_flowfiles": single,
            "provenance_outbox": outbox,
            "threads": args.threads,
            "workers": args.workers,
            "back_pressure": pressure,
            "cpu_count": os.cpu_count(),
        }
        if args.profile:
            profiled = _run_flow(
                os.path.join(root, "profiled"),
                min(engine, 50_000),
                100,
                batch,
                args.threads,
                outbox,
                True,
                merge,
                pressure,
            )
            result["profile_engine_flow"] = profiled["profile"]
            profiled = _run_flow(
                os.path.join(root, "profiled-1mb"), large, 1 << 20, 1, args.threads, outbox, True, 0, pressure
            )
            result["profile_1mb_flow"] = profiled["profile"]
        return result
    finally:
        if not args.dir:
            shutil.rmtree(root, ignore_errors=True)
