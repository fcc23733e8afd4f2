"""Provenance repository: sustained ingest with indexing, searchable lag, query latency, compression.

Ingest: producer threads register columnar batches of a realistic event mix (RECEIVE,
attribute and content changes, ROUTE, FORK with children, SEND, DROP; a unique uuid
and filename per FlowFile, four attributes, content claims) through the repository's
bulk path `register_batch`, with size-based rollover, merging, compression and
indexing all running. The rate counts the time until every event is searchable.
The anchor is the cost of producing the batches alone, measured in the same run.

Lag: for each rolled file, the time from the registration of its events to the index
commit that made them searchable (p50/p99, weighted by events).

Queries: by uuid (random known uuids, plus the event fetch from its block) and by time
range (limit 100), over `--events` events (10 million in a full run; --quick uses
500,000 and says so); each also timed in the index alone (`*_index_search_ms`).

Measured: sorted runs against the tantivy index of the release before, alternated in
one session (before, after, before, after; --quick, 480,000 events) on the shared
2-core host at load 8-9, where the benchmark's process got 0.33-0.38 of a core:
                                     before (tantivy)    after (sorted runs)
  ingest, events/s                   25,400 / 19,500     49,300 / 58,000
  ingest CPU, us/event               14.9 / 17.0         6.6 / 6.5
  searchable lag p50 / p99, s        6.7-8.6 / 11.6-18.1 3.7-4.7 / 5.6-7.0
  uuid query p50, ms (index alone)   0.37-0.49 (0.10-0.15) 0.39-0.41 (0.15)
  time-range p50, ms (index alone)   0.10-0.53 (0.08-0.46) 7.1-8.1 (0.69-1.38)
  index bytes/event                  57.6                110.2
A time-range query returns more events after (71-92 against 14-29 on average): the
faster ingest packs more events into its one second, and reading them is its cost.
Full size (10 million events, one run each, before then after, load 7-11, the
process getting 0.53 and 0.58 of a core):
                                     before (tantivy)    after (sorted runs)
  ingest, events/s                   19,000              94,600
  ingest CPU, us/event               27.7                6.2
  searchable lag p50 / p99, s        10.4 / 40.4         2.6 / 6.6
  uuid query p50 / p99, ms           10.0 / 95.9         2.1 / 49.5
  uuid search, index alone, p50, ms  1.9                 0.5
  time-range p50 (index alone), ms   25.6 (21.4)         15.2 (8.2)
  index bytes/event                  57.9                110.1
Merges of runs on a thread of their own, merged by numpy's sorts, runs built by a
numpy sort over 8-byte key prefixes: `custody bench provenance --json` with
`--quick`, `--events 3000000 --queries 50` and `--queries 100` (full size), run from
an export of commit c70b4aa ("before") and from this tree, alternated in one session:
                                     before              after
  full size (10M), load 6-11:
    events/s                         106,574             132,311
    CPU us/event                     6.06                5.50
    lag p50 / p99, s                 2.46 / 5.76         1.68 / 3.58
  3M events (20-21 files), CPU us/event 5.42 / 5.90      5.28 / 5.28
  --quick, CPU us/event              6.59 / 6.11 / 5.88  6.02 / 6.43 / 5.85
Then without copying the whole table of events to build runs (later the same session,
busier: the process got 0.32-0.75 of a core):
  full size, events/s                58,146              59,375
  full size, CPU us/event            6.56                5.46
  full size, lag p50, s              4.79                2.89
  3M events, CPU us/event            6.07 / 5.48         4.69 / 4.41
  3M events, events/s                78,633 / 85,851     97,193 / 169,595
The events/s follow the load; CPU per event is the steadier figure. Stage wall times
per event (full size, after, first session): building and writing runs 5.4 us,
event-file merge and compression 3.1, journal writes 2.6, merges of runs 1.2 (on
their own thread; 1.35 on the index thread before).
Runs built with numpy's unstable sort of key prefixes, uuid keys cut from the bytes,
and uuid and filename runs without a time column (run format 2): commit 62f056d
("before", a worktree, with this benchmark script) and this tree alternated in one
session, load 2.5-3.3, the process getting 1.4-1.5 of a core (after, full size: 0.95
and 1.17), CPU per thread from `thread_cpu_microseconds_per_event`:
                                     before              after
  --quick (480,000 events), 3 rounds:
    events/s                         366,584 / 285,137 / 315,884   418,108 / 273,271 / 405,085
    CPU us/event                     3.81 / 5.15 / 4.31  3.27 / 5.31 / 3.53
    index thread, us/event           1.12 / 1.21 / 1.29  0.81 / 0.96 / 0.69
  full size (10M; before, after, after, before):
    events/s                         323,695 / 327,337   254,777 / 314,636
    CPU us/event                     4.49 / 4.36         3.72 / 3.72
    threads: producers (with the batches), index, runs, merge, us/event:
                                     1.46 1.27 0.66 0.39  1.43 0.78 0.39 0.42
    index bytes/event                110.1               93.3
    lag p50 / p99, s                 0.66 / 1.91         0.89 / 2.08
    uuid search, index alone, p50, ms  0.49 / 0.51       0.98 / 0.88
    uuid within a time range, same   0.40 / 0.43         1.01 / 0.96
    time-range search, same          7.96 / 8.15         4.95 / 6.25
At 3.72 us/event of CPU one core ingests about 269,000 events/s (4.4-4.5 before:
about 225,000). The uuid searches at full size differ by the runs' layout, not their
cost: shards close at 500 MB of index, so smaller runs make fewer, fuller shards,
and here a uuid was looked up in 20 runs after against 13 before (per run: 0.04 and
0.05 ms). With one layout (3 million events, 21 runs in one shard each; the index
alone, CPU, best of 3 in two alternated rounds), a uuid search takes 0.18-0.19 ms
(before 0.19-0.20), within the whole time range 0.21-0.23 (0.20-0.22), and with a bound
inside an event file 0.21-0.23 (0.21).
The same code on this machine when it was quiet (load 0.6; the process got 1.38-1.43
of a core), `custody bench provenance --json`, full size, three runs in a row:
  events/s                           580,718 / 601,817 / 613,925
  CPU us/event                       2.45 / 2.32 / 2.25
  lag p50 / p99, s                   0.41 / 1.03, 0.38 / 1.16, 0.38 / 1.06
  uuid query p50, ms                 0.89 / 0.88 / 0.91
  time-range query p50, ms           6.5 / 7.1 / 7.2
  anchor (producing the batches), events/s  1,787,238 (first run)
The goal, 250,000 events/s with indexing keeping up, holds 2.3-2.5 times over. The
figures above it were taken with the host loaded, the process getting under a core.
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import tempfile
import threading
import time

QUICK_EVENTS = 500_000
FULL_EVENTS = 10_000_000

# One cycle of 20 events: the mix of a typical flow.
_MIX = (
    ["RECEIVE"] * 2
    + ["ATTRIBUTES_MODIFIED"] * 4
    + ["CONTENT_MODIFIED"] * 3
    + ["ROUTE"] * 5
    + ["FORK"]
    + ["SEND"] * 2
    + ["DROP"] * 3
)


def add_arguments(parser) -> None:
    parser.add_argument("--events", type=int, default=None, help="events to ingest (default 10M, --quick 500k)")
    parser.add_argument("--batch", type=int, default=20_000, help="events per register_batch call")
    parser.add_argument("--producers", type=int, default=2, help="producer threads")
    parser.add_argument("--dir", default=None, help="where to put the repository (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the repository directory")
    parser.add_argument("--queries", type=int, default=200, help="queries of each kind")


class _BatchFactory:
    """Builds columnar batches with fresh uuids, filenames, ids and times in Arrow kernels."""

    def __init__(self, size: int):
        import pyarrow as pa

        from repositories.provenance.event_batch import BODY_SCHEMA, CLAIM_TYPE

        self.pa = pa
        self.size = size
        self.schema = BODY_SCHEMA
        kinds = (_MIX * (size // len(_MIX) + 1))[:size]
        self.kinds = pa.array(kinds, pa.string())
        self.components = pa.array([f"processor-{i % len(_MIX):02d}-0c7d2a4e" for i in range(size)], pa.string())
        self.component_types = pa.array([f"Type{i % len(_MIX)}" for i in range(size)], pa.string())
        self.relationships = pa.array(["success" if k == "ROUTE" else None for k in kinds], pa.string())
        self.transit = pa.array(
            [
                f"https://partner.example/ingest/{i % 7}" if k in ("SEND", "RECEIVE") else None
                for i, k in enumerate(kinds)
            ],
            pa.string(),
        )
        self.details = pa.array(["routed by attribute" if k == "ROUTE" else None for k in kinds], pa.string())
        forks = [k == "FORK" for k in kinds]
        self.fork_count = sum(forks)
        child_offsets = [0]
        for f in forks:
            child_offsets.append(child_offsets[-1] + (2 if f else 0))
        self.child_offsets = pa.array(child_offsets, pa.int32())
        self.no_lists = pa.array([[] for _ in range(size)], pa.list_(pa.string()))
        self.map_offsets = pa.array(range(0, 4 * size + 1, 4), pa.int32())
        self.keys = pa.array(["filename", "path", "mime.type", "custody.node"] * size, pa.string())
        self.interleave = pa.array([j * size + i for i in range(size) for j in range(4)], pa.int64())
        self.paths = pa.array(["/data/in/partner-7/"] * size, pa.string())
        self.mimes = pa.array(["application/json"] * size, pa.string())
        self.nodes = pa.array(["custody-node-1"] * size, pa.string())
        self.claim_type = CLAIM_TYPE
        self.sections = pa.array([i % 1024 for i in range(size)], pa.int32())
        self.sizes = pa.array([1000 + (i * 37) % 50_000 for i in range(size)], pa.int64())
        self.containers = pa.array(["default"] * size, pa.string())
        self.resources = pa.array([f"{1700000000000 + i // 100}-{i % 100}" for i in range(size)], pa.string())
        self._offset = 0

    def uuids(self, n: int):
        import pyarrow.compute as pc

        pa = self.pa
        hexed = os.urandom(16 * n).hex().encode()
        offsets = pa.array(range(0, 32 * n + 1, 32), pa.int32())
        raw = pa.StringArray.from_buffers(n, offsets.buffers()[1], pa.py_buffer(hexed))
        parts = [pc.utf8_slice_codeunits(raw, a, b) for a, b in ((0, 8), (8, 12), (12, 16), (16, 20), (20, 32))]
        return pc.binary_join_element_wise(*parts, "-")

    def batch(self, now_ms: int):
        import pyarrow.compute as pc

        pa = self.pa
        n = self.size
        uuids = self.uuids(n)
        children = pa.ListArray.from_arrays(self.child_offsets, self.uuids(2 * self.fork_count))
        filenames = pc.binary_join_element_wise(pc.utf8_slice_codeunits(uuids, 0, 13), ".json", "")
        items = pa.concat_arrays([filenames, self.paths, self.mimes, self.nodes]).take(self.interleave)
        attributes = pa.MapArray.from_arrays(self.map_offsets, self.keys, items)
        offsets = pa.array(range(self._offset, self._offset + n), pa.int64())
        self._offset += n
        claim = pa.StructArray.from_arrays(
            [self.containers, self.sections, self.resources, offsets, self.sizes], fields=list(self.claim_type)
        )
        times = pa.repeat(pa.scalar(now_ms, pa.int64()), n)
        columns = [
            times,
            self.kinds,
            uuids,
            self.no_lists,
            children,
            self.components,
            self.component_types,
            attributes,
            attributes,
            claim,
            claim,
            self.transit,
            self.details,
            self.relationships,
            self.sizes,
        ]
        return pa.RecordBatch.from_arrays(columns, schema=self.schema), uuids


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _weighted_percentile(pairs: list[tuple[float, int]], q: float) -> float:
    if not pairs:
        return float("nan")
    ordered = sorted(pairs)
    total = sum(w for _, w in ordered)
    seen = 0
    for value, weight in ordered:
        seen += weight
        if seen >= q * total:
            return value
    return ordered[-1][0]


def _thread_cpu_s() -> dict[str, float]:
    """CPU seconds (user and system) of each live thread of this process named
    provenance-*, read from /proc (Linux; empty elsewhere)."""
    tick = os.sysconf("SC_CLK_TCK")
    seconds: dict[str, float] = {}
    for thread in threading.enumerate():
        if not thread.name.startswith("provenance-"):
            continue
        try:
            with open(f"/proc/self/task/{thread.native_id}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        seconds[thread.name] = seconds.get(thread.name, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return seconds


def run(args) -> dict:
    from repositories.provenance import EventBatch, ProvenanceConfig, ProvenanceQuery, ProvenanceRepository
    from repositories.provenance.policies import RolloverPolicy

    total = args.events or (QUICK_EVENTS if args.quick else FULL_EVENTS)
    batch_size = min(args.batch, total)
    root = args.dir or tempfile.mkdtemp(prefix="custody-bench-provenance-")
    os.makedirs(root, exist_ok=True)
    containers = (os.path.join(root, "c0"), os.path.join(root, "c1"))

    # Anchor: producing the batches alone.
    factory = _BatchFactory(batch_size)
    start = time.perf_counter()
    for _ in range(5):
        factory.batch(int(time.time() * 1000))
    produce_per_event_s = (time.perf_counter() - start) / (5 * batch_size)

    registered_at: dict[int, float] = {}  # first id of a batch -> registration time
    lags: list[tuple[float, int]] = []
    lock = threading.Lock()

    def on_indexed(info, _when) -> None:
        now = time.perf_counter()
        with lock:
            for first, at in list(registered_at.items()):
                if info.first_id <= first <= info.last_id:
                    lags.append((now - at, batch_size))
                    del registered_at[first]

    config = ProvenanceConfig(
        containers=containers,
        journals_per_container=2,
        rollover=RolloverPolicy(max_age_s=5.0, max_bytes=64 * 1024 * 1024),
        rollover_check_interval_s=0.5,
        age_off_interval_s=None,
        max_age_s=None,
        max_bytes=None,
        compression_level=1,
        max_pending_rollovers=2,
    )
    repository = ProvenanceRepository(config, on_indexed=on_indexed)
    sample_uuids: list[str] = []
    per_producer = total // batch_size // args.producers
    produced = 0
    producers_cpu_s = [0.0]

    def produce(seed: int) -> None:
        nonlocal produced
        local = _BatchFactory(batch_size) if seed else factory
        rng = random.Random(seed)
        for _ in range(per_producer):
            record_batch, uuids = local.batch(int(time.time() * 1000))
            ids = repository.register_batch(EventBatch(record_batch))
            with lock:
                registered_at[ids.start] = time.perf_counter()
                produced += len(ids)
                if rng.random() < 0.2:
                    sample_uuids.append(uuids[rng.randrange(len(uuids))].as_py())
        with lock:
            producers_cpu_s[0] += time.thread_time()  # building batches (the anchor) included

    cpu_start = time.process_time()
    start = time.perf_counter()
    threads = [threading.Thread(target=produce, args=(i,)) for i in range(args.producers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    registered_s = time.perf_counter() - start
    repository.sync(timeout=3600)
    ingest_s = time.perf_counter() - start
    ingest_cpu_s = time.process_time() - cpu_start
    stages = dict(repository.stage_s)
    thread_cpu_s = {"producers": producers_cpu_s[0], **_thread_cpu_s()}

    files = repository.event_files()
    compressed = sum(f.size for f in files)
    # Ratio on a sample of files: uncompressed Arrow IPC bytes of their blocks over the
    # bytes of the event files and TOCs on disk.
    sample = files[:: max(1, len(files) // 5)]
    raw_bytes = sum(f.reader.read_block(i).nbytes for f in sample for i in range(len(f.reader.blocks)))
    ratio = raw_bytes / max(1, sum(f.size for f in sample))
    index_bytes = sum(shard.size() for shard in repository.index.shards)

    rng = random.Random(7)
    uuid_ms, time_ms, uuid_index_ms, time_index_ms = [], [], [], []
    uuid_time_ms, uuid_time_index_ms = [], []
    found = timed_found = time_hits = 0
    lo = min(f.min_time_ms for f in files)
    hi = max(f.max_time_ms for f in files)
    for _ in range(args.queries):
        query = ProvenanceQuery(flowfile_uuid=rng.choice(sample_uuids), limit=100)
        t0 = time.perf_counter()
        result = repository.query(query)
        uuid_ms.append((time.perf_counter() - t0) * 1000)
        found += bool(result.events)
        t0 = time.perf_counter()
        repository.index.search(query)  # the index alone, without reading the events
        uuid_index_ms.append((time.perf_counter() - t0) * 1000)
        # The same uuid within a time range (the whole ingest: its events stay hits).
        timed = ProvenanceQuery(flowfile_uuid=query.flowfile_uuid, start_ms=lo, end_ms=hi, limit=100)
        t0 = time.perf_counter()
        timed_found += bool(repository.query(timed).events)
        uuid_time_ms.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        repository.index.search(timed)
        uuid_time_index_ms.append((time.perf_counter() - t0) * 1000)
    for _ in range(args.queries):
        a = rng.randint(lo, hi)
        query = ProvenanceQuery(start_ms=a, end_ms=a + 1000, limit=100)
        t0 = time.perf_counter()
        time_hits += len(repository.query(query).events)
        time_ms.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        repository.index.search(query)
        time_index_ms.append((time.perf_counter() - t0) * 1000)
    get_ms = []
    for _ in range(args.queries):
        event_id = rng.randint(1, repository.next_event_id - 1)
        t0 = time.perf_counter()
        repository.get(event_id)
        get_ms.append((time.perf_counter() - t0) * 1000)
    shards = len(repository.index.shards)
    repository.close()
    if not args.keep and not args.dir:
        shutil.rmtree(root, ignore_errors=True)

    return {
        "events": produced,
        "quick": bool(args.quick),
        "note": f"quick run: {produced} events, not 10 million" if produced < FULL_EVENTS else "10M-event run",
        "ingest_events_per_sec": produced / ingest_s,
        "register_events_per_sec": produced / registered_s,
        "ingest_s": ingest_s,
        "batch_production_events_per_sec_anchor": 1 / produce_per_event_s,
        "searchable_lag_seconds_p50": _weighted_percentile(lags, 0.50),
        "searchable_lag_seconds_p99": _weighted_percentile(lags, 0.99),
        "uuid_query_ms_p50": statistics.median(uuid_ms),
        "uuid_query_ms_p99": _percentile(uuid_ms, 0.99),
        "uuid_query_hit_rate": found / max(1, len(uuid_ms)),
        "time_range_query_ms_p50": statistics.median(time_ms),
        "time_range_query_ms_p99": _percentile(time_ms, 0.99),
        # Reading the hits' events dominates a time-range query: a faster ingest packs
        # more events into its one second, and it returns more of them.
        "time_range_query_events_mean": time_hits / max(1, len(time_ms)),
        "uuid_index_search_ms_p50": statistics.median(uuid_index_ms),
        "uuid_index_search_ms_p99": _percentile(uuid_index_ms, 0.99),
        "uuid_time_range_query_ms_p50": statistics.median(uuid_time_ms),
        "uuid_time_range_query_hit_rate": timed_found / max(1, len(uuid_time_ms)),
        "uuid_time_range_index_search_ms_p50": statistics.median(uuid_time_index_ms),
        "uuid_time_range_index_search_ms_p99": _percentile(uuid_time_index_ms, 0.99),
        "time_range_index_search_ms_p50": statistics.median(time_index_ms),
        "time_range_index_search_ms_p99": _percentile(time_index_ms, 0.99),
        "get_by_id_ms_p50": statistics.median(get_ms),
        "compression_ratio": ratio,
        "event_file_bytes": compressed,
        "event_file_bytes_per_event": compressed / max(1, produced),
        "index_bytes": index_bytes,
        "index_bytes_per_event": index_bytes / max(1, produced),
        "index_shards": shards,
        "event_files": len(files),
        "ingest_cpu_microseconds_per_event": ingest_cpu_s / max(1, produced) * 1e6,
        "ingest_cpu_cores_used": ingest_cpu_s / ingest_s,
        # Per thread: the steadier figure on a loaded host (not counted: zstd's and
        # Arrow's own threads, the rest of ingest_cpu_microseconds_per_event).
        "thread_cpu_microseconds_per_event": {k: v / max(1, produced) * 1e6 for k, v in thread_cpu_s.items()},
        "profile_s": stages,
        "profile_microseconds_per_event": {k: v / max(1, produced) * 1e6 for k, v in stages.items()},
        "goal_ingest_events_per_sec": 250_000,
        "goal_uuid_query_ms_p50": 20,
    }
