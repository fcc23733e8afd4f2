"""`custody bench records --against-nifi`: NiFi 2.3.0's record flow beside Custody's,
JSON lines to Avro, in alternating rounds on the same input files.

NiFi's flow: GetFile -> ConvertRecord (JsonTreeReader -> AvroRecordSetWriter) ->
PutFile, its two controller services created and enabled through the REST API in a
process group of its own. The reader infers the schema (its default), the writer
inherits it and embeds it in an uncompressed container (its defaults: "Inherit Record
Schema", "Embed Avro Schema", compression NONE), as Custody's AvroRecordSetWriter
writes by default. NiFi writes Avro, not Parquet as `custody bench records` does,
because Maven Central does not serve NiFi's Parquet NAR; it does serve
nifi-record-serialization-services-nar, whose writers include Avro, the cheapest
of them. ConvertRecord runs `--threads` concurrent tasks on each side, GetFile and
PutFile one; NiFi's run durations are its defaults (0 ms: a session holds a 1 MB
FlowFile, whose conversion dwarfs a session's cost).

Each round runs NiFi, then Custody with AvroRecordSetWriter (the same conversion),
then Custody as `custody bench records` runs it (ParquetRecordSetWriter, snappy),
each over the whole input: the files are copied into the flow's input directory with
the flow stopped, and the clock and the CPU counters run from the start of the flow
until its PutFile has written the last file. The whole input, not a steady window,
because the input is finite on both sides: each side pays for its own start of the
flow and for the tail where fewer files are left than tasks, and no side's figure
depends on where a window falls. NiFi is given a warm-up pass over the whole input
before the first round (its JIT compiles the hot paths, and the JVM stays up for
every round: a pass over 16 files left the first round at about 60% of the next
two), Custody one over `WARMUP_FILES` files (it has no JIT; its first run pays for
imports).

Per core: records per CPU second, the records over the CPU seconds the side used
over its run: NiFi's JVM from /proc/PID/stat (every thread of it, framework
included), Custody's from this process's own CPU time (its engine runs in this
process). On a shared 2-core machine the CPU figure is steadier than the rate.
Every run's output is counted: as many records as were generated, or the round fails.

Measured (`custody bench records --against-nifi --mb 100`, three rounds, 734,282
records in 100 files, two cores shared, load average 4-9), medians, the writer
before and after it encoded Arrow's columns (flow.records.avro_columns) run one
after the other: NiFi 149,000 and 157,000 records per CPU second; Custody JSON to
Avro 46,800 and 384,000 (ratio_records_per_core_vs_nifi 0.31 before, 2.45 after,
the goal being 2.0); Custody JSON to Parquet 403,000 and 418,000. Before, the Avro
writer's records went through Python objects (Arrow's `to_pylist`, then fastavro)
at about 57,000 records per CPU second for the writer alone; its column encoding
writes about 1,400,000.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .assembly import NIFI_VERSION, nifi_home
from .flows import processor_component
from .process import NiFiProcess, find_java
from .rest import NiFiApiError, NiFiClient

STANDARD = "org.apache.nifi.processors.standard"
JSON_READER = "org.apache.nifi.json.JsonTreeReader"
AVRO_WRITER = "org.apache.nifi.avro.AvroRecordSetWriter"
WARMUP_FILES = 16
POLL_SECONDS = 0.05
RUN_TIMEOUT = 3600.0
NIFI_WRITER_NOTE = (
    "NiFi writes Avro (AvroRecordSetWriter): Maven Central does not serve NiFi's Parquet NAR; "
    "Custody's JSON-to-Avro figures are the same conversion"
)


def add_arguments(parser) -> None:
    parser.add_argument(
        "--against-nifi",
        action="store_true",
        help="alternate rounds with real Apache NiFi 2.3.0's ConvertRecord, JSON to Avro "
        "(assembled from Maven Central, cached; needs Java 21+)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="--against-nifi: rounds (default 3)")


# --- NiFi's REST documents (pure) ---


def service_documents() -> dict[str, dict]:
    """Key -> the `component` of NiFi's ControllerServiceEntity: the JSON reader and
    the Avro writer, their schema settings written out though they are the defaults."""
    return {
        "reader": {
            "name": "JsonTreeReader",
            "type": JSON_READER,
            "properties": {"schema-access-strategy": "infer-schema"},
        },
        "writer": {
            "name": "AvroRecordSetWriter",
            "type": AVRO_WRITER,
            "properties": {
                "schema-access-strategy": "inherit-record-schema",
                "Schema Write Strategy": "avro-embedded",
                "compression-format": "NONE",
            },
        },
    }


def processor_documents(source: str, out: str, reader: str, writer: str, tasks: int) -> dict[str, dict]:
    """Key -> the `component` of NiFi's ProcessorEntity: GetFile takes (and deletes)
    the files of `source`, ConvertRecord uses the services `reader` and `writer` (their
    ids) with `tasks` concurrent tasks, PutFile writes into `out`. ConvertRecord's
    failure is auto-terminated: the count of the records written finds any loss."""
    return {
        "get": processor_component(
            "GetFile",
            f"{STANDARD}.GetFile",
            {"Input Directory": source, "Keep Source File": "false", "Batch Size": "10", "Polling Interval": "0 sec"},
        ),
        "convert": processor_component(
            "ConvertRecord",
            f"{STANDARD}.ConvertRecord",
            {"Record Reader": reader, "Record Writer": writer},
            auto_terminate=("failure",),
            tasks=tasks,
        ),
        "put": processor_component(
            "PutFile",
            f"{STANDARD}.PutFile",
            {"Directory": out, "Conflict Resolution Strategy": "fail"},
            auto_terminate=("success",),
        ),
    }


CONNECTIONS = (("get", "convert", ["success"]), ("convert", "put", ["success"]), ("put", "put", ["failure"]))


def service_state_document(version: int, state: str) -> dict:
    """The ControllerServiceRunStatusEntity that enables (ENABLED) or disables
    (DISABLED) a service at its `version` (NiFi's revision)."""
    if state not in ("ENABLED", "DISABLED"):
        raise ValueError(f"a controller service is ENABLED or DISABLED, not {state!r}")
    return {"revision": {"version": version}, "state": state}


# --- the figures (pure) ---


@dataclass(frozen=True)
class WholeInputRun:
    """One side's run over the whole input: its records, wall seconds, CPU seconds."""

    records: int
    seconds: float
    cpu_seconds: float

    def figures(self) -> dict:
        return {
            "records": self.records,
            "seconds": round(self.seconds, 3),
            "cpu_s": round(self.cpu_seconds, 3),
            "records_per_sec": round(per_second(self.records, self.seconds), 1),
            "records_per_cpu_sec": round(per_second(self.records, self.cpu_seconds), 1),
        }


def per_second(records: int, seconds: float) -> float:
    """Records per (wall or CPU) second; refuses a run that took no time, which would
    make any figure infinite."""
    if seconds <= 0:
        raise ValueError(f"a run of {records} records took {seconds} s: nothing was measured")
    return records / seconds


SIDES = {
    "nifi": ("nifi_records_per_sec", "nifi_records_per_cpu_sec"),
    "custody_avro": ("records_per_sec_json_to_avro", "records_per_cpu_sec_json_to_avro"),
    "custody_parquet": ("records_per_sec_json_to_parquet", "records_per_cpu_sec_json_to_parquet"),
}


def summarize(rounds: list[dict]) -> dict:
    """The medians of the rounds' figures per side, and Custody's JSON-to-Avro over
    NiFi's: `ratio_records_vs_nifi` (records/s), `ratio_records_per_core_vs_nifi`
    (records per CPU second)."""
    if not rounds:
        raise ValueError("no rounds to summarize")
    result: dict = {}
    for side, (rate_key, cpu_key) in SIDES.items():
        result[rate_key] = round(statistics.median(entry[side]["records_per_sec"] for entry in rounds), 1)
        result[cpu_key] = round(statistics.median(entry[side]["records_per_cpu_sec"] for entry in rounds), 1)
    result["ratio_records_vs_nifi"] = round(result["records_per_sec_json_to_avro"] / result["nifi_records_per_sec"], 3)
    result["ratio_records_per_core_vs_nifi"] = round(
        result["records_per_cpu_sec_json_to_avro"] / result["nifi_records_per_cpu_sec"], 3
    )
    return result


def avro_records(directory: str) -> int:
    """The records of the Avro container files in `directory`, from their blocks'
    counts (the records are not decoded)."""
    import fastavro

    total = 0
    for name in sorted(os.listdir(directory)):
        if name.startswith("."):
            continue
        with open(os.path.join(directory, name), "rb") as handle:
            total += sum(block.num_records for block in fastavro.block_reader(handle))
    return total


def files_in(directory: Path) -> int:
    """Files PutFile wrote to `directory` (PutFile writes a dot-file, then renames it)."""
    try:
        return sum(1 for name in os.listdir(directory) if not name.startswith("."))
    except FileNotFoundError:
        return 0


# --- NiFi's side (I/O) ---


class NiFiRecordFlow:
    """The flow in a process group of its own, made once for the whole run: services
    created and enabled, processors and connections created, all checked valid."""

    def __init__(self, client: NiFiClient, nifi: NiFiProcess, root: Path, tasks: int):
        self.client, self.nifi = client, nifi
        self.source, self.out = root / "nifi-in", root / "nifi-out"
        self.source.mkdir(parents=True, exist_ok=True)
        self.group = client.create_group(client.root_group_id(), "bench-records")
        self.services: dict[str, str] = {}
        for key, document in service_documents().items():
            body = {"revision": {"version": 0}, "component": document}
            self.services[key] = client.request("POST", f"/process-groups/{self.group}/controller-services", body)["id"]
        for service in self.services.values():
            self._set_service_state(service, "ENABLED")
        documents = processor_documents(
            str(self.source), str(self.out), self.services["reader"], self.services["writer"], tasks
        )
        self.processors = {key: client.create_processor(self.group, document) for key, document in documents.items()}
        for source, destination, relationships in CONNECTIONS:
            client.create_connection(
                self.group,
                {
                    "source": {"id": self.processors[source], "groupId": self.group, "type": "PROCESSOR"},
                    "destination": {"id": self.processors[destination], "groupId": self.group, "type": "PROCESSOR"},
                    "selectedRelationships": relationships,
                },
            )
        for key, processor in self.processors.items():
            component = client.processor(processor)["component"]
            if component.get("validationStatus") == "INVALID":
                raise RuntimeError(
                    f"NiFi says {key} ({component['type']}) is invalid: {component.get('validationErrors')}"
                )

    def _set_service_state(self, service: str, state: str, timeout: float = 60.0) -> None:
        entity = self.client.request("GET", f"/controller-services/{service}")
        version = entity["revision"]["version"]
        self.client.request("PUT", f"/controller-services/{service}/run-status", service_state_document(version, state))
        deadline = time.monotonic() + timeout
        while (entity := self.client.request("GET", f"/controller-services/{service}"))["component"]["state"] != state:
            if time.monotonic() > deadline:
                component = entity["component"]
                raise NiFiApiError(
                    "PUT",
                    f"/controller-services/{service}/run-status",
                    0,
                    f"{component['name']} is {component['state']}, not {state}, after {timeout:.0f} s: "
                    f"{component.get('validationErrors')}",
                )
            time.sleep(0.1)

    def run(self, inputs: Path, names: list[str], records: int) -> WholeInputRun:
        """The files `names` of `inputs` through the flow, timed from the group's start
        until PutFile wrote the last of them; their records counted afterwards."""
        shutil.rmtree(self.out, ignore_errors=True)
        for name in names:
            shutil.copyfile(inputs / name, self.source / name)
        cpu_before = self.nifi.cpu_seconds()
        started = time.perf_counter()
        self.client.schedule_group(self.group, "RUNNING")
        deadline = time.monotonic() + RUN_TIMEOUT
        try:
            while files_in(self.out) < len(names):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"NiFi wrote {files_in(self.out)} of {len(names)} files in {RUN_TIMEOUT:.0f} s")
                time.sleep(POLL_SECONDS)
            seconds = time.perf_counter() - started
            cpu_after = self.nifi.cpu_seconds()
        finally:
            self.client.schedule_group(self.group, "STOPPED")
        if cpu_before is None or cpu_after is None:
            raise RuntimeError("NiFi's JVM CPU time could not be read from /proc")
        written = avro_records(str(self.out))
        if written != records:
            raise RuntimeError(f"NiFi's ConvertRecord wrote {written} records of {records}")
        return WholeInputRun(records, seconds, cpu_after - cpu_before)


