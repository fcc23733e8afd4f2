"""Admin API under load: a standalone node's FlowFiles/s with its admin API idle and with 200 requests/s on it.

Each run starts a fresh standalone node on `custody bench flow`'s small flow
(GenerateFlowFile -> UpdateAttribute -> RouteOnAttribute -> PutFile, 100-byte
content) with its admin API listening (a real uvicorn on 127.0.0.1, port 0, no
tokens), and times the flow from resume to the last FlowFile written
(`flowfiles_per_sec`). Runs "with load" also get `--rate` GET requests/s, round-robin
over `--endpoints` (default /metrics and the queue listing), from another process
(`benchmarks/_http_load.py`), loopback only, bounded by count and time.

`--pages N` makes the load what N open status pages ask instead: each page polls
`PAGE_POLL` (the page's round of requests, `cluster.admin.page`) every 2 s, so the
load is N rounds every 2 s over those paths; the goal is then under 3 %.

Runs alternate, without/with then with/without (so a drift of the machine does not
favour either side), `--rounds` times each, after a warm-up run; the medians are
compared: `slowdown_pct` = 100 * (1 - with / without). The node and its admin API run
in the benchmark's process, so its CPU time over a run is what the flow and the
serving cost: `cpu_overhead_pct` = 100 * (with / without - 1) of the median CPU
microseconds per FlowFile, which a machine shared with other work disturbs far less
than the wall clock. The goal is under 5 %; over
10 % is a failure (`verdict`). Per endpoint: the p50/p99 latency of its answers over
every loaded run, the requests answered, and the errors; `late_requests` counts those
the client sent more than 10 ms after they were due (the client, not the server, fell
behind).
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time

# The queue listing route (`/api/v1/queues/{shard}/{queue}/flowfiles`) is written on
# another branch; until it lands, the queue figures of every shard stand in for it.
DEFAULT_ENDPOINTS = "/metrics,/api/v1/queues/local/generate/success/update/flowfiles?limit=100"
GOAL_PCT, FAILURE_PCT = 5.0, 10.0
# What one open status page asks of a standalone node every POLL_S seconds (its poll()).
PAGE_POLL = (
    "/api/v1/node",
    "/api/v1/node/queues",
    "/api/v1/node/alarms",
    "/api/v1/node/flow/graph",
    "/api/v1/node/processors",
)
POLL_S = 2.0
PAGES_GOAL_PCT = 3.0


def add_arguments(parser) -> None:
    parser.add_argument("--flowfiles", type=int, help="FlowFiles per run (default 20,000; --quick 10,000)")
    parser.add_argument("--rounds", type=int, help="runs without and with load, each (default 3; --quick 2)")
    parser.add_argument("--rate", type=float, default=200.0, help="requests/s of the load, over all endpoints")
    parser.add_argument(
        "--endpoints",
        default=DEFAULT_ENDPOINTS,
        help=f"comma-separated paths the load GETs in turn (default {DEFAULT_ENDPOINTS})",
    )
    parser.add_argument(
        "--pages",
        type=int,
        default=0,
        help="the load is what this many open status pages poll (overrides --rate and --endpoints; goal 3 %%)",
    )
    parser.add_argument("--client-threads", type=int, default=4, help="connections of the load client")
    parser.add_argument(
        "--metrics-max-age",
        type=float,
        default=None,
        help="seconds a /metrics text is served again (default: the node's, 1 s; 0 renders each)",
    )
    parser.add_argument("--max-seconds", type=float, default=300.0, help="the longest a run (and its load) may take")
    parser.add_argument("--threads", type=int, default=4, help="flow task threads of the node")
    parser.add_argument("--dir", help="directory to run in (default: a fresh temporary directory)")


def _run(
    root: str, flowfiles: int, threads: int, load: dict | None, max_seconds: float, metrics_max_age: float
) -> dict:
    """One run of the flow on a fresh node with its admin API; with `load`, the load
    client runs for as long as the flow does."""
    import multiprocessing

    from cluster.admin.app import create_app
    from cluster.admin.metrics import NodeMetrics
    from cluster.admin.server import AdminServer
    from cluster.admin.settings import AdminSettings
    from cluster.node.standalone import NodeSettings, StandaloneNode

    from ._http_load import run_load
    from .flow import files_in, flow_definition

    out = os.path.join(root, "out")
    node = StandaloneNode(
        flow_definition(out, flowfiles, 100, 1000), os.path.join(root, "node"), NodeSettings(threads=threads)
    )
    node.start(paused=True)
    server = client = None
    answered = None
    try:
        control = node.control()
        metrics = NodeMetrics(control, max_age_s=metrics_max_age)
        server = AdminServer(AdminSettings(bind="127.0.0.1", port=0), create_app(control, metrics=metrics)).start()
        if load is not None:
            context = multiprocessing.get_context("spawn")
            ready, stop, results = context.Event(), context.Event(), context.Queue()
            client = context.Process(
                target=run_load,
                name="admin-load",
                daemon=True,
                args=(
                    server.url,
                    load["endpoints"],
                    load["rate"],
                    max_seconds,
                    load["client_threads"],
                    ready,
                    stop,
                    results,
                ),
            )
            client.start()
            if not ready.wait(60):
                raise RuntimeError("the load client did not start within 60 s")
        started, cpu_started = time.perf_counter(), time.process_time()
        node.resume()
        deadline = time.monotonic() + max_seconds
        while not (node.engine.is_idle() and files_in(out) >= flowfiles):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the flow did not finish within {max_seconds:g} s")
            time.sleep(0.02)
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        if client is not None:
            stop.set()
            answered = results.get(timeout=60)
    finally:
        if client is not None:
            client.join(30)
            if client.is_alive():
                client.kill()
        if server is not None:
            server.stop()
        node.stop()
    delivered = files_in(out)
    if delivered != flowfiles:
        raise RuntimeError(f"the flow delivered {delivered} of {flowfiles} FlowFiles")
    return {
        "seconds": elapsed,
        "flowfiles_per_sec": flowfiles / elapsed,
        "cpu_us_per_flowfile": 1e6 * cpu / flowfiles,
        "load": answered,
    }


def _percentile(values: list[float], fraction: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def _endpoint_figures(loads: list[dict], endpoints: list[str]) -> dict:
    figures = {}
    for endpoint in endpoints:
        latencies = [seconds for load in loads for seconds in load["latencies"][endpoint]]
        p50, p99 = _percentile(latencies, 0.50), _percentile(latencies, 0.99)
        figures[endpoint] = {
            "answered": len(latencies),
            "p50_ms": round(p50 * 1000, 2) if p50 is not None else None,
            "p99_ms": round(p99 * 1000, 2) if p99 is not None else None,
        }
    return figures


def run(args) -> dict:
    from cluster.admin.metrics import MAX_AGE_S

    max_age = MAX_AGE_S if args.metrics_max_age is None else args.metrics_max_age
    flowfiles = args.flowfiles or (10_000 if args.quick else 20_000)
    rounds = args.rounds or (2 if args.quick else 3)
    if args.pages > 0:
        endpoints, rate, goal = list(PAGE_POLL), args.pages * len(PAGE_POLL) / POLL_S, PAGES_GOAL_PCT
    else:
        endpoints = [path.strip() for path in args.endpoints.split(",") if path.strip()]
        rate, goal = args.rate, GOAL_PCT
    load = {"endpoints": endpoints, "rate": rate, "client_threads": args.client_threads}
    root = args.dir or tempfile.mkdtemp(prefix="custody-bench-admin-")
    os.makedirs(root, exist_ok=True)
    runs: dict[str, list[dict]] = {"without": [], "with": []}
    try:
        _run(os.path.join(root, "warm-up"), max(1000, flowfiles // 5), args.threads, load, args.max_seconds, max_age)
        for number in range(rounds):
            order = ("without", "with") if number % 2 == 0 else ("with", "without")
            for side in order:
                directory = os.path.join(root, f"{number}-{side}")
                runs[side].append(
                    _run(
                        directory, flowfiles, args.threads, load if side == "with" else None, args.max_seconds, max_age
                    )
                )
                shutil.rmtree(directory, ignore_errors=True)
    finally:
        if not args.dir:
            shutil.rmtree(root, ignore_errors=True)
    without = statistics.median(r["flowfiles_per_sec"] for r in runs["without"])
    loaded = statistics.median(r["flowfiles_per_sec"] for r in runs["with"])
    slowdown = 100.0 * (1.0 - loaded / without)
    cpu_without = statistics.median(r["cpu_us_per_flowfile"] for r in runs["without"])
    cpu_with = statistics.median(r["cpu_us_per_flowfile"] for r in runs["with"])
    loads = [r["load"] for r in runs["with"]]
    answered = sum(len(seconds) for load in loads for seconds in load["latencies"].values())
    load_seconds = sum(load["seconds"] for load in loads)
    by_endpoint = _endpoint_figures(loads, endpoints)
    result = {
        "flowfiles_per_sec_without": round(without, 1),
        "flowfiles_per_sec_with": round(loaded, 1),
        "slowdown_pct": round(slowdown, 2),
        "verdict": "ok" if slowdown < goal else "over goal" if slowdown <= FAILURE_PCT else "failure",
        "goal_pct": goal,
        "pages": args.pages,
        "cpu_us_per_flowfile_without": round(cpu_without, 1),
        "cpu_us_per_flowfile_with": round(cpu_with, 1),
        "cpu_overhead_pct": round(100.0 * (cpu_with / cpu_without - 1.0), 2),
        "runs_without": [round(r["flowfiles_per_sec"], 1) for r in runs["without"]],
        "runs_with": [round(r["flowfiles_per_sec"], 1) for r in runs["with"]],
        "flowfiles": flowfiles,
        "rounds": rounds,
        "rate_asked": rate,
        "rate_answered": round(answered / load_seconds, 1) if load_seconds else 0.0,
        "errors": sum(load["errors"] for load in loads),
        "late_requests": sum(load["late"] for load in loads),
        "endpoints": by_endpoint,
        "metrics_max_age_s": max_age,
        "threads": args.threads,
        "cpu_count": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }
    for endpoint, figures in by_endpoint.items():  # flat, for the table
        for key, number in figures.items():
            result[f"{endpoint} {key}"] = number
    return result
