"""`custody node --config NODE.toml`: a clustered node until stopped.

The node joins the cluster through ZooKeeper, runs the flow on its own shard (WAL and
swap files on HDFS, content on local disk and HDFS) and takes over the shards of
nodes that die. Each run is a new incarnation. SIGTERM or SIGINT leaves the cluster
on purpose: its shards are handed to the others at once. SIGUSR1 prints every
thread's stack to stderr, and a pause of the whole process (see
cluster.node.pause_monitor) is logged. `--events` prints one JSON
object per line for each step (joined, adopted, first-output, dead, ...).

`--name NAME` and `--directory DIR` override `name` and `directory` from NODE.toml, so
one file serves several nodes (docker-compose.yml's custody1..3 share one). DIR is
relative to the working directory. Without `--directory`, a file that sets no
`directory` gets the default for the new name: `<NAME>-data` beside the file.
`--admin-url URL` overrides `[node] admin`, the address of its admin API that the node
announces: a node listening on 0.0.0.0 inside a container is reached by its host name,
and a rolling flow deploy calls every node at the address it announced.

`custody node decommission NAME --config NODE.toml`: node NAME is gone for good (its
machine is gone, or it is retired). NODE.toml is any node's of the cluster, read for
its ZooKeeper and HDFS: NAME need not run, nor the node of the file. If NAME is up it
leaves (as an offload: its shards go to the others) and stops; the leader hands what
its sources took to a survivor or drops it with a warning, and deletes the directories
kept for it; a start under that name is refused until `custody node connect NAME
--config NODE.toml`. With `--url`, a running node's admin API is asked instead
(`POST /api/v1/cluster/nodes/NAME/decommission`, token from $CUSTODY_ADMIN_TOKEN).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import sys

from . import stop_on_signals


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "node",
        help="run a clustered node (ZooKeeper + HDFS) until stopped; "
        "offload or connect a running one; decommission one",
    )
    parser.add_argument(
        "action",
        nargs="?",
        choices=("run", "offload", "connect", "decommission"),
        default="run",
        help="run (the default): run the node; offload: ask the running node to hand every shard "
        "to the others and own nothing; connect: ask an offloaded node to join again, or, with "
        "NAME, let a decommissioned node join again; decommission NAME: node NAME is gone for "
        "good",
    )
    parser.add_argument(
        "target",
        nargs="?",
        metavar="NAME",
        help="decommission and connect: the node to decommission, or to let join again",
    )
    parser.add_argument(
        "--config",
        help="the node's NODE.toml (see cluster.node.config); for offload and connect, "
        "where its admin API listens; for decommission and connect NAME, any "
        "node's, for the cluster's ZooKeeper and HDFS",
    )
    parser.add_argument(
        "--url",
        help="offload/connect: the node's admin API, instead of --config's [admin]; "
        "decommission/connect NAME: any running node's admin API, instead of --config",
    )
    parser.add_argument(
        "--wait", type=float, default=120.0, help="offload: seconds to wait until the node owns nothing (default 120)"
    )
    parser.add_argument("--name", help="node name, instead of the file's `name`")
    parser.add_argument("--directory", help="local data directory, instead of the file's `directory`")
    parser.add_argument(
        "--admin-url",
        help="the URL other nodes and links use for this node's admin API, instead "
        "of the file's [node] admin (default: the address it listens on)",
    )
    parser.add_argument("--events", action="store_true", help="print each step as a JSON line on stdout")
    parser.add_argument("--once", action="store_true", help="exit when the incarnation ends instead of rejoining")
    parser.set_defaults(func=run)


def load_config(args):
    """NODE.toml from `args.config`, with `--name` and `--directory` (relative to the
    working directory) applied; the checks are the file's own."""
    from ..node.config import NodeConfigError, load_node_config

    if args.directory is not None and not args.directory.strip():
        raise NodeConfigError("--directory must not be empty")
    directory = os.path.abspath(args.directory) if args.directory is not None else None
    config = load_node_config(args.config, name=args.name, directory=directory)
    if getattr(args, "admin_url", None):
        config = dataclasses.replace(config, admin=args.admin_url.rstrip("/"))
    return config


