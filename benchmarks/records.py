"""Records: JSON lines to Parquet through ConvertRecord and QueryRecord, against pyarrow and DuckDB.

The input is `--mb` of JSON lines (1 GB; 200 MB with `--quick`) of generated records
(an id, a name, a score, a flag, a city and a nested place: about 150 bytes each),
in files of `--file-mb` (1 MB). Custody runs them on a standalone node's engine with
real local repositories: GetFile -> ConvertRecord (JsonTreeReader ->
ParquetRecordSetWriter, snappy) -> PutFile, timed from the first file taken to the
last Parquet file written; `records_per_sec_convert`.

The anchor, in the same run on the same files: the same conversion done by plain
pyarrow in a loop (`pyarrow.json.read_json` then `pyarrow.parquet.write_table`, file
to file, with Arrow's own threads), `pyarrow_records_per_sec_convert`;
`ratio_convert_vs_pyarrow` is Custody's figure over it.

The same files then go through QueryRecord with a filter and a projection (`QUERY`,
written as Parquet), `records_per_sec_query` (input records per second), against
the same query run by DuckDB itself over each file's records read by pyarrow, written
by pyarrow (`engine_records_per_sec_query`); `ratio_query_vs_engine`.

Memory: one FlowFile of the whole input (`--single-mb`, 1 GB; 200 MB with `--quick`)
goes through the same flow while a thread samples the process's resident set;
`node_peak_rss_growth_mb` is its peak over the resident set before the run.
Per core: `records_per_sec_per_core_convert` is the records/s over the CPU seconds
the process used, beside NiFi's published 946,000 records/s on a 32-core node
(about 29,600 per core).

`--against-nifi` runs real Apache NiFi 2.3.0's ConvertRecord (JSON to Avro) beside
Custody's instead, in alternating rounds (benchmarks.nifi_anchor.record_flows).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
import threading
import time

QUERY = "SELECT id, name, score FROM FLOWFILE WHERE score > 500 AND ok"
NIFI_RECORDS_PER_SEC = 946_000
NIFI_CORES = 32
CITIES = ["Lisboa", "Zürich", "München", "東京", "São Paulo", "Reykjavík", "Kraków", "Oslo"]


def add_arguments(parser) -> None:
    parser.add_argument("--dir", help="directory to run in (default: a fresh temporary directory)")
    parser.add_argument("--mb", type=int, help="megabytes of JSON lines to convert (1000; 200 with --quick)")
    parser.add_argument("--file-mb", type=float, default=1.0, help="size of each input file (FlowFile)")
    parser.add_argument("--single-mb", type=int, help="the one large FlowFile of the memory run (1000; 200 quick)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-single", action="store_true", help="skip the memory run")
    from .nifi_anchor.record_flows import add_arguments as add_nifi_arguments

    add_nifi_arguments(parser)


def _record(rnd: random.Random, index: int) -> dict:
    return {
        "id": index,
        "name": f"user-{rnd.randrange(1 << 30):x}",
        "score": round(rnd.uniform(0, 1000), 3),
        "ok": rnd.random() < 0.5,
        "city": rnd.choice(CITIES),
        "place": {"x": rnd.randrange(10_000), "y": rnd.randrange(10_000)},
        "note": None if index % 10 else "tenth",
    }


def write_inputs(directory: str, megabytes: float, file_mb: float, seed: int = 7) -> int:
    """JSON lines files of about `file_mb` each, `megabytes` in all; how many records."""
    os.makedirs(directory, exist_ok=True)
    rnd = random.Random(seed)
    target, per_file = int(megabytes * 1e6), int(file_mb * 1e6)
    records = written = number = 0
    while written < target:
        lines = []
        size = 0
        while size < per_file and written + size < target:
            line = json.dumps(_record(rnd, records), ensure_ascii=False) + "\n"
            lines.append(line)
            size += len(line.encode())
            records += 1
        data = "".join(lines).encode()
        temporary = os.path.join(directory, f".{number:06d}.json")
        with open(temporary, "wb") as handle:
            handle.write(data)
        os.rename(temporary, os.path.join(directory, f"{number:06d}.json"))
        written += len(data)
        number += 1
    return records


def _flow(source: str, out: str, threads: int, query: bool = False, writer: dict | None = None):
    """GetFile -> ConvertRecord (or QueryRecord with `QUERY`) -> PutFile; `writer`, a
    record writer service's document, takes the Parquet writer's place."""
    from flow.loading import parse_flow

    writer = writer or {"id": "parquet", "type": "ParquetRecordSetWriter", "properties": {"compression_type": "snappy"}}
    work: dict = {"id": "convert", "type": "ConvertRecord", "auto_terminate": ["failure"]}
    relationship = "success"
    if query:
        work = {"id": "convert", "type": "QueryRecord", "auto_terminate": ["failure", "original"]}
        relationship = "selected"

    return parse_flow(
        {
            "name": "bench-records",
            "services": [
                {"id": "json", "type": "JsonTreeReader"},
                writer,
            ],
            "processors": [
                {"id": "get", "type": "GetFile", "properties": {"input_directory": source, "batch_size": 4}},
                {
                    **work,
                    "properties": {"record_reader": "json", "record_writer": writer["id"]}
                    | ({"selected": QUERY} if query else {}),
                    "scheduling": {"concurrent_tasks": threads},
                },
                {
                    "id": "put",
                    "type": "PutFile",
                    "properties": {"directory": out, "sync": False, "batch_size": 16},
                    "auto_terminate": ["success"],
                },
            ],
            "connections": [
                {"source": "get", "destination": "convert"},
                {"source": "convert", "relationships": [relationship], "destination": "put"},
                {"source": "put", "relationships": ["failure"], "destination": "put"},
            ],
        }
    )


def _run_custody(
    root: str, source: str, files: int, threads: int, query: bool = False, writer: dict | None = None
) -> dict:
    """Runs the flow until PutFile wrote `files` files and the engine is idle."""
    from cluster.node.standalone import NodeSettings, StandaloneNode

    from .flow import files_in

    out = os.path.join(root, "out")
    flow = _flow(source, out, threads, query, writer)
    node = StandaloneNode(flow, os.path.join(root, "node"), NodeSettings(threads=threads))
    node.start(paused=True)
    sampler = _RssSampler()
    cpu_before = time.process_time()
    started = time.perf_counter()
    node.resume()
    try:
        deadline = time.monotonic() + 3600
        while time.monotonic() < deadline:
            if files_in(out) >= files and node.engine.is_idle():
                break
            time.sleep(0.02)
        elapsed = time.perf_counter() - started
        cpu = time.process_time() - cpu_before
    finally:
        sampler.stop()
        node.stop()
    delivered = files_in(out)
    if delivered != files:
        raise RuntimeError(f"the records flow delivered {delivered} of {files} files")
    return {"seconds": elapsed, "cpu_seconds": cpu, "out": out, "rss_growth_mb": sampler.growth_mb()}


def _run_pyarrow(source: str, out: str) -> dict:
    import pyarrow.json as pa_json
    import pyarrow.parquet as pq

    os.makedirs(out, exist_ok=True)
    names = sorted(name for name in os.listdir(source) if not name.startswith("."))
    cpu_before = time.process_time()
    started = time.perf_counter()
    for name in names:
        table = pa_json.read_json(os.path.join(source, name))
        pq.write_table(table, os.path.join(out, name + ".parquet"), compression="snappy")
    return {"seconds": time.perf_counter() - started, "cpu_seconds": time.process_time() - cpu_before}


def _run_engine_query(source: str, out: str) -> dict:
    import duckdb
    import pyarrow.json as pa_json
    import pyarrow.parquet as pq

    os.makedirs(out, exist_ok=True)
    names = sorted(name for name in os.listdir(source) if not name.startswith("."))
    database = duckdb.connect(":memory:")
    cpu_before = time.process_time()
    started = time.perf_counter()
    for name in names:
        cursor = database.cursor()
        cursor.register("FLOWFILE", pa_json.read_json(os.path.join(source, name)))
        pq.write_table(cursor.sql(QUERY).to_arrow_table(), os.path.join(out, name + ".parquet"), compression="snappy")
        cursor.close()
    return {"seconds": time.perf_counter() - started, "cpu_seconds": time.process_time() - cpu_before}


def _count_rows(directory: str) -> int:
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(os.path.join(directory, name)).metadata.num_rows for name in os.listdir(directory))


class _RssSampler:
    """The process's resident set, sampled every 20 ms on a thread of its own."""

    def __init__(self):
        self.base = _rss_bytes()
        self.peak = self.base
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, _rss_bytes())

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss_bytes())

    def growth_mb(self) -> float:
        return round((self.peak - self.base) / 1e6, 1)


