"""Clustered throughput: one and three `custody node` processes beside the standalone node, in one run.

Every node runs the same flow as `custody bench flow`'s small flow, GenerateFlowFile
-> UpdateAttribute -> RouteOnAttribute -> PutFile, 100-byte content, batches of
1,000, PutFile without fsync into one sink directory:

* `standalone_flowfiles_per_sec`: `custody run` on that flow, local repositories;
* `cluster_1_flowfiles_per_sec`: one `custody node` on the embedded ZooKeeper and
  HDFS, its WAL, swap files and content replicated to HDFS;
* `cluster_3_flowfiles_per_sec` (total) and `cluster_3_per_node_flowfiles_per_sec`:
  three such nodes, each making the same number of FlowFiles.

Each figure is the steady delivery rate at the sink, from the moment 10 % of the
FlowFiles were delivered to the moment 90 % were (start-up, joining the cluster and
the last stragglers are left out); `*_end_to_end_s` is the whole run from the first
FlowFile delivered. `ratio_cluster_1_to_standalone` is the goal figure (a clustered
node against the standalone one on the same machine, same run).

The services are this machine's embedded ones (`custody services`), started for the
run in its work directory and stopped after it: a ZooKeeper ensemble of three and an
HDFS with three DataNodes, all on the same cores as the nodes, and running (idle)
during the standalone run as well.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FLOW = """\
name: bench-cluster
parameters:
  count: 1000
  put_batch: 1000
processors:
  - id: generate
    type: GenerateFlowFile
    properties: {batch_size: 1000, file_size: 100, max_count: "#{count}"}
  - id: update
    type: UpdateAttribute
    properties: {stage: updated, size.class: small}
  - id: route
    type: RouteOnAttribute
    properties: {routing_strategy: route_to_matched_if_any_matches, ok: "${stage:equals('updated')}"}
  - id: put
    type: PutFile
    properties: {directory: "#{out}", sync: false, batch_size: "#{put_batch}"}
    auto_terminate: [success]
connections:
  - {source: generate, destination: update, swap_threshold: 20000, swap_batch: 10000}
  - {source: update, destination: route, swap_threshold: 20000, swap_batch: 10000}
  - {source: route, relationships: [matched, unmatched], destination: put, swap_threshold: 20000, swap_batch: 10000}
  - {source: put, relationships: [failure], destination: put}
"""

DEADLINE_S = 1800.0


def add_arguments(parser) -> None:
    parser.add_argument("--flowfiles", type=int, help="FlowFiles each node makes (default 20,000; --quick 5,000)")
    parser.add_argument("--threads", type=int, default=4, help="task threads of every node")
    parser.add_argument("--nodes", default="1,3", help="cluster sizes to run, comma-separated (default 1,3)")
    parser.add_argument("--workdir", help="directory to run in (default: a fresh temporary directory, removed after)")


def files_in(directory: str) -> int:
    try:
        with os.scandir(directory) as entries:
            return sum(1 for entry in entries if not entry.name.startswith("."))
    except FileNotFoundError:
        return 0


def delivery_rate(directory: str, total: int, alive) -> dict:
    """Watch `directory` until it holds `total` files: the steady rate between 10 % and
    90 % of them, and the seconds from the first file to the last. `alive()` is asked
    on the way; a run whose processes died raises."""
    low, high = max(1, total // 10), max(1, total * 9 // 10)
    marks: dict[str, float] = {}
    deadline = time.monotonic() + DEADLINE_S
    seen = 0
    while seen < total:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{directory}: {seen} of {total} FlowFiles delivered after {DEADLINE_S:.0f} s")
        problem = alive()
        if problem:
            raise RuntimeError(f"{problem}; {seen} of {total} FlowFiles were delivered")
        seen = files_in(directory)
        now = time.perf_counter()
        for name, mark in (("first", 1), ("low", low), ("high", high)):
            if seen >= mark and name not in marks:
                marks[name] = now
        time.sleep(0.1)
    marks["last"] = time.perf_counter()
    span = marks["high"] - marks["low"]
    return {
        "flowfiles_per_sec": round((high - low) / span, 1) if span > 0 else None,
        "end_to_end_s": round(marks["last"] - marks["first"], 3),
    }


def _standalone(workdir: Path, flow: str, count: int, threads: int) -> dict:
    out = workdir / "standalone-out"
    log_path = workdir / "standalone.log"
    argv = [
        sys.executable,
        "-m",
        "cluster.cli",
        "run",
        "--flow",
        flow,
        "--data-dir",
        str(workdir / "standalone"),
        "--threads",
        str(threads),
        "--status-interval",
        "0",
        "--param",
        f"count={count}",
        "--param",
        f"out={out}",
        "--param",
        "put_batch=1000",
    ]
    with open(log_path, "w") as log:
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        try:

            def alive():
                code = process.poll()
                return None if code is None else f"`custody run` exited with {code} (see {log_path})"

            return delivery_rate(str(out), count, alive)
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _clustered(services, workdir: Path, flow: str, nodes: int, count: int, threads: int) -> dict:
    from cluster.drills.local import new_flow_cluster

    run = time.strftime(f"bench-{nodes}-%Y%m%d-%H%M%S")
    directory = workdir / run
    cluster = new_flow_cluster(services.zookeeper, services.hdfs, directory, run, "/custody-bench")
    try:
        for index in range(1, nodes + 1):
            cluster.start(f"n{index}", flow=flow, count=count, put_batch=1000, threads=threads)

        def alive():
            dead = [name for name, node in cluster.nodes.items() if node.process.poll() is not None]
            return f"node(s) {', '.join(dead)} exited (logs in {directory})" if dead else None

        result = delivery_rate(cluster.sink, count * nodes, alive)
    finally:
        cluster.close()
    if result["flowfiles_per_sec"] is not None:
        result["per_node_flowfiles_per_sec"] = round(result["flowfiles_per_sec"] / nodes, 1)
    return result


def run(args) -> dict:
    from cluster.drills.local import LocalServices

    count = args.flowfiles or (5_000 if args.quick else 20_000)
    sizes = sorted({int(size) for size in args.nodes.split(",") if size.strip()})
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="custody-bench-cluster-"))
    workdir.mkdir(parents=True, exist_ok=True)
    flow = str(workdir / "flow.yaml")
    Path(flow).write_text(FLOW)
    result: dict = {"flowfiles_per_node": count, "threads": args.threads, "cpu_count": os.cpu_count()}
    services = LocalServices(workdir / "services")
    try:
        # The services run (idle) during the standalone run too: the same background.
        services.start()
        standalone = _standalone(workdir, flow, count, args.threads)
        result["standalone_flowfiles_per_sec"] = standalone["flowfiles_per_sec"]
        result["standalone_end_to_end_s"] = standalone["end_to_end_s"]
        for size in sizes:
            clustered = _clustered(services, workdir, flow, size, count, args.threads)
            result[f"cluster_{size}_flowfiles_per_sec"] = clustered["flowfiles_per_sec"]
            result[f"cluster_{size}_per_node_flowfiles_per_sec"] = clustered.get("per_node_flowfiles_per_sec")
            result[f"cluster_{size}_end_to_end_s"] = clustered["end_to_end_s"]
        one, alone = result.get("cluster_1_flowfiles_per_sec"), result["standalone_flowfiles_per_sec"]
        if one and alone:
            result["ratio_cluster_1_to_standalone"] = round(one / alone, 3)
        return result
    finally:
        services.stop()
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
