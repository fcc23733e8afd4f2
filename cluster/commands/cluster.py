"""`custody cluster status --zk HOSTS[/chroot] --cluster NAME [--json]`: members and
their load, the leader, every shard (owner, epoch, state) and the failover plans,
read from ZooKeeper without changing anything."""

from __future__ import annotations

import json
import sys


def register(subparsers) -> None:
    parser = subparsers.add_parser("cluster", help="look at a custody cluster through ZooKeeper")
    actions = parser.add_subparsers(dest="cluster_action", metavar="ACTION")
    status = actions.add_parser("status", help="members, leader, shards and plans")
    status.add_argument("--zk", required=True, help="ZooKeeper connection string, optionally with a /chroot")
    status.add_argument("--cluster", required=True, help="the cluster name (znodes under /custody/NAME)")
    status.add_argument("--json", action="store_true", help="print JSON")
    status.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for ZooKeeper")
    status.set_defaults(func=run_status)
    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])


def run_status(args) -> int:
    from ..clients import ClientFactory, ServiceUnreachable, ZooKeeperSettings, stop_quietly
    from ..core.layout import ClusterLayout
    from ..zk.store import ClusterStore

    clients = ClientFactory(ZooKeeperSettings(args.zk, session_timeout=args.timeout, connect_timeout=args.timeout))
    try:
        client = clients.start_zookeeper(read_only=True)
    except ServiceUnreachable as error:
        print(f"custody cluster status: {error}", file=sys.stderr)
        return 2
    try:
        status = ClusterStore(client, ClusterLayout(args.cluster)).status()
    finally:
        stop_quietly(client)
    body = status.to_dict()
    if args.json:
        print(json.dumps(body, indent=2, sort_keys=True))
        return 0
    print(f"cluster {status.cluster}: {len(status.members)} members, leader {status.leader or '(none)'}")
    print("members:")
    for name, m in body["members"].items():
        flag = " *" if name == status.leader else ""
        print(f"  {name:<20} queued {m['queued']:>8} ({m['queued_bytes']} B)  threads {m['active_threads']:>3}  "
              f"cpu {m['cpu']:.2f}  disk {m['free_disk'] >> 30} GiB  weight {m['capacity_weight']}  "
              f"shards {','.join(m['owned_shards']) or '-'}{flag}")
    print("shards:")
    for name, s in body["shards"].items():
        extra = f"  children {','.join(s['children'])}" if s["children"] else ""
        extra += f"  slice of {s['source']['parent']}" if s["source"] else ""
        print(f"  {name:<24} owner {s['owner'] or '-':<20} epoch {s['epoch']:>5}  {s['state']:<9} "
              f"flow {s['flow'] or '-'}{extra}")
    print("plans:")
    for name, p in body["plans"].items():
        pending = f" pending {','.join(p['pending'])}" if p["pending"] else ""
        moves = "; ".join(f"{m['shard']}@{m['from_epoch']}->{','.join(m['targets'])}" for m in p["moves"])
        print(f"  {name:<20} {p['status']:<5} {p['policy']:<6} {moves}{pending}")
    if not body["plans"]:
        print("  (none)")
    return 0
