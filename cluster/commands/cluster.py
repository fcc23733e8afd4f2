"""`custody cluster status --zk HOSTS[/chroot] --cluster NAME [--json]`: members and
their load, the leader, every shard (owner, epoch, state), the failover plans and
the decommissioned nodes, read from ZooKeeper without changing anything.

`custody cluster secure --zk HOSTS --cluster NAME --credentials-file FILE`: give the
cluster's znodes the ACL of FILE's identity alone (`cluster.zk.acl`), once, when a
cluster that ran without credentials gets them.

`custody cluster credentials FILE [--user NAME]`: make a new credentials file (mode
0600) for NODE.toml's `[zookeeper] credentials_file`, which every node of a cluster
shares."""

from __future__ import annotations

import json
import sys
import time


def register(subparsers) -> None:
    parser = subparsers.add_parser("cluster", help="look at a custody cluster through ZooKeeper")
    actions = parser.add_subparsers(dest="cluster_action", metavar="ACTION")
    status = actions.add_parser("status", help="members, leader, shards and plans")
    status.add_argument("--zk", required=True, help="ZooKeeper connection string, optionally with a /chroot")
    status.add_argument("--cluster", required=True, help="the cluster name (znodes under /custody/NAME)")
    status.add_argument("--json", action="store_true", help="print JSON")
    status.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for ZooKeeper")
    status.add_argument("--credentials-file", help="the cluster's ZooKeeper credentials (`user:password`, mode 0600)")
    status.set_defaults(func=run_status)
    secure = actions.add_parser(
        "secure",
        help="give the cluster's root and every znode under it the ACL of the "
        "credentials' identity alone (once, when credentials are introduced)",
    )
    secure.add_argument("--zk", required=True, help="ZooKeeper connection string, optionally with a /chroot")
    secure.add_argument("--cluster", required=True, help="the cluster name (znodes under /custody/NAME)")
    secure.add_argument(
        "--credentials-file", required=True, help="the identity that will own the cluster (`user:password`, mode 0600)"
    )
    secure.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for ZooKeeper")
    secure.set_defaults(func=run_secure)
    credentials = actions.add_parser(
        "credentials",
        help="make a new ZooKeeper credentials file (user:password, mode 0600) for [zookeeper] credentials_file",
    )
    credentials.add_argument("file", help="the file to create (refused if it exists)")
    credentials.add_argument("--user", default="custody", help="the digest identity's user name (default custody)")
    credentials.set_defaults(func=run_credentials)
    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])


