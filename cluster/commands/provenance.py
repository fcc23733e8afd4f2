"""`custody provenance ...`: query, lineage and inspection of a provenance repository,
and `analyze`, the cluster-wide analysis on Spark of the events every node exported.

PATH is the repository's first container (where layout.json lives). The repository is
opened read-only, so these commands are safe to run beside a live node. `analyze`
reads the Parquet export (`hdfs://host:port<hdfs root>/<cluster>/provenance`) with
`flow.spark.provenance_analysis`.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys


def register(subparsers) -> None:
    parser = subparsers.add_parser("provenance", help="query, lineage and inspection of provenance")
    sub = parser.add_subparsers(dest="provenance_command", metavar="ACTION")

    query = sub.add_parser("query", help="events by uuid, type, filename, component, relationship and time")
    query.add_argument("path", metavar="PATH")
    query.add_argument("--uuid", help="FlowFile uuid (also matches parents and children)")
    query.add_argument("--type", help="event type, e.g. SEND")
    query.add_argument("--filename")
    query.add_argument("--component", help="component id")
    query.add_argument("--relationship")
    query.add_argument("--since", help="15m, 2h, 3d, ISO 8601 or epoch ms")
    query.add_argument("--until", help="same forms as --since")
    query.add_argument("--limit", type=int, default=100)
    query.add_argument("--json", action="store_true", help="print JSON")
    query.set_defaults(func=_query)

    lineage = sub.add_parser("lineage", help="ancestors and descendants of a FlowFile")
    lineage.add_argument("path", metavar="PATH")
    lineage.add_argument("uuid", metavar="UUID")
    lineage.add_argument("--json", action="store_true", help="print JSON")
    lineage.set_defaults(func=_lineage)

    inspect = sub.add_parser("inspect", help="files, blocks, shards and damage of a repository or event file")
    inspect.add_argument("path", metavar="PATH", help="repository directory or one .prov file")
    inspect.add_argument("--json", action="store_true", help="print JSON")
    inspect.set_defaults(func=_inspect)
    analyze = sub.add_parser(
        "analyze",
        help="cluster-wide lineage and per-minute statistics on Spark, over the events every node exported as Parquet",
    )
    analyze.add_argument("--spark-master", required=True, metavar="MASTER", help="local[*] or spark://host:7077")
    analyze.add_argument(
        "--source",
        required=True,
        metavar="URI",
        help="the export's root, e.g. hdfs://namenode:8020/custody/<cluster>/provenance",
    )
    analyze.add_argument("--uuid", help="print the cluster-wide lineage of this FlowFile as JSON")
    analyze.add_argument(
        "--per-minute",
        action="store_true",
        help="per component and minute: event counts by type and latency (table, then JSON)",
    )
    analyze.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="Spark conf, repeatable")
    analyze.set_defaults(func=_analyze)
    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])


def _open(path: str):
    from repositories.provenance import ProvenanceRepository

    return ProvenanceRepository.open(path, read_only=True)


def _iso(ms: int | None) -> str:
    if ms is None:
        return "-"
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat(timespec="milliseconds")


def _query(args) -> int:
    from repositories.provenance import ProvenanceError, ProvenanceQuery
    from repositories.provenance.query import parse_event_type, parse_time

    try:
        query = ProvenanceQuery(
            event_type=parse_event_type(args.type) if args.type else None,
            flowfile_uuid=args.uuid,
            filename=args.filename,
            component_id=args.component,
            relationship=args.relationship,
            start_ms=parse_time(args.since) if args.since else None,
            end_ms=parse_time(args.until) if args.until else None,
            limit=args.limit,
        )
        repo = _open(args.path)
    except (ValueError, ProvenanceError) as error:
        print(f"error: {error}")
        return 2
    result = repo.query(query)
    if args.json:
        print(
            json.dumps(
                {
                    "events": [e.to_dict() for e in result.events],
                    "skipped_missing": result.skipped_missing,
                    "errors": [{"event_id": i, "error": m} for i, m in result.errors],
                    "shards_searched": result.shards_searched,
                    "shards_skipped": result.shards_skipped,
                },
                indent=2,
            )
        )
    else:
        for e in result.events:
            extra = e.relationship or e.transit_uri or e.details or ""
            print(
                f"{e.event_id:>10}  {_iso(e.event_time_ms)}  {e.event_type.value:<20} {e.flowfile_uuid}  "
                f"{e.component_id}  {e.filename or '-'}  {extra}"
            )
        print(
            f"{len(result.events)} events ({result.shards_searched} shards searched, "
            f"{result.shards_skipped} skipped by time, {result.skipped_missing} hits aged off)"
        )
        for event_id, message in result.errors:
            print(f"error: event {event_id}: {message}")
    return 1 if result.errors else 0


def _lineage(args) -> int:
    from repositories.provenance import ProvenanceError

    try:
        graph = _open(args.path).lineage(args.uuid)
    except ProvenanceError as error:
        print(f"error: {error}")
        return 2
    if args.json:
        print(json.dumps(graph.to_dict(), indent=2))
        return 0
    print(f"lineage of {graph.root_uuid}")
    print(f"  ancestors:   {', '.join(sorted(graph.ancestors)) or '-'}")
    print(f"  descendants: {', '.join(sorted(graph.descendants)) or '-'}")
    for edge in graph.edges:
        print(f"  {edge.parent_uuid} --{edge.event_type}#{edge.event_id}--> {edge.child_uuid}")
    for uuid in sorted(graph.flowfiles):
        for e in graph.events_of(uuid):
            print(f"  {e.event_id:>10}  {_iso(e.event_time_ms)}  {e.event_type.value:<20} {uuid}  {e.component_id}")
    if graph.truncated:
        print("  (truncated)")
    return 0


def _check_file(path: str) -> dict:
    from repositories.provenance import CorruptBlockError, CorruptFileError
    from repositories.provenance.event_file import EventFile, scan_blocks

    report = {"path": path, "damaged_blocks": [], "size": os.path.getsize(path)}
    try:
        reader = EventFile(path)
    except CorruptFileError as error:
        report["error"] = str(error)
        return report
    report.update(
        first_id=reader.first_id,
        last_id=reader.last_id,
        events=reader.event_count,
        blocks=len(reader.blocks),
        min_time=_iso(reader.min_time_ms),
        max_time=_iso(reader.max_time_ms),
        toc_rebuilt=reader.toc_rebuilt,
    )
    for i in range(len(reader.blocks)):
        try:
            reader.read_block(i)
        except CorruptBlockError as error:
            report["damaged_blocks"].append(
                {
                    "block": i,
                    "offset": error.offset,
                    "reason": error.reason,
                    "first_event_id": error.first_event_id,
                    "events": error.event_count,
                }
            )
    try:
        scan = scan_blocks(path)
        report["scan_damage"] = [{"offset": o, "reason": r} for o, r in scan.damaged]
    except CorruptFileError as error:
        report["error"] = str(error)
    reader.close()
    return report


def _inspect(args) -> int:
    from repositories.provenance import ProvenanceError
    from repositories.provenance.journal_format import parse_journal_name

    if os.path.isfile(args.path):
        reports = [_check_file(args.path)]
        summary = {"files": reports}
    else:
        try:
            repo = _open(args.path)
        except ProvenanceError as error:
            print(f"error: {error}")
            return 2
        reports = [_check_file(entry.path) for entry in repo.event_files()]
        journals = (
            sorted(
                name
                for c in repo.containers
                for name in os.listdir(os.path.join(c, "journals"))
                if parse_journal_name(name)
            )
            if not args.path.endswith(".prov")
            else []
        )
        summary = {
            "containers": repo.containers,
            "files": reports,
            "events": sum(r.get("events", 0) for r in reports),
            "event_file_bytes": repo.storage_bytes(),
            "next_event_id": repo.next_event_id,
            "journals_not_merged": journals,
            "shards": [
                {
                    "name": s.name,
                    "closed": s.manifest.closed,
                    "files": sorted(s.manifest.files),
                    "min_time": _iso(s.manifest.min_time_ms),
                    "max_time": _iso(s.manifest.max_time_ms),
                    "bytes": s.size(),
                }
                for s in repo.index.shards
            ],
        }
    damaged = [r for r in reports if r["damaged_blocks"] or r.get("error")]
    summary["damaged_files"] = len(damaged)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        for key in ("containers", "events", "event_file_bytes", "next_event_id", "journals_not_merged"):
            if key in summary:
                print(f"{key}: {summary[key]}")
        for r in reports:
            state = "DAMAGED" if (r["damaged_blocks"] or r.get("error")) else "ok"
            print(
                f"{r['path']}: {state} ids {r.get('first_id')}..{r.get('last_id')} events {r.get('events')} "
                f"blocks {r.get('blocks')} bytes {r['size']} {r.get('min_time')}..{r.get('max_time')}"
            )
            for d in r["damaged_blocks"]:
                print(
                    f"  block {d['block']} at {d['offset']}: {d['reason']} "
                    f"(events {d['first_event_id']}.. x{d['events']})"
                )
            if r.get("error"):
                print(f"  {r['error']}")
        for s in summary.get("shards", []):
            print(
                f"shard {s['name']}: {'closed' if s['closed'] else 'active'} files {len(s['files'])} "
                f"{s['min_time']}..{s['max_time']} bytes {s['bytes']}"
            )
    return 1 if damaged else 0


def _analyze(args) -> int:
    if not args.uuid and not args.per_minute:
        print("custody provenance analyze: say what to analyze: --uuid UUID, --per-minute, or both", file=sys.stderr)
        return 2
    conf = dict(item.split("=", 1) for item in args.conf if "=" in item)
    if len(conf) != len(args.conf):
        bad = next(item for item in args.conf if "=" not in item)
        print(f"custody provenance analyze: --conf takes KEY=VALUE, not {bad!r}", file=sys.stderr)
        return 2
    from flow.spark import provenance_analysis as analysis
    from flow.spark.failures import describe
    from flow.spark.session import build_spark_session

    try:
        spark = build_spark_session(args.spark_master, conf, app_name="custody-provenance-analyze")
    except Exception as error:  # noqa: BLE001 - a JVM that does not start, a master that does not answer
        print(
            f"custody provenance analyze: cannot start a Spark session on {args.spark_master}: {describe(error)}",
            file=sys.stderr,
        )
        return 1
    try:
        events = analysis.load_events(spark, args.source)
        if args.uuid:
            print(json.dumps(analysis.lineage(events, args.uuid, source=args.source), indent=2))
        if args.per_minute:
            rows = analysis.per_minute(events)
            print(analysis.format_per_minute(rows))
            print(json.dumps(rows, indent=2))
    except analysis.UnknownFlowFile as error:
        print(f"custody provenance analyze: {error}", file=sys.stderr)
        return 1
    except analysis.ProvenanceAnalysisError as error:
        print(f"custody provenance analyze: {error}", file=sys.stderr)
        return 2
    except Exception as error:  # noqa: BLE001 - Spark failed reading the source
        unreadable = analysis.SourceUnreadable(args.source, describe(error))
        print(f"custody provenance analyze: {unreadable}", file=sys.stderr)
        return 2
    return 0
