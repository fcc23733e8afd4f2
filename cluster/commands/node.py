"""`custody node --config NODE.toml`: a clustered node until stopped.

The node joins the cluster through ZooKeeper, runs the flow on its own shard (WAL and
swap files on HDFS, content on local disk and HDFS) and takes over the shards of
nodes that die. Each run is a new incarnation. SIGTERM or SIGINT leaves the cluster
on purpose: its shards are handed to the others at once. `--events` prints one JSON
object per line for each step (joined, adopted, first-output, dead, ...).
"""

from __future__ import annotations

import logging
import signal
import sys
import threading


def register(subparsers) -> None:
    parser = subparsers.add_parser("node", help="run a clustered node (ZooKeeper + HDFS) until stopped")
    parser.add_argument("--config", required=True, help="the node's NODE.toml (see cluster.node_config)")
    parser.add_argument("--events", action="store_true", help="print each step as a JSON line on stdout")
    parser.add_argument("--once", action="store_true", help="exit when the incarnation ends instead of rejoining")
    parser.set_defaults(func=run)


def run(args) -> int:
    from flow.errors import FlowError

    from ..node import ClusteredNode
    from ..node_config import NodeConfigError, load_node_config
    from ..node_loop import JsonEvents, log_events

    log = logging.getLogger("custody.node")
    try:
        config = load_node_config(args.config)
        node = ClusteredNode(config, events=JsonEvents() if args.events else log_events)
    except (NodeConfigError, FlowError) as error:
        print(f"custody node: {error}", file=sys.stderr)
        return 2
    stop = threading.Event()

    def on_signal(number, _frame) -> None:
        log.info("received %s: leaving the cluster", signal.Signals(number).name)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    log.info("node %s joining cluster %s (ZooKeeper %s, HDFS %s%s)", config.name, config.cluster, config.zk_hosts,
             config.hdfs_url, config.hdfs_root)
    return node.run(stop, once=args.once)
