"""A clustered node running the ledger workload (`ledger_runtime`), one incarnation
after another: the process the cluster's protocol tests start, kill, freeze and
thaw (`custody node` runs the flow, and the drills use it). It is also a quick way to
see the cluster core work end to end:

    python -m cluster.drills.ledger_node --zk HOSTS/chroot --cluster c1 --node n1 \\
        --hdfs hdfs://127.0.0.1:8020 --hdfs-root /custody --sink /tmp/sink

It prints one JSON object per line on stdout for each event (joined, adopted,
rejected write, dead, ...), so a test can wait on conditions instead of sleeping.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading

from repositories.flowfile import WalHooks

from ..clients import DEFAULT_SESSION_TIMEOUT, ClientFactory, HdfsSettings, ZooKeeperSettings
from ..core.layout import DEFAULT_HDFS_ROOT
from ..failover.adoption import WalOptions
from ..failover.member import ClusterMember, MemberConfig
from ..node.events import JsonEvents, NodeEvent
from ..node.lifecycle import run_incarnations
from .ledger_runtime import LedgerRuntime

emit = JsonEvents()


class FreezeBeforeSync(WalHooks):
    """WAL fault seam: SIGSTOP this very process inside the `after`-th sync, after
    the bytes were handed to HDFS and before hsync, so it thaws as a zombie whose
    next hsync must be rejected."""

    def __init__(self, after: int):
        super().__init__()
        self.after, self.count = after, 0

    def before_sync(self, path: str) -> None:
        self.count += 1
        if self.count == self.after:
            emit(NodeEvent.FREEZING, path=path)
            os.kill(os.getpid(), signal.SIGSTOP)
            emit(NodeEvent.THAWED, path=path)


def parse(argv=None):
    parser = argparse.ArgumentParser(prog="cluster.drills.ledger_node")
    parser.add_argument("--zk", required=True)
    parser.add_argument("--cluster", required=True)
    parser.add_argument("--node", required=True)
    parser.add_argument("--hdfs", required=True, help="hdfs://host:port")
    parser.add_argument("--hdfs-root", default=DEFAULT_HDFS_ROOT)
    parser.add_argument(
        "--hdfs-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="hdfs-native client setting (repeatable), e.g. dfs.client.socket-timeout=5000",
    )
    parser.add_argument("--sink", required=True)
    parser.add_argument("--session-timeout", type=float, default=DEFAULT_SESSION_TIMEOUT)
    parser.add_argument("--weight", type=float, default=1.0)
    parser.add_argument("--policy", default="whole")
    parser.add_argument(
        "--admit-limit",
        type=int,
        default=200,
        help="records each incarnation admits (-1: no limit); stdin 'admit N' allows N more",
    )
    parser.add_argument("--deliver-interval", type=float, default=0.01, help="pause after each delivered record (s)")
    parser.add_argument("--no-lead", action="store_true", help="never campaign for leadership")
    parser.add_argument("--once", action="store_true", help="exit when the incarnation dies instead of rejoining")
    parser.add_argument("--freeze-in-sync", type=int, default=0, help="SIGSTOP self inside the Nth WAL sync")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse(argv)
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format=f"%(asctime)s %(levelname)s [{args.node}] %(name)s: %(message)s"
    )
    clients = ClientFactory(
        ZooKeeperSettings(args.zk, args.session_timeout),
        HdfsSettings(args.hdfs, dict(item.split("=", 1) for item in args.hdfs_config)),
    )
    storage = clients.hdfs_storage()
    hooks = FreezeBeforeSync(args.freeze_in_sync) if args.freeze_in_sync else None
    current: dict = {}
    threading.Thread(target=_commands, args=(current,), daemon=True).start()

    def make_member():
        config = MemberConfig(
            zk_hosts=args.zk,
            cluster=args.cluster,
            node=args.node,
            session_timeout=args.session_timeout,
            hdfs_root=args.hdfs_root,
            capacity_weight=args.weight,
            policy=args.policy,
            lead=not args.no_lead,
            heartbeat_interval=args.session_timeout / 4,
            wal=WalOptions(partitions=1, checkpoint_interval=None, hooks=hooks),
        )
        holder: dict = {}

        def factory(handle):
            return LedgerRuntime(
                handle,
                args.sink,
                incarnation=holder["member"].incarnation.id,
                admit_limit=args.admit_limit,
                deliver_interval=args.deliver_interval,
                events=emit,
            )

        member = holder["member"] = current["member"] = ClusterMember(config, storage, factory, clients=clients)
        return member

    return run_incarnations(make_member, emit, once=args.once)


def _commands(current: dict) -> None:
    """stdin commands: "admit N" lets the current incarnation's home shard admit N more."""
    for line in sys.stdin:
        words = line.split()
        member = current.get("member")
        if len(words) == 2 and words[0] == "admit" and member is not None and member.incarnation is not None:
            runtime = member.runtimes.get(member.incarnation.id)
            if runtime is not None:
                runtime.allow(int(words[1]))
                emit(NodeEvent.ALLOWED, incarnation=member.incarnation.id, count=int(words[1]))


if __name__ == "__main__":
    sys.exit(main())