# --- Custody's side and the rounds ---


AVRO_SERVICE = {"id": "avro", "type": "AvroRecordSetWriter"}


def run_custody(
    root: Path, inputs: Path, names: list[str], records: int, threads: int, avro: bool, run_custody_flow: Callable
) -> WholeInputRun:
    """The files through custody bench records' own runner (`run_custody_flow`,
    benchmarks.records._run_custody), with AvroRecordSetWriter when `avro`, else its
    ParquetRecordSetWriter; its records counted afterwards."""
    source = root / "custody-in"
    shutil.rmtree(source, ignore_errors=True)
    source.mkdir(parents=True)
    for name in names:
        shutil.copyfile(inputs / name, source / name)
    work = root / "custody"
    try:
        result = run_custody_flow(str(work), str(source), len(names), threads, writer=AVRO_SERVICE if avro else None)
        written = avro_records(result["out"]) if avro else _parquet_records(result["out"])
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(source, ignore_errors=True)
    if written != records:
        raise RuntimeError(f"Custody's ConvertRecord wrote {written} records of {records}")
    return WholeInputRun(records, result["seconds"], result["cpu_seconds"])


def _parquet_records(directory: str) -> int:
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(os.path.join(directory, name)).metadata.num_rows for name in os.listdir(directory))


