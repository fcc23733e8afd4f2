"""`custody bench flow --against-nifi`: NiFi 2.3.0 and Custody alternating, flow by flow.

One NiFi JVM serves the whole run. Each round runs NiFi engine, Custody engine,
NiFi small, Custody small, NiFi 1 MB, Custody 1 MB; the ratios are Custody over
NiFi of the medians of the rounds. A NiFi flow is created through the REST API in a
fresh process group, started, sampled from PutFile's status after the warm-up and
until the window's end, then stopped, emptied and deleted. Custody is measured
twice: as `custody bench flow` measures it (benchmarks.flow._run_flow: a fixed
count, first FlowFile generated to last written; `ratio_<flow>_vs_nifi`), and as
NiFi is, PutFile's intake over the same warm-up and window of an endless flow
(`ratio_<flow>_steady_vs_nifi`). The CPU seconds NiFi's JVM used over each window
are read from /proc (and over each whole round, Custody's turns included), and the
benchmark process's own CPU time over each Custody run (its engine runs in this
process): `cpu_ratio_<flow>_nifi_to_custody` compares the CPU each spends per
FlowFile (per MB for 1 MB), steadier than the rates on a shared machine.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from . import flows
from .assembly import NIFI_VERSION, nifi_home
from .process import NiFiProcess, find_java
from .rest import NiFiClient

STATUS_INTERVAL = 2.0
STATUS_WINDOW_LIMIT = 290.0  # NiFi's processor counters cover its last five minutes


def add_arguments(parser) -> None:
    parser.add_argument(
        "--against-nifi",
        action="store_true",
        help="alternate rounds with real Apache NiFi 2.3.0 (assembled from Maven Central, cached; needs Java 21+)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="--against-nifi: rounds of the three flows (default 3)")
    parser.add_argument("--warmup", type=float, default=10.0, help="--against-nifi: warm-up seconds (default 10)")
    parser.add_argument("--window", type=float, default=30.0, help="--against-nifi: measured seconds (default 30)")
    parser.add_argument(
        "--nifi-default-scheduling",
        action="store_true",
        help="--against-nifi: NiFi's out-of-the-box run duration (0 ms) instead of 25 ms for the attribute processors "
        "and PutFile",
    )


def settled(measure: Callable[[], dict], sync: Callable[[], None] = os.sync) -> dict:
    """`measure()` once the kernel has written back every dirty page (sync(2)), with the
    seconds that took as `settle_s`. Neither NiFi's repositories nor either side's
    PutFile syncs, so without it a turn would wait on the writeback of the turn before
    it: a side that syncs each commit (Custody's repositories) waits on it, one that
    never syncs hardly notices (a 1 MB turn of Custody's right after NiFi's did 27 MB/s,
    against 148-184 alone)."""
    started = time.monotonic()
    sync()
    settle = time.monotonic() - started
    result = measure()
    result["settle_s"] = round(settle, 2)
    return result


def measure_nifi(
    client: NiFiClient, nifi: NiFiProcess, kind: str, out: Path, warmup: float, window: float, default_scheduling: bool
) -> dict:
    """Create `kind`'s flow in a fresh process group, run it for warm-up and window,
    and return its steady rate; the group is stopped and deleted whatever happens."""
    group = client.create_group(client.root_group_id(), f"bench-{kind}")
    try:
        ids = {
            key: client.create_processor(group, document)
            for key, document in flows.processor_documents(kind, str(out), default_scheduling).items()
        }
        for source, destination, relationships in flows.connection_plan(kind):
            client.create_connection(
                group, flows.connection_document(group, ids[source], ids[destination], relationships)
            )
        _require_valid(client, ids)
        client.schedule_group(group, "RUNNING")
        started = time.monotonic()
        start, end = started + warmup, started + warmup + window
        samples = []
        cpu_start = cpu_end = None
        next_sample = start
        while True:
            now = time.monotonic()
            if now < next_sample:
                time.sleep(min(next_sample, end) - now)
                continue
            status = client.processor_status(ids["put"])
            taken = time.monotonic()
            cpu = nifi.cpu_seconds()
            if cpu_start is None:
                cpu_start = cpu
            cpu_end = cpu
            samples.append(flows.StatusSample(taken, int(status["flowFilesIn"]), int(status["bytesIn"])))
            if taken >= end:
                break
            next_sample = min(next_sample + STATUS_INTERVAL, end)
        rate = flows.steady_rate(kind, samples, start, samples[-1].seconds)
        first, last = samples[0], samples[-1]
        result = {
            "rate": rate,
            "window_s": round(last.seconds - first.seconds, 2),
            "putfile_flowfiles_in": last.flowfiles_in - first.flowfiles_in,
            "cpu_s": round(cpu_end - cpu_start, 2) if cpu_start is not None and cpu_end is not None else None,
        }
        result["cpu_us_per_unit"] = cpu_us_per_unit(result["cpu_s"], rate, last.seconds - first.seconds)
        result["loadavg_1m"] = round(os.getloadavg()[0], 2)
        return result
    finally:
        _remove_group(client, group)


def _require_valid(client: NiFiClient, ids: dict[str, str]) -> None:
    for key, processor in ids.items():
        component = client.processor(processor)["component"]
        if component.get("validationStatus") == "INVALID":
            raise RuntimeError(f"NiFi says {key} ({component['type']}) is invalid: {component.get('validationErrors')}")


def _remove_group(client: NiFiClient, group: str, timeout: float = 120.0) -> None:
    client.schedule_group(group, "STOPPED")
    deadline = time.monotonic() + timeout
    while client.active_threads(group) and time.monotonic() < deadline:
        time.sleep(0.2)
    client.empty_group_queues(group)
    client.delete_group(group)


def measure_custody(root: Path, kind: str, count: int, args, run_flow: Callable) -> dict:
    """custody bench flow's own measurement of `kind`: `count` FlowFiles, through its
    `run_flow` (benchmarks.flow._run_flow)."""
    flow = flows.shape(kind)
    cpu = time.process_time()
    result = run_flow(
        str(root / kind), count, flow.content_bytes, flow.batch, args.threads, not args.no_outbox, False, flow.merge
    )
    # With --workers the flow ran in the workers' processes, which give their own CPU.
    cpu_s = result["cpu_s"] if "cpu_s" in result else time.process_time() - cpu
    rate = count / result["seconds"]
    return {
        "rate": rate,
        "seconds": round(result["seconds"], 3),
        "cpu_s": round(cpu_s, 2),
        "cpu_us_per_unit": cpu_us_per_unit(cpu_s, rate, result["seconds"]),
        "loadavg_1m": round(os.getloadavg()[0], 2),
    }


def measure_custody_steady(
    root: Path, kind: str, warmup: float, window: float, args, flow_definition: Callable, flow_document: Callable
) -> dict:
    """Custody measured as NiFi is: the flow (custody bench flow's `flow_definition`)
    runs without end (GenerateFlowFile's max_count out of reach), and the rate is what
    PutFile took in over the same warm-up and window, from its processor statistics
    (`flow.processor_stats`); with `--workers N`, through `custody run --workers N`
    (`flow_document`), from the node's admin API. As in NiFi's flows, PutFile of the
    1 MB flow replaces files among `flows.FILE_NAMES` names (`flows.replaced_names`)."""
    from cluster.node.standalone import NodeSettings, StandaloneNode

    flow = flows.shape(kind)
    out = root / f"{kind}-steady"
    if args.workers != 1:
        return _workers_steady(out, kind, warmup, window, args, flow_document)
    node = StandaloneNode(
        flow_definition(
            str(out / "out"), 10**12, flow.content_bytes, flow.batch, flow.merge, names=flows.replaced_names(kind)
        ),
        str(out / "node"),
        NodeSettings(threads=args.threads, provenance_outbox=not args.no_outbox),
    )
    node.start(paused=True)
    try:
        engine = node.engine
        assert engine is not None, "a started node has its engine"
        put = engine.nodes["put"]
        node.resume()
        started = time.monotonic()
        start, end = started + warmup, started + warmup + window
        samples = []
        cpu_start = cpu_end = 0.0
        for at in (start, end):
            time.sleep(max(0.0, at - time.monotonic()))
            figures = put.stats.snapshot()["since_start"]
            samples.append(flows.StatusSample(time.monotonic(), figures["in_count"], figures["in_bytes"]))
            cpu_end = time.process_time()
            if at == start:
                cpu_start = cpu_end
    finally:
        node.stop()
    rate = flows.steady_rate(kind, samples, start, samples[-1].seconds)
    seconds = samples[-1].seconds - samples[0].seconds
    return {
        "rate": rate,
        "window_s": round(seconds, 2),
        "cpu_s": round(cpu_end - cpu_start, 2),
        "cpu_us_per_unit": cpu_us_per_unit(cpu_end - cpu_start, rate, seconds),
        "loadavg_1m": round(os.getloadavg()[0], 2),
    }


def _workers_steady(out: Path, kind: str, warmup: float, window: float, args, flow_document: Callable) -> dict:
    from benchmarks._flow_workers import measure_steady

    flow = flows.shape(kind)
    document = flow_document(
        str(out / "out"), 10**12, flow.content_bytes, flow.batch, flow.merge, names=flows.replaced_names(kind)
    )
    samples, cpu_s = measure_steady(str(out), document, args.workers, args.threads, warmup, window)
    points = [flows.StatusSample(at, files, size) for at, files, size in samples]
    rate = flows.steady_rate(kind, points, points[0].seconds, points[-1].seconds)
    seconds = points[-1].seconds - points[0].seconds
    return {
        "rate": rate,
        "window_s": round(seconds, 2),
        "cpu_s": round(cpu_s, 2),
        "cpu_us_per_unit": cpu_us_per_unit(cpu_s, rate, seconds),
        "loadavg_1m": round(os.getloadavg()[0], 2),
    }


UNITS = {"engine": "flowfile", "small": "flowfile", "1mb": "mb"}
RATE_KEYS = {
    "engine": "engine_flowfiles_per_sec",
    "small": "small_flowfiles_per_sec",
    "1mb": "1mb_mb_per_sec",
}


def cpu_us_per_unit(cpu_s: float | None, rate: float, seconds: float) -> float | None:
    """CPU microseconds per FlowFile (or per MB) of a measurement: its CPU seconds over
    the units it moved (`rate` x `seconds`)."""
    units = rate * seconds
    return round(cpu_s / units * 1e6, 1) if cpu_s is not None and units > 0 else None


def summarize(rounds: list[dict]) -> dict:
    """Medians of the rounds and Custody's ratios to NiFi (pure): `ratio_<kind>_vs_nifi`
    with Custody measured as custody bench flow measures it, `ratio_<kind>_steady_vs_nifi`
    with Custody measured as NiFi is; and the CPU each side spent per unit, with
    `cpu_ratio_<kind>_nifi_to_custody` (above 1: Custody spends less CPU per unit)."""
    result: dict = {}
    for kind in flows.KINDS:
        rate_key, unit = RATE_KEYS[kind], UNITS[kind]
        figures = [entry[kind] for entry in rounds]
        nifi = statistics.median(f["nifi"]["rate"] for f in figures)
        custody = statistics.median(f["custody"]["rate"] for f in figures)
        result[f"nifi_{rate_key}"] = round(nifi, 2)
        result[f"custody_{rate_key}"] = round(custody, 2)
        result[f"ratio_{kind}_vs_nifi"] = round(custody / nifi, 3) if nifi else None
        if all("custody_steady" in f for f in figures):
            steady = statistics.median(f["custody_steady"]["rate"] for f in figures)
            result[f"custody_steady_{rate_key}"] = round(steady, 2)
            result[f"ratio_{kind}_steady_vs_nifi"] = round(steady / nifi, 3) if nifi else None
        cpu: dict[str, float | None] = {}
        for side in ("nifi", "custody"):
            values = [f[side]["cpu_us_per_unit"] for f in figures if f[side].get("cpu_us_per_unit") is not None]
            median = statistics.median(values) if values else None
            cpu[side] = median
            result[f"{side}_{kind}_cpu_us_per_{unit}"] = round(median, 1) if median is not None else None
        result[f"cpu_ratio_{kind}_nifi_to_custody"] = (
            round(nifi_cpu / custody_cpu, 3) if (nifi_cpu := cpu["nifi"]) and (custody_cpu := cpu["custody"]) else None
        )
    return result


def run(args, counts: dict[str, int], run_flow: Callable, flow_definition: Callable, flow_document: Callable) -> dict:
    """The whole comparison; `counts`: Custody's FlowFiles per flow (engine, small, 1mb);
    `run_flow`, `flow_definition` and `flow_document`: custody bench flow's own
    (benchmarks.flow), passed in so that this package does not import the module that
    imports it."""
    if args.warmup + args.window > STATUS_WINDOW_LIMIT:
        raise SystemExit(f"--warmup plus --window must stay under {STATUS_WINDOW_LIMIT:.0f} s (NiFi's status window)")
    from cluster.services.install import cache_dir

    home = nifi_home(cache_dir())
    java, major = find_java()
    root = Path(args.dir or tempfile.mkdtemp(prefix="custody-bench-flow-nifi-"))
    root.mkdir(parents=True, exist_ok=True)
    rounds: list[dict] = []
    load_before = os.getloadavg()
    try:
        with NiFiProcess(home, root / "nifi", java) as nifi:
            client = NiFiClient(nifi.url)
            version = client.request("GET", "/flow/about")["about"]["version"]
            scheduling = args.nifi_default_scheduling
            for number in range(args.rounds):
                entry: dict = {"round": number + 1}
                # What each side wrote stays until the run ends: deleting hundreds of
                # thousands of files between turns took minutes on a loaded machine, and
                # the file system's work after it would fall on the next turn's side.
                custody_root = root / "custody" / f"round-{number + 1}"
                nifi_root = root / "nifi-out" / f"round-{number + 1}"
                jvm_cpu = nifi.cpu_seconds()
                for kind in flows.KINDS:
                    entry[kind] = {
                        "nifi": settled(
                            partial(
                                measure_nifi, client, nifi, kind, nifi_root / kind, args.warmup, args.window, scheduling
                            )
                        ),
                        "custody": settled(partial(measure_custody, custody_root, kind, counts[kind], args, run_flow)),
                        "custody_steady": settled(
                            partial(
                                measure_custody_steady,
                                custody_root,
                                kind,
                                args.warmup,
                                args.window,
                                args,
                                flow_definition,
                                flow_document,
                            )
                        ),
                    }
                entry["loadavg_1m"] = round(os.getloadavg()[0], 2)
                # The whole round, Custody's turns included: NiFi's idle JVM costs too.
                jvm_cpu_end = nifi.cpu_seconds()
                entry["nifi_jvm_cpu_s"] = (
                    round(jvm_cpu_end - jvm_cpu, 2) if jvm_cpu is not None and jvm_cpu_end is not None else None
                )
                rounds.append(entry)
    finally:
        if not args.dir:
            shutil.rmtree(root, ignore_errors=True)
    return {
        **summarize(rounds),
        "rounds": rounds,
        "nifi_version": version,
        "nifi_expected_version": NIFI_VERSION,
        "java": str(java),
        "java_major": major,
        "nifi_heap": "-Xms1g -Xmx1g",
        "nifi_scheduling": "default" if args.nifi_default_scheduling else "25 ms run duration",
        "warmup_s": args.warmup,
        "window_s": args.window,
        "custody_counts": counts,
        "threads": args.threads,
        "workers": args.workers,
        "cpu_count": os.cpu_count(),
        "loadavg_before": [round(value, 2) for value in load_before],
        "loadavg_after": [round(value, 2) for value in os.getloadavg()],
    }