def run(args) -> int:
    if args.action == "decommission" or (args.action == "connect" and args.target is not None):
        return decommission_or_connect(args)
    if args.target is not None:
        print(f"custody node {args.action}: takes no NAME (decommission and connect do)", file=sys.stderr)
        return 2
    if args.action != "run":
        return call_running_node(args)
    if not args.config:
        print("custody node: --config NODE.toml is required", file=sys.stderr)
        return 2
    from flow.errors import FlowError

    from ..errors import ClusterError
    from ..node.clustered import ClusteredNode
    from ..node.config import NodeConfigError
    from ..node.events import JsonEvents, log_events

    log = logging.getLogger("custody.node")
    # hdfs-native's own warnings (a DataNode it could not reach, a read it retried on
    # another replica) go to stderr beside the node's log; RUST_LOG overrides.
    os.environ.setdefault("RUST_LOG", "hdfs_native=warn")
    try:
        config = load_config(args)
        node = ClusteredNode(config, events=JsonEvents() if args.events else log_events)
        admin = start_admin(node)
    except (NodeConfigError, FlowError, ClusterError) as error:
        print(f"custody node: {error}", file=sys.stderr)
        return 2
    stop = stop_on_signals(log, "leaving the cluster")
    from ..node.pause_monitor import PauseMonitor
    from ..node.shutdown_deadline import watch_shutdown

    PauseMonitor().start()  # a line when the whole process stood still
    closed, _ = watch_shutdown(stop, config.shutdown_timeout, log)
    log.info(
        "node %s joining cluster %s (ZooKeeper %s, HDFS %s%s)",
        config.name,
        config.cluster,
        config.zk_hosts,
        config.hdfs_url,
        config.hdfs_root,
    )
    try:
        code = node.run(stop, once=args.once)
    finally:
        if admin is not None:
            admin.stop()
    closed.set()
    exit_past_stuck_threads(log, code)
    return code


MAX_WAIT_S = 86400.0  # offload --wait: a day


def call_running_node(args) -> int:
    """`custody node offload|connect`: the running node's admin API does it."""
    from ..admin.client import admin_url, node_action
    from ..errors import ClusterError

    try:
        if not 0 <= args.wait <= MAX_WAIT_S:  # NaN is neither: a socket timeout of NaN or inf raises
            raise ValueError(f"--wait must be from 0 to {MAX_WAIT_S:g} seconds, not {args.wait:g}")
        if args.url:
            base = args.url.rstrip("/")
        elif args.config:
            base = admin_url(load_config(args))
        else:
            raise ValueError("give --url http://HOST:PORT of the node's admin API, or --config NODE.toml")
    except (ValueError, ClusterError) as error:
        print(f"custody node {args.action}: {error}", file=sys.stderr)
        return 2
    return node_action(base, args.action, wait_s=args.wait, command="custody node")


def decommission_or_connect(args) -> int:
    """`custody node decommission NAME` and `custody node connect NAME`: through the
    cluster's ZooKeeper and HDFS (`--config`), or a running node's admin API (`--url`)."""
    from ..admin.client import node_admission
    from ..clients import ClientFactory, stop_quietly
    from ..core.layout import ClusterLayout
    from ..errors import ClusterError
    from ..node.control_errors import Conflict, NotFound, Unavailable
    from ..node.decommission import connect_node, decommission_node
    from ..zk.store import ClusterStore

    command = f"custody node {args.action}"
    if args.target is None:
        print(f"{command}: the node's NAME is required", file=sys.stderr)
        return 2
    if args.url:
        return node_admission(args.url.rstrip("/"), args.action, args.target, command=command)
    if not args.config:
        print(
            f"{command}: give --config NODE.toml (any node's of the cluster) or --url http://HOST:PORT of a "
            "running node's admin API",
            file=sys.stderr,
        )
        return 2
    try:
        config = load_config(args)
        clients = ClientFactory.from_node_config(config)
        client = clients.start_zookeeper(timeout=max(10.0, config.session_timeout))
    except ClusterError as error:
        print(f"{command}: {error}", file=sys.stderr)
        return 2
    storage = None
    try:
        storage = clients.hdfs_storage()
        store = ClusterStore(client, ClusterLayout(config.cluster, config.hdfs_root))
        if args.action == "decommission":
            answer = decommission_node(
                store, storage, args.target, requested_by=f"custody node decommission on {socket.gethostname()}"
            )
        else:
            answer = connect_node(store, storage, args.target)
    except (NotFound, Conflict, Unavailable) as error:
        print(f"{command}: {error}", file=sys.stderr)
        return 1
    finally:
        if storage is not None:
            storage.close()
        stop_quietly(client)
    print(f"{answer['node']}: {answer['state']} ({answer['detail']})")
    return 0


def start_admin(node):
    """The node's admin API (`[admin]` of NODE.toml), listening before the node joins,
    so that its heartbeat carries the real address. None when `[admin] enabled = false`."""
    config = node.config
    if not config.admin_enabled:
        return None
    from ..admin.serve import serve
    from ..admin.settings import from_node_config

    server = serve(from_node_config(config), node.control())
    if not config.admin:
        node.config = dataclasses.replace(config, admin=server.url)
    return server


def exit_past_stuck_threads(log, code: int, exit=None) -> None:
    """Every runtime is stopped and every WAL closed; a flow task still blocked in a
    storage call (a write to a DataNode that died) can commit nothing any more, but
    as a pool thread it would hold the interpreter's exit until the call times out.
    Exit without it, saying so."""
    import threading

    from ..node.shutdown_deadline import exit_now

    stuck = [
        t.name for t in threading.enumerate() if t is not threading.current_thread() and t.is_alive() and not t.daemon
    ]
    if stuck:
        log.warning("exiting with %d threads still blocked: %s", len(stuck), ", ".join(sorted(stuck))[:300])
        (exit or exit_now)(code)