def _rss_bytes() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def run(args) -> dict:
    megabytes = args.mb or (200 if args.quick else 1000)
    if args.against_nifi:
        from .nifi_anchor.record_flows import run as run_against_nifi

        return run_against_nifi(args, megabytes, write_inputs, _run_custody)
    single = args.single_mb or (200 if args.quick else 1000)
    root = args.dir or tempfile.mkdtemp(prefix="custody-bench-records-")
    os.makedirs(root, exist_ok=True)
    try:
        inputs = os.path.join(root, "inputs")
        records = write_inputs(inputs, megabytes, args.file_mb)
        files = len(os.listdir(inputs))
        anchor = _run_pyarrow(inputs, os.path.join(root, "pyarrow-out"))
        source = os.path.join(root, "custody-in")
        shutil.copytree(inputs, source)  # GetFile takes (deletes) what it reads
        custody = _run_custody(os.path.join(root, "custody"), source, files, args.threads)
        converted = _count_rows(custody["out"])
        if converted != records:
            raise RuntimeError(f"ConvertRecord wrote {converted} records of {records}")
        per_sec = records / custody["seconds"]
        anchor_per_sec = records / anchor["seconds"]
        result = {
            "input_mb": megabytes,
            "input_files": files,
            "records": records,
            "records_per_sec_convert": round(per_sec, 1),
            "pyarrow_records_per_sec_convert": round(anchor_per_sec, 1),
            "ratio_convert_vs_pyarrow": round(per_sec / anchor_per_sec, 3),
            "convert_s": round(custody["seconds"], 3),
            "pyarrow_convert_s": round(anchor["seconds"], 3),
            "records_per_sec_per_core_convert": round(records / custody["cpu_seconds"], 1),
            "pyarrow_records_per_sec_per_core_convert": round(records / anchor["cpu_seconds"], 1),
            "nifi_records_per_sec_per_core": round(NIFI_RECORDS_PER_SEC / NIFI_CORES, 1),
            "convert_rss_growth_mb": custody["rss_growth_mb"],
            "threads": args.threads,
            "cpu_count": os.cpu_count(),
        }
        shutil.rmtree(os.path.join(root, "custody"), ignore_errors=True)
        engine = _run_engine_query(inputs, os.path.join(root, "duckdb-out"))
        shutil.rmtree(source, ignore_errors=True)
        shutil.copytree(inputs, source)
        queried = _run_custody(os.path.join(root, "custody"), source, files, args.threads, query=True)
        selected = _count_rows(queried["out"])
        if selected != _count_rows(os.path.join(root, "duckdb-out")):
            raise RuntimeError(f"QueryRecord selected {selected} records, DuckDB alone a different number")
        query_per_sec, engine_per_sec = records / queried["seconds"], records / engine["seconds"]
        result.update(
            {
                "records_per_sec_query": round(query_per_sec, 1),
                "engine_records_per_sec_query": round(engine_per_sec, 1),
                "ratio_query_vs_engine": round(query_per_sec / engine_per_sec, 3),
                "query_s": round(queried["seconds"], 3),
                "engine_query_s": round(engine["seconds"], 3),
                "records_selected": selected,
                "query": QUERY,
            }
        )
        shutil.rmtree(os.path.join(root, "custody"), ignore_errors=True)
        shutil.rmtree(source, ignore_errors=True)
        if not args.no_single:
            one = os.path.join(root, "single-in")
            single_records = write_inputs(one, single, single)
            run_single = _run_custody(os.path.join(root, "single"), one, 1, args.threads)
            if _count_rows(run_single["out"]) != single_records:
                raise RuntimeError("the single large FlowFile lost records")
            result.update(
                {
                    "single_flowfile_mb": single,
                    "single_flowfile_records": single_records,
                    "single_flowfile_s": round(run_single["seconds"], 3),
                    "node_peak_rss_growth_mb": run_single["rss_growth_mb"],
                }
            )
        return result
    finally:
        if not args.dir:
            shutil.rmtree(root, ignore_errors=True)