def run_status(args) -> int:
    from ..clients import ClientFactory, ServiceUnreachable, ZooKeeperSettings, read_credentials_file, stop_quietly
    from ..core.layout import ClusterLayout
    from ..errors import ZnodeAccessDenied, ZooKeeperAccessRefused
    from ..zk.acl import OPEN, OPEN_EXPLAINED
    from ..zk.store import ClusterStore

    try:
        credentials = read_credentials_file(args.credentials_file) if args.credentials_file else None
        clients = ClientFactory(
            ZooKeeperSettings(
                args.zk, session_timeout=args.timeout, connect_timeout=args.timeout, credentials=credentials
            )
        )
        client = clients.start_zookeeper(read_only=True)
    except (ServiceUnreachable, ZooKeeperAccessRefused) as error:
        print(f"custody cluster status: {error}", file=sys.stderr)
        return 2
    try:
        status = ClusterStore(client, ClusterLayout(args.cluster)).status()
    except ZnodeAccessDenied:
        print(
            f"custody cluster status: ZooKeeper refuses access to cluster {args.cluster}: it is protected by "
            "credentials; give them with --credentials-file",
            file=sys.stderr,
        )
        return 2
    finally:
        stop_quietly(client)
    body = status.to_dict()
    if args.json:
        print(json.dumps(body, indent=2, sort_keys=True))
        return 0
    print(
        f"cluster {status.cluster}: {len(status.members)} members, leader {status.leader or '(none)'}, "
        f"ZooKeeper ACL {status.zookeeper_acl or '(no cluster root)'}"
    )
    if status.zookeeper_acl == OPEN:
        print(f"  warning: {OPEN_EXPLAINED}")
    print("members:")
    for name, m in body["members"].items():
        flag = " *" if name == status.leader else ""
        print(
            f"  {name:<20} queued {m['queued']:>8} ({m['queued_bytes']} B)  threads {m['active_threads']:>3}  "
            f"cpu {m['cpu']:.2f}  disk {m['free_disk'] >> 30} GiB  weight {m['capacity_weight']}  "
            f"shards {','.join(m['owned_shards']) or '-'}{flag}"
        )
    print("shards:")
    for name, s in body["shards"].items():
        extra = f"  children {','.join(s['children'])}" if s["children"] else ""
        extra += f"  slice of {s['source']['parent']}" if s["source"] else ""
        print(
            f"  {name:<24} owner {s['owner'] or '-':<20} epoch {s['epoch']:>5}  {s['state']:<9} "
            f"flow {s['flow'] or '-'}{extra}"
        )
        if s["state"] == "held" and s["history"]:
            # Why its adopter could not open it, and what the operator can do.
            print(f"    {s['history'][-1]['reason']}")
    print("plans:")
    for name, p in body["plans"].items():
        pending = f" pending {','.join(p['pending'])}" if p["pending"] else ""
        moves = "; ".join(f"{m['shard']}@{m['from_epoch']}->{','.join(m['targets'])}" for m in p["moves"])
        print(f"  {name:<20} {p['status']:<5} {p['policy']:<6} {moves}{pending}")
    if not body["plans"]:
        print("  (none)")
    if body["decommissioned"]:
        # Nodes that may not join until `custody node connect NAME`, and what was done for them.
        print("decommissioned:")
        for name, d in body["decommissioned"].items():
            asked = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(d["requested_at"]))
            print(f"  {name:<20} {d['state']:<15} since {asked}  {d['requested_by']}")
            for note in d["notes"]:
                print(f"    {note}")
    return 0


def run_secure(args) -> int:
    from ..clients import (
        ClientFactory,
        ServiceUnreachable,
        ZooKeeperSettings,
        identity_acl,
        read_credentials_file,
        stop_quietly,
    )
    from ..core.layout import ClusterLayout
    from ..errors import ZnodeAccessDenied, ZnodeMissing, ZooKeeperAccessRefused
    from ..zk.acl import secure_tree

    layout = ClusterLayout(args.cluster)
    try:
        credentials = read_credentials_file(args.credentials_file)
        client = ClientFactory(
            ZooKeeperSettings(
                args.zk, session_timeout=args.timeout, connect_timeout=args.timeout, credentials=credentials
            )
        ).start_zookeeper()
    except (ServiceUnreachable, ZooKeeperAccessRefused) as error:
        print(f"custody cluster secure: {error}", file=sys.stderr)
        return 2
    try:
        count = secure_tree(client, layout.root, identity_acl(credentials))
    except ZnodeAccessDenied:
        print(
            f"custody cluster secure: ZooKeeper refuses to change {layout.root}: another identity owns it",
            file=sys.stderr,
        )
        return 2
    except ZnodeMissing:
        count = 0
    finally:
        stop_quietly(client)
    if count == 0:
        print(
            f"custody cluster secure: {layout.root} does not exist; a node started with the credentials creates it "
            "secured",
            file=sys.stderr,
        )
        return 2
    print(f"secured {count} znodes under {layout.root}: only the credentials' identity can read or change them")
    return 0


def run_credentials(args) -> int:
    from ..clients import make_credentials_file
    from ..errors import ZooKeeperAccessRefused

    try:
        make_credentials_file(args.file, args.user)
    except ZooKeeperAccessRefused as error:
        print(f"custody cluster credentials: {error}", file=sys.stderr)
        return 2
    print(
        f"made ZooKeeper credentials for user {args.user} in {args.file} (mode 0600): set [zookeeper] "
        f"credentials_file to it on every node of the cluster"
    )
    return 0