def _records_in(inputs: Path, names: list[str]) -> int:
    total = 0
    for name in names:
        with open(inputs / name, "rb") as handle:
            total += sum(1 for line in handle if line.strip())
    return total


def run(args, megabytes: int, write_inputs: Callable, run_custody_flow: Callable) -> dict:
    """The whole comparison on `megabytes` of generated JSON lines; `write_inputs` and
    `run_custody_flow` are custody bench records' own (benchmarks.records), passed in
    so that this package does not import the module that imports it."""
    from cluster.services.install import cache_dir

    home = nifi_home(cache_dir())
    java, major = find_java()
    root = Path(args.dir or tempfile.mkdtemp(prefix="custody-bench-records-nifi-"))
    root.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    rounds: list[dict] = []
    try:
        inputs = root / "inputs"
        records = write_inputs(str(inputs), megabytes, args.file_mb)
        names = sorted(name for name in os.listdir(inputs) if not name.startswith("."))
        warmup = names[:WARMUP_FILES]
        warmup_records = _records_in(inputs, warmup)
        with NiFiProcess(home, root / "nifi", java) as nifi:
            client = NiFiClient(nifi.url)
            version = client.request("GET", "/flow/about")["about"]["version"]
            # The group is left as it is: leaving `with` stops NiFi, whose run is discarded.
            flow = NiFiRecordFlow(client, nifi, root, args.threads)
            flow.run(inputs, names, records)
            run_custody(root, inputs, warmup, warmup_records, args.threads, True, run_custody_flow)
            for number in range(args.rounds):
                entry: dict = {"round": number + 1}
                entry["nifi"] = flow.run(inputs, names, records).figures()
                entry["nifi"]["loadavg_1m"] = round(os.getloadavg()[0], 2)
                for side, avro in (("custody_avro", True), ("custody_parquet", False)):
                    measured = run_custody(root, inputs, names, records, args.threads, avro, run_custody_flow)
                    entry[side] = measured.figures() | {"loadavg_1m": round(os.getloadavg()[0], 2)}
                rounds.append(entry)
    finally:
        if not args.dir:
            shutil.rmtree(root, ignore_errors=True)
    return {
        **summarize(rounds),
        "rounds": rounds,
        "records": records,
        "input_mb": megabytes,
        "input_files": len(names),
        "nifi_version": version,
        "nifi_expected_version": NIFI_VERSION,
        "nifi_writer": NIFI_WRITER_NOTE,
        "java": str(java),
        "java_major": major,
        "measured": "whole input: from the flow's start until PutFile wrote the last file",
        "threads": args.threads,
        "cpu_count": os.cpu_count(),
        "loadavg_before": [round(value, 2) for value in load_before],
        "loadavg_after": [round(value, 2) for value in os.getloadavg()],
    }
