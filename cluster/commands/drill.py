"""`custody drill`: a failover drill as a tool. It runs a cluster under load, injects
faults one round after another, times every failover, and checks at the end that
every FlowFile made came out exactly once: the files workload (examples/cluster.yaml)
counts the ids in the sink directory, the Kafka workload (examples/kafka-cluster.yaml:
Kafka in, Kafka out) the keys a read_committed consumer reads from the output topic.

  custody drill --target local|compose [--workload files|kafka] [--compose-file F]
                [--faults kill,stop,...] [--rounds N] [--nodes N] [--load-seconds S]
                [--report drill.json] [--plot drill.png]

Everything asked is validated before anything starts (exit 2, one line on stderr).
Exit 0 when nothing was lost, duplicated or unexpected; 1 otherwise, or when a round
or the target failed. One progress line a round on stdout, then a table.
"""

from __future__ import annotations

import json
import math
import os
import signal
import sys

USAGE_ERROR = 2
MIN_LOAD_SECONDS = 12.0  # the load fault's ten stalls of 0.8 s, 0.4 s apart


def register(subparsers) -> None:
    from ..drills.fault_kinds import FAULT_KINDS, TARGET_KINDS  # not targets: every command would load it

    faults = "; ".join(f"{kind.name}: {kind.what}" for kind in FAULT_KINDS)
    parser = subparsers.add_parser(
        "drill",
        help="inject faults into a loaded cluster; time failovers; check exactly-once delivery",
        description="Run the sample flow on a cluster, inject faults in rotation, time each failover "
        "(detection, takeover, resume) and check that every FlowFile reached the sink exactly once. "
        f"Faults: {faults}.",
    )
    parser.add_argument(
        "--target",
        default="local",
        metavar="|".join(TARGET_KINDS),
        help="local: node processes and embedded ZooKeeper and HDFS on this machine; "
        "compose: the containers of a running docker compose project (default: local)",
    )
    parser.add_argument(
        "--compose-file",
        help="the compose project's file (--target compose; default "
        "docker-compose.yml): the project is the one it names",
    )
    parser.add_argument(
        "--project",
        help="--target compose: the compose project's name, instead of the one the "
        "compose file (or COMPOSE_PROJECT_NAME) names",
    )
    parser.add_argument(
        "--workload",
        default="files",
        metavar="files|kafka",
        help="files: each node makes FlowFiles and writes them to a sink directory; kafka: a producer outside "
        "the cluster writes keyed records to an input topic, the nodes consume, stamp and publish them to an "
        "output topic exactly once, and a read_committed consumer counts them (--target local starts a "
        "Kafka broker too; --target compose uses the project's, started with --profile kafka, and deploys "
        "the workload's flow onto the nodes) (default: files)",
    )
    parser.add_argument(
        "--faults",
        help="comma-separated fault names, taken in turn; one named twice comes round twice as often "
        "(default: every fault the target supports)",
    )
    parser.add_argument(
        "--rounds", type=int, help="rounds in all, the faults taken in turn (default: twice through the list)"
    )
    parser.add_argument("--report", help="write the JSON report here")
    parser.add_argument("--plot", help="write the timeline plot (PNG) here")
    parser.add_argument(
        "--workdir",
        help="--target local: where services, nodes and logs live "
        "(default: a new temporary directory, kept afterwards)",
    )
    parser.add_argument("--nodes", type=int, default=3, help="--target local: how many nodes (default: 3)")
    parser.add_argument(
        "--load-seconds",
        type=float,
        default=60.0,
        help="the load fault: how long every core is kept busy (at least 12, the ten stalls of a node "
        "it holds meanwhile) (default: 60)",
    )
    parser.set_defaults(func=run)


def _refuse(message: str) -> int:
    print(f"custody drill: {message}", file=sys.stderr)
    return USAGE_ERROR


def _writable(path: str | None) -> bool:
    return path is None or os.path.isdir(os.path.dirname(os.path.abspath(path)))


