"""Adopting a big backlog: a node dies with a million FlowFiles queued (most of them swapped) and a survivor resumes them.

Two `custody node` processes on the embedded ZooKeeper and HDFS run
GenerateFlowFile -> PutFile (100-byte content, the queue swapping past 20,000
FlowFiles in files of 10,000, as NiFi's defaults do). The victim's PutFile is stopped
through its admin API while it makes the backlog; the adopter joins, the victim's
PutFile is started again (the stop is kept in ZooKeeper with the shard, and an adopter
keeps it) and the victim is killed with SIGKILL at once, and the leader hands its
shard to the adopter.

Figures (seconds, from the cluster's own records, as `custody drill` reads them):

* `detection_s`: the kill to the failover plan (the ZooKeeper session timeout);
* `takeover_s`: the plan to the adopter owning the shard (fencing, lease recovery);
* `resume_s`: owning it to the first FlowFile delivered from it (recovering the WAL
  and the swap files' summaries, starting the flow);
* `adoption_to_first_output_s` = takeover + resume: the goal figure (under 5 s);
* `death_to_first_output_s`: the kill to that first delivery;
* `drain_flowfiles_per_sec`: the adopter's delivery rate of the adopted backlog.

No anchor runs beside it: the goal is an absolute time. `--flowfiles` sets the backlog
(default 1,000,000; `--quick` 100,000).
"""  # noqa: E501 - the first line is the benchmark's one-line summary (`custody bench`)

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import time
import urllib.request
from pathlib import Path

from benchmarks.cluster import files_in

FLOW = """\
name: bench-adoption
parameters:
  count: 1000
  put_batch: 1000
processors:
  - id: generate
    type: GenerateFlowFile
    properties: {batch_size: 10000, file_size: 100, max_count: "#{count}"}
  - id: put
    type: PutFile
    properties: {directory: "#{out}", sync: false, batch_size: "#{put_batch}"}
    auto_terminate: [success]
connections:
  - {source: generate, destination: put, swap_threshold: 20000, swap_batch: 10000,
     back_pressure: {object_count: 100000000}}
  - {source: put, relationships: [failure], destination: put}
"""

BACKLOG_DEADLINE_S = 1800.0
RESUME_DEADLINE_S = 300.0


def add_arguments(parser) -> None:
    parser.add_argument("--flowfiles", type=int, help="the victim's backlog (default 1,000,000; --quick 100,000)")
    parser.add_argument("--threads", type=int, default=4, help="task threads of each node")
    parser.add_argument("--workdir", help="directory to run in (default: a fresh temporary directory, removed after)")


def _wait(condition, seconds: float, what: str, alive):
    deadline = time.monotonic() + seconds
    while True:
        value = condition()
        if value:
            return value
        problem = alive()
        if problem:
            raise RuntimeError(f"{problem} while waiting for {what}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {seconds:.0f} s waiting for {what}")
        time.sleep(0.05)


def _post(admin: str, path: str) -> dict:
    """POST to a node's admin API (`admin`: its URL, as its heartbeat names it), past any proxy."""
    request = urllib.request.Request(f"{admin.rstrip('/')}{path}", method="POST", data=b"")
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=60) as response:
        return json.load(response)


