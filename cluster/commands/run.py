"""`custody run --flow FLOW.yaml --data-dir DIR`: a standalone node until stopped.

Local repositories only (no ZooKeeper, no HDFS). SIGTERM or SIGINT stops it cleanly;
after any stop, even kill -9, the next run recovers everything from DIR. With
`--workers N` above 1 the command is the supervisor of N worker processes, each a node
on DIR/workers/I (`cluster.node.workers`); each worker is this command again, with
`--worker I/N`. With `--admin HOST:PORT` worker 0 serves the admin API there and
answers for the whole node, each other worker serves its own on a loopback port
(`cluster.admin.worker_siblings`).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

from . import add_python_options, python_registry, stop_on_signals


def register(subparsers) -> None:
    parser = subparsers.add_parser("run", help="run a standalone node with a flow definition until stopped")
    parser.add_argument("--flow", required=True, help="flow definition (YAML or JSON)")
    parser.add_argument("--data-dir", required=True, help="directory of the node's repositories")
    parser.add_argument("--threads", type=int, default=4, help="task threads (default 4)")
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="worker processes, each an engine over a shard of its own under DIR/workers/ (default 1: "
        "one process); a data directory keeps the count it first ran with",
    )
    # A worker of a supervisor (`cluster.node.workers`): INDEX/COUNT, set by the supervisor only.
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--status-interval", type=float, default=10.0, help="seconds between status lines (0: none)")
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="flow parameter (#{NAME} in the flow); repeatable",
    )
    parser.add_argument("--name", default="standalone", help="the node's name in its admin API and logs")
    parser.add_argument(
        "--admin",
        metavar="HOST:PORT",
        help="serve the admin API there (e.g. 127.0.0.1:8080; a non-loopback HOST needs --admin-tokens)",
    )
    parser.add_argument(
        "--admin-tokens",
        metavar="FILE",
        default="",
        help="the admin API's token file (custody admin token --file FILE ...)",
    )
    parser.add_argument(
        "--admin-allowed-host",
        metavar="NAME",
        action="append",
        default=[],
        help="a name the admin API answers to besides its address (a request whose Host names "
        "another is refused); repeatable",
    )
    parser.add_argument(
        "--accept-wal-damage",
        action="store_true",
        help="start even if the FlowFile WAL is damaged in a way no crash explains, losing the "
        "FlowFiles the damage lost (refused by default; `custody wal inspect` shows what)",
    )
    parser.add_argument(
        "--spark-master",
        default="local[*]",
        help="the Spark master of the flow's Spark processors (default: embedded local[*]; "
        "spark://HOST:7077 for a standalone cluster)",
    )
    parser.add_argument(
        "--spark-conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting for the node's Spark session; repeatable",
    )
    add_python_options(parser)
    parser.set_defaults(func=run)


MIN_STATUS_INTERVAL_S, MAX_STATUS_INTERVAL_S = 1.0, 86400.0
MAX_WORKERS = 64


def argument_problem(args) -> str | None:
    """What is wrong with the numbers given on the command line, in one line; None when
    nothing is. Checked before anything starts: a thread count the executor refuses,
    or a status interval that prints in a busy loop (negative, NaN) or overflows the
    wait (inf), must not get as far as a started node."""
    from ..node.config_schema import MAX_THREADS

    if not 1 <= args.workers <= MAX_WORKERS:
        return f"--workers must be from 1 to {MAX_WORKERS} (the node's worker processes), not {args.workers}"
    if not 1 <= args.threads <= MAX_THREADS:
        return f"--threads must be from 1 to {MAX_THREADS} (the node's task threads), not {args.threads}"
    interval = args.status_interval
    if not (interval == 0 or MIN_STATUS_INTERVAL_S <= interval <= MAX_STATUS_INTERVAL_S):  # NaN is neither
        return (
            f"--status-interval must be 0 (no status lines) or from {MIN_STATUS_INTERVAL_S:g} to "
            f"{MAX_STATUS_INTERVAL_S:g} seconds, not {interval:g}"
        )
    return None


def run(args) -> int:
    from flow.errors import FlowError
    from flow.loading import load_flow
    from flow.workers import SOLE_WORKER

    from ..errors import ClusterError
    from ..node.standalone import NodeError, NodeSettings, StandaloneNode
    from ..node.workers import worker_directory

    log = logging.getLogger("custody.run")
    import os

    problem = argument_problem(args)
    if problem is not None:
        print(f"custody run: {problem}", file=sys.stderr)
        return 2

    data_dir = os.path.abspath(args.data_dir)
    parameters = {"data_dir": data_dir}
    for item in args.param:
        name, sep, value = item.partition("=")
        if not sep:
            print(f"custody run: --param needs NAME=VALUE, got {item!r}", file=sys.stderr)
            return 2
        parameters[name] = value
    spark_conf = {}
    for item in args.spark_conf:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            print(f"custody run: --spark-conf needs KEY=VALUE, got {item!r}", file=sys.stderr)
            return 2
        spark_conf[key.strip()] = value
    try:
        registry = python_registry(args, data_dir)
        definition = load_flow(args.flow, parameters, registry=registry)
    except FlowError as error:
        print(f"custody run: invalid flow: {error}", file=sys.stderr)
        return 2
    if args.workers > 1:
        return _supervise(args, data_dir, log)
    node_dir, name, worker = data_dir, args.name, SOLE_WORKER
    if args.worker is not None:
        worker = _worker_of(args.worker)
        node_dir, name = worker_directory(data_dir, worker.index), f"{args.name}-worker-{worker.index}"
    else:
        refused = _recorded_workers_problem(data_dir)
        if refused is not None:
            print(f"custody run: cannot start on {data_dir}: {refused}", file=sys.stderr)
            return 1
    node = StandaloneNode(
        definition,
        node_dir,
        NodeSettings(
            name=name,
            threads=args.threads,
            spark_master=args.spark_master,
            spark_conf=spark_conf,
            accept_wal_damage=args.accept_wal_damage,
            worker=worker,
        ),
    )
    stop = stop_on_signals(log, "stopping")
    admin = None
    try:
        node.start()
        if args.admin:
            from ..admin.serve import serve
            from ..admin.settings import parse_address

            siblings = None
            if not worker.sole:
                from ..admin.worker_siblings import WorkerSiblings

                siblings = WorkerSiblings(data_dir, worker.index, worker.count)
            admin = serve(
                parse_address(args.admin, token_file=args.admin_tokens, allowed_hosts=args.admin_allowed_host),
                node.control(),
                workers=siblings,
            )
            node.admin_url = admin.url
            if siblings is not None:
                from ..admin.worker_siblings import write_address

                write_address(node_dir, admin.url)  # worker 0 asks its siblings there
            print(f"custody: admin API on {admin.url}", flush=True)
    except (NodeError, FlowError, ClusterError) as error:
        node.stop()
        print(f"custody run: {error}", file=sys.stderr)
        return 1
    except OSError as error:
        print(f"custody run: cannot start the node on {node_dir}: {error}", file=sys.stderr)
        return 1
    print(
        f"custody: node running with flow {definition.name!r} on {node_dir} "
        f"(recovered: {json.dumps(node.recovery)}); Ctrl-C stops it",
        flush=True,
    )
    try:
        control = node.control()
        while not stop.wait(args.status_interval or None):
            queued = {q: s["count"] for shard in control.queues().values() for q, s in shard.items()}
            tasks = {p: s["tasks"] for shard in control.processors().values() for p, s in shard.items()}
            print(f"custody: queued {queued} tasks {tasks}", flush=True)
    finally:
        if admin is not None:
            if not worker.sole:
                from ..admin.worker_siblings import remove_address

                remove_address(node_dir)
            admin.stop()
        node.stop()
    print("custody: node stopped cleanly", flush=True)
    return 0


def _worker_of(text: str):
    """The `Worker` of `--worker INDEX/COUNT` (set by the supervisor)."""
    from flow.workers import Worker

    index, _, count = text.partition("/")
    return Worker(int(index), int(count))


def _recorded_workers_problem(data_dir: str) -> str | None:
    """Why a node without --workers cannot start on `data_dir`: it was run with more."""
    import os

    from ..node.worker_plan import COUNT_FILE, count_problem, read_count

    if not os.path.exists(os.path.join(data_dir, COUNT_FILE)):
        return None
    try:
        return count_problem(read_count(data_dir), False, 1)
    except ValueError as error:
        return str(error)


def _supervise(args, data_dir: str, log) -> int:
    """`--workers N` above 1: the supervisor of N worker processes (`cluster.node.workers`)."""
    from ..node.standalone import NodeError
    from ..node.workers import WorkerSupervisor, worker_command

    supervisor = WorkerSupervisor(data_dir, args.workers, lambda index: worker_command(args, index, args.workers))
    try:
        supervisor.prepare()
    except NodeError as error:
        print(f"custody run: {error}", file=sys.stderr)
        return 1
    except OSError as error:
        print(f"custody run: cannot start the node on {data_dir}: {error}", file=sys.stderr)
        return 1
    stop = stop_on_signals(log, "stopping the workers")
    print(f"custody: node of {args.workers} workers on {data_dir}; Ctrl-C stops it", flush=True)
    try:
        supervisor.run(stop)
    except NodeError as error:
        print(f"custody run: {error}", file=sys.stderr)
        return 1
    finally:
        supervisor.release()
    print("custody: node stopped cleanly", flush=True)
    return 0
