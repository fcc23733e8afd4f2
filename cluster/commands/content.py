"""`custody content fsck|inspect`: check (and repair) the content replicas of a node.

    custody content fsck --local disk1=/data1/content --local disk2=/data2/content \
        --hdfs hdfs://namenode:8020 --hdfs-base /custody/prod --node node-1 [--repair] [--json]

fsck checks every block of every resource against its checksum on each replica named
(one is enough to find damage; repair needs a second, verified copy) and lists each
bad range; `--repair` rewrites a damaged, short or missing copy from a replica whose
copy verifies, never from one that does not (`replication.content_fsck`). Resources
written before checksums are counted as unverified, which is not a failure.

Run it while the node is stopped (or on an adopted node's data): resources that a
running repository still appends to would look short.
"""

from __future__ import annotations

import json

BLOCKS_SHOWN = 10


def register(subparsers) -> None:
    parser = subparsers.add_parser("content", help="inspect and fsck the content repository replicas")
    commands = parser.add_subparsers(dest="content_command", metavar="ACTION")
    for name, func, help_text in (
        (
            "fsck",
            _fsck,
            "check every block against its checksum and compare replicas; --repair mends bad "
            "copies from a verified one",
        ),
        ("inspect", _inspect, "count resources and bytes in each replica"),
    ):
        sub = commands.add_parser(name, help=help_text)
        sub.add_argument(
            "--local",
            action="append",
            default=[],
            metavar="CONTAINER=DIR",
            help="a local container (repeatable); the first replica",
        )
        sub.add_argument(
            "--mirror",
            action="append",
            default=[],
            metavar="CONTAINER=DIR",
            help="a second local replica's container (repeatable)",
        )
        sub.add_argument("--hdfs", metavar="URL", help="hdfs://host:port of the HDFS replica")
        sub.add_argument("--hdfs-base", default="/custody", help="base directory of the cluster on HDFS")
        sub.add_argument("--node", help="node id whose HDFS content to check")
        sub.add_argument("--json", action="store_true", help="print JSON")
        if name == "fsck":
            sub.add_argument(
                "--repair",
                action="store_true",
                help="rewrite damaged, short or missing copies from a replica whose copy verifies",
            )
        sub.set_defaults(func=func)
    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])


def _containers(values: list[str]) -> dict[str, str]:
    out = {}
    for value in values:
        name, sep, directory = value.partition("=")
        if not sep or not name or not directory:
            raise SystemExit(f"expected CONTAINER=DIR, got {value!r}")
        out[name] = directory
    return out


def _replicas(args):
    from repositories.content import ArchivePolicy, ContentRepository, ContentRepositoryConfig
    from repositories.content.resource_io import LocalResourceIO

    config = ContentRepositoryConfig(archive=ArchivePolicy(max_usage=None))
    replicas = []
    local = _containers(args.local)
    if local:
        replicas.append(ContentRepository(local, LocalResourceIO(), config, name="local", prepare=False))
    mirror = _containers(args.mirror)
    if mirror:
        replicas.append(ContentRepository(mirror, LocalResourceIO(), config, name="mirror", prepare=False))
    if args.hdfs:
        if not args.node:
            raise SystemExit("--hdfs needs --node")
        from replication.hdfs_content import open_hdfs_content_reader

        from ..clients import ClientFactory, HdfsSettings

        names = list(local or mirror or {"default": ""})
        storage = ClientFactory(hdfs=HdfsSettings(args.hdfs)).hdfs_storage()
        replicas.append(open_hdfs_content_reader(storage, args.hdfs_base, args.node, names))
    if not replicas:
        raise SystemExit("name at least one replica (--local, --mirror, --hdfs)")
    return replicas


def _fsck(args) -> int:
    from replication.content_fsck import fsck_replicas

    replicas = _replicas(args)
    report = fsck_replicas(replicas, repair=args.repair)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(
            f"checked {report.checked} resources on {', '.join(report.replicas)}: {report.verified} verified, "
            f"{len(report.unverified)} unverified (written before checksums)"
        )
        for problem in report.problems:
            mark = "repaired" if problem.repaired else ("note" if problem.kind == "state" else "BAD")
            print(f"  [{mark}] {problem.kind:8} {problem.replica}: {problem.resource} ({problem.detail})")
            for block in problem.blocks[:BLOCKS_SHOWN]:
                print(f"             {block}")
            if len(problem.blocks) > BLOCKS_SHOWN:
                print(f"             ... and {len(problem.blocks) - BLOCKS_SHOWN} more (--json lists them all)")
        if report.ok:
            print("OK")
        elif not args.repair:
            print("BAD: run again with --repair to rewrite the bad copies from verified ones")
        else:
            print(
                "BAD: what is left has no verified copy to repair it from, or two verified copies disagree (see above)"
            )
    return 0 if report.ok else 1


def _inspect(args) -> int:
    summary = []
    for replica in _replicas(args):
        resources = replica.list_resources()
        summary.append(
            {
                "replica": replica.name,
                "containers": replica.containers,
                "resources": sum(1 for info in resources.values() if not info.archived),
                "bytes": sum(info.length for info in resources.values() if not info.archived),
                "archived_resources": sum(1 for info in resources.values() if info.archived),
                "archived_bytes": sum(info.length for info in resources.values() if info.archived),
                "unchecksummed_resources": sum(1 for info in resources.values() if not info.checksummed),
            }
        )
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        for entry in summary:
            print(
                f"{entry['replica']}: {entry['resources']} resources, {entry['bytes']:,} bytes; "
                f"archive {entry['archived_resources']} resources, {entry['archived_bytes']:,} bytes; "
                f"{entry['unchecksummed_resources']} without checksums (written before they existed)"
            )
    return 0