def run(args, services=None) -> dict:
    """`services`: ZooKeeper and HDFS someone else runs (`.zookeeper`, `.hdfs`: the
    tests' fixtures); by default the benchmark starts its own in its directory."""
    from cluster.drills.local import LocalServices, LocalTarget, new_flow_cluster
    from cluster.drills.runner import timings

    count = args.flowfiles or (100_000 if args.quick else 1_000_000)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="custody-bench-adoption-"))
    workdir.mkdir(parents=True, exist_ok=True)
    flow = str(workdir / "flow.yaml")
    Path(flow).write_text(FLOW)
    result: dict = {"backlog_flowfiles": count, "threads": args.threads, "cpu_count": os.cpu_count()}
    own = services is None
    if own:
        services = LocalServices(workdir / "services")
    cluster = None
    try:
        if own:
            services.start()
        run_name = time.strftime("bench-adoption-%Y%m%d-%H%M%S")
        cluster = new_flow_cluster(services.zookeeper, services.hdfs, workdir / run_name, run_name, "/custody-bench")
        target = LocalTarget.on_services(services.zookeeper, services.hdfs, cluster, names=("victim", "adopter"))

        def alive():
            dead = [name for name, node in cluster.nodes.items() if node.process.poll() is not None]
            return f"node(s) {', '.join(dead)} exited (logs in {workdir / run_name})" if dead else None

        victim = cluster.start("victim", flow=flow, count=count, put_batch=1000, threads=args.threads)
        shard = victim.wait("joined", timeout=120)["incarnation"]
        admin = _wait(
            lambda: getattr(cluster.heartbeats().get(shard), "admin", ""), 60, "the victim's admin API", alive
        )
        stopped = _post(admin, f"/api/v1/processors/{shard}/put/stop?wait_s=30")
        result["delivered_before_the_stop"] = files_in(cluster.sink)

        # The backlog: everything made is either delivered (before the stop) or queued.
        began = time.monotonic()

        def backlog_made():
            beat = cluster.heartbeats().get(shard)
            return beat is not None and beat.queued_count + files_in(cluster.sink) >= count

        _wait(backlog_made, BACKLOG_DEADLINE_S, f"the victim to queue {count:,} FlowFiles", alive)
        result["backlog_made_s"] = round(time.monotonic() - began, 1)
        beat = cluster.heartbeats()[shard]
        result["queued_at_kill"] = beat.queued_count

        cluster.start("adopter", flow=flow, count=1, put_batch=1000, threads=args.threads).wait("joined", timeout=120)
        delivered_before = result["delivered_before_the_stop"]
        _wait(lambda: files_in(cluster.sink) >= delivered_before + 1, 120, "the adopter's own FlowFile", alive)

        # The stop is the victim's shard's, kept in ZooKeeper: its adopter would keep
        # PutFile stopped too. Started again just before the kill (a task of the victim's
        # may deliver a batch first), so that the adopter runs it as soon as it owns the shard.
        result["victim_put_state_at_kill"] = _post(admin, f"/api/v1/processors/{shard}/put/start").get("state")
        died_at = time.time()
        victim.signal(signal.SIGKILL)
        victim.process.wait()
        _wait(
            lambda: target.events("adopter", "first-output", shard=shard),
            RESUME_DEADLINE_S,
            f"the first delivery from the adopted shard {shard}",
            lambda: None,
        )
        figures = timings(target, shard, died_at)
        recovered = [e for e in target.events("adopter", "recovered", shard=shard) if not e.get("home")]
        if recovered:
            result["adopter_recovered"] = {
                key: recovered[-1].get(key)
                for key in ("flowfiles", "swap_files", "swapped_flowfiles", "provenance_replayed")
            }
        for name in ("detection", "takeover", "resume", "death_to_resume"):
            if name in figures:
                result[f"{name}_s" if name != "death_to_resume" else "death_to_first_output_s"] = round(
                    figures[name], 3
                )
        if "takeover" in figures and "resume" in figures:
            result["adoption_to_first_output_s"] = round(figures["takeover"] + figures["resume"], 3)

        total = count + 1
        first_at = time.monotonic()
        first_seen = files_in(cluster.sink)
        _wait(
            lambda: files_in(cluster.sink) >= total,
            BACKLOG_DEADLINE_S,
            f"all {total:,} FlowFiles delivered",
            lambda: None,
        )
        drained = time.monotonic() - first_at
        result["drain_flowfiles_per_sec"] = round((total - first_seen) / drained, 1) if drained > 0 else None
        result["victim_put_state_at_stop"] = stopped.get("state")
        return result
    finally:
        if cluster is not None:
            cluster.close()
        if own:
            services.stop()
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
