"""`custody services install|up|status|down`: the real services on this machine.

`up` starts a 3-member ZooKeeper ensemble, HDFS (a NameNode and DataNodes), a Spark
standalone master and worker, a Kafka broker, and checks the Docker engine, all on
127.0.0.1, with their files under one work directory. They keep running after the
command returns; `down` stops them.
"""

from __future__ import annotations

import json
import sys


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "services", help="install, start, check and stop ZooKeeper, HDFS, Spark, Docker and Kafka"
    )
    parser.add_argument("--workdir", help="where the services keep their files (default: .work/services)")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    actions.add_parser("install", help="install what is missing (Debian packages, Hadoop and Kafka jars)").set_defaults(
        func=_install
    )
    up = actions.add_parser("up", help="install what is missing, start every service and print its status")
    up.add_argument(
        "--only", nargs="+", choices=["zookeeper", "hdfs", "spark", "docker", "kafka"], help="start only these"
    )
    up.add_argument(
        "--peak",
        action="store_true",
        help="the JVMs' JIT compiles with C2 as well as C1, as a service on a machine of its own runs "
        "(for benchmarks of a service's own throughput); by default C1 alone, no second warm-up",
    )
    up.add_argument("--json", action="store_true")
    up.set_defaults(func=_up)
    status = actions.add_parser("status", help="print the status of each service")
    status.add_argument("--json", action="store_true")
    status.set_defaults(func=_status)
    actions.add_parser("down", help="stop the services").set_defaults(func=_down)


def _stack(args):
    from cluster.services.stack import ServiceStack, default_workdir

    return ServiceStack(workdir=args.workdir or default_workdir(), peak=getattr(args, "peak", False))


def _install(args) -> int:
    from cluster.services.stack import install_all

    install_all()
    print("installed: Debian packages, Hadoop and Kafka jars")
    return 0


def _up(args) -> int:
    from cluster.services.stack import SERVICE_NAMES, install_all

    install_all()
    stack = _stack(args)
    names = tuple(args.only or SERVICE_NAMES)
    started = stack.start(names)
    status = stack.status(names)
    for name in names:
        status[name]["start_s"] = started[name]["seconds"]
        if not started[name]["started"]:
            status[name]["error"] = started[name]["error"]
    _print(status, args.json, stack.workdir)
    ok = all(result["started"] for result in started.values())
    if ok and not args.json:
        print("\nAll services are up. Stop them with: custody services down")
    return 0 if ok else 1


def _status(args) -> int:
    stack = _stack(args)
    status = stack.status()
    _print(status, args.json, stack.workdir)
    return 0 if all(entry.get("healthy") for entry in status.values()) else 1


def _down(args) -> int:
    _stack(args).stop()
    print("stopped ZooKeeper, HDFS, Spark and Kafka (dockerd is left running as a system service)")
    return 0


def _print(status: dict, as_json: bool, workdir) -> None:
    if as_json:
        json.dump(status, sys.stdout, indent=2, default=str)
        print()
        return
    print(f"services in {workdir}:")
    for name, entry in status.items():
        state = "UP" if entry.get("healthy") else "DOWN"
        details = ", ".join(
            f"{key}={value}" for key, value in entry.items() if key not in ("healthy", "error", "members")
        )
        print(f"  {name:<10} {state:<5} {details}")
        for member in entry.get("members", []):
            print(
                f"  {'':<10}       member {member['myid']}: port {member['port']} pid {member['pid']} {member['mode']}"
            )
        if entry.get("error"):
            print(f"  {'':<10}       error: {entry['error']}")