def run(args) -> int:
    from ..drills.fault_kinds import DrillUsageError, parse_faults, rotation
    from ..drills.local import WORKLOADS
    from ..drills.targets import TargetUnavailable, target_class

    # -- validate everything before anything starts --------------------------------------
    if not (MIN_LOAD_SECONDS <= args.load_seconds < math.inf):  # nan and inf too
        return _refuse(f"--load-seconds must be at least {MIN_LOAD_SECONDS:g}, not {args.load_seconds:g}")
    if args.rounds is not None and args.rounds < 1:
        return _refuse(f"--rounds must be at least 1, not {args.rounds}")
    for option, path in (("--report", args.report), ("--plot", args.plot)):
        if not _writable(path):
            return _refuse(f"{option} {path}: its directory does not exist")
    if (args.compose_file or args.project) and args.target != "compose":
        return _refuse("--compose-file and --project go with --target compose")
    if args.workload not in WORKLOADS:
        return _refuse(f"unknown workload {args.workload!r}; workloads: {', '.join(WORKLOADS)}")
    try:
        factory = target_class(args.target)
        if args.target == "local" and args.nodes < 2:
            raise TargetUnavailable(
                f"a drill needs at least 2 nodes (one fails, one takes over); --nodes is {args.nodes}"
            )
        target = factory.from_arguments(args)
        faults = parse_faults(args.faults, target.supported_faults, args.target)
    except (DrillUsageError, TargetUnavailable) as error:
        return _refuse(str(error))
    if len(target.names) < 2:
        return _refuse(
            f"the {args.target} target has {len(target.names)} node(s) ({', '.join(target.names) or 'none'}); "
            "a drill needs at least 2 (one fails, one takes over)"
        )
    double = [name for name in dict.fromkeys(faults) if name in ("leader", "adopter")]
    if double and len(target.names) < 3:
        return _refuse(
            f"fault(s) {', '.join(double)} kill two nodes in one round and need at least 3 nodes; "
            f"the target has {len(target.names)}"
        )
    schedule = rotation(faults, args.rounds if args.rounds is not None else 2 * len(faults))
    return _drill(target, faults, schedule, args)


def _drill(target, faults, schedule, args) -> int:
    from ..drills.plot import plot_timeline
    from ..drills.report import drill_report, round_line, table
    from ..drills.runner import DrillRunner
    from ..zk.client import quiet_connection_logs

    quiet_connection_logs()  # the drill's own ZooKeeper client connecting and closing is not progress

    def interrupted(number, _frame):
        raise KeyboardInterrupt(signal.Signals(number).name)

    signal.signal(signal.SIGTERM, interrupted)  # close the target as Ctrl-C does
    say = lambda line: print(line, flush=True)  # noqa: E731 - progress goes to stdout as it happens
    say(
        f"custody drill: {len(schedule)} rounds on the {target.kind} target ({', '.join(target.names)}): "
        + ", ".join(f"{fault} x{schedule.count(fault)}" for fault in dict.fromkeys(faults))
    )
    say(f"logs: {target.log_location}")
    runner = DrillRunner(
        target,
        schedule,
        on_round=lambda entry: say(round_line(entry, len(schedule))),
        load_seconds=args.load_seconds,
    )
    try:
        say("starting the cluster ...")
        target.start_all()
        say("every node joined; rounds begin")
        runner.run()
    except Exception as error:  # noqa: BLE001 - any failure ends the drill with a report of what happened
        if runner.rounds and "error" in runner.rounds[-1]:
            say(round_line(runner.rounds[-1], len(schedule)))
        runner.error = runner.error or f"{type(error).__name__}: {error}"
        say(f"the drill stopped: {runner.error} (logs: {target.log_location})")
    finally:
        target.close()
    report = drill_report(
        runner.rounds,
        faults,
        runner.report,
        runner.samples,
        target=target.kind,
        started_at=runner.started_at,
        error=runner.error,
        workload=args.workload,
        blocks_scheduled_at_start=runner.blocks_scheduled_at_start,
    )
    if args.report:
        with open(args.report, "w") as out:
            json.dump(report, out, indent=2)
        say(f"report: {args.report}")
    if args.plot:
        plot_timeline(report, args.plot)
        say(f"plot: {args.plot}")
    say(table(report))
    return 0 if report["ok"] else 1
