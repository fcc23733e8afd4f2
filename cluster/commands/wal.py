"""`custody wal inspect PATH [--json]` and `custody wal fsck PATH`: read a FlowFile WAL
directory without changing it (no rename, no delete, no checkpoint, no side files).

inspect reports what recovery would restore: the crash case, record count, max
transaction id, swap files, and every range recovery would cut, with why.
fsck exits 0 when the WAL restores and all damage is explained by a crash (a torn
or NUL tail), 1 when it finds damage no crash explains (a damaged transaction with
intact ones after it, a stale-epoch write, an undecodable transaction, or a record
whose bytes match their CRC but cannot be decoded: fsck decodes every record in full,
where recovery decodes lazily), and 2 when
the WAL cannot be restored at all (corrupt snapshot, unknown SerDe, not a WAL).
"""

from __future__ import annotations

import json
import sys


def register(subparsers) -> None:
    parser = subparsers.add_parser("wal", help="inspect or check a FlowFile write-ahead log")
    commands = parser.add_subparsers(dest="wal_command", metavar="ACTION")
    inspect = commands.add_parser("inspect", help="report what recovery would restore and cut")
    inspect.add_argument("path", help="the WAL directory (local path, or hdfs://host:port/dir)")
    inspect.add_argument("--json", action="store_true", help="print the report as JSON")
    inspect.set_defaults(func=run_inspect)
    fsck = commands.add_parser("fsck", help="exit non-zero on corruption recovery cannot explain")
    fsck.add_argument("path", help="the WAL directory (local path, or hdfs://host:port/dir)")
    fsck.set_defaults(func=run_fsck)
    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])


def open_storage(path: str):
    """(storage, directory) for a local path or an hdfs:// URL."""
    if path.startswith("hdfs://"):
        from urllib.parse import urlparse

        from ..clients import ClientFactory, HdfsSettings

        parsed = urlparse(path)
        return ClientFactory(hdfs=HdfsSettings(f"{parsed.scheme}://{parsed.netloc}")).hdfs_storage(), parsed.path or "/"
    import os

    from repositories.storage import LocalStorage

    return LocalStorage(), os.path.abspath(path)


def read_recovered_state(path: str):
    from repositories.flowfile import FlowFileSerDe, list_wal_files, read_state

    storage, directory = open_storage(path)
    files = list_wal_files(storage, directory)
    return read_state(storage, directory, files, FlowFileSerDe(), epoch=None)


def read_report(path: str):
    return read_recovered_state(path).report


def undecodable_records(records: dict) -> list:
    """Decode every record in full. Recovery checks CRCs but decodes restored records
    lazily, so a record whose bytes matched their CRC yet cannot be decoded (a SerDe
    bug or a forged file) would otherwise surface only when the flow engine reads it."""
    from repositories.flowfile import CorruptRecordError

    failures = []
    for record in records.values():
        try:
            record.decode()
        except CorruptRecordError as error:
            failures.append(error)
    return failures


def run_inspect(args) -> int:
    from repositories.flowfile import WriteAheadLogError
    from repositories.storage import StorageError

    try:
        report = read_report(args.path)
    except (WriteAheadLogError, StorageError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    data = report.to_dict()
    if args.json:
        print(json.dumps(data, indent=2, sort_keys=True))
        return 0
    print(f"directory        {report.directory}")
    print(f"restore case     {report.case.name} ({report.case.value})")
    print(f"records          {report.record_count}")
    print(f"max txid         {report.max_txid}")
    print(f"snapshot         max txid {report.snapshot_max_txid}, {report.snapshot_records} records, epoch {report.snapshot_epoch}")
    print(f"replayed         {report.transactions_replayed} transactions ({report.transactions_in_snapshot} already in the snapshot)")
    print(f"swap files       {len(report.swap_files)}")
    for swap_file in report.swap_files:
        print(f"  {swap_file.location}  queue={swap_file.queue} count={swap_file.count} size={swap_file.size}")
    print(f"cuts             {len(report.cuts)}")
    for cut in report.cuts:
        kind = "explained by a crash" if cut.explained else "NOT explained by a crash"
        print(f"  {cut.path} bytes {cut.offset}..{cut.end}: {cut.reason} ({kind})")
    return 0


def run_fsck(args) -> int:
    from repositories.flowfile import WriteAheadLogError
    from repositories.storage import StorageError

    try:
        state = read_recovered_state(args.path)
    except (WriteAheadLogError, StorageError) as error:
        print(f"FAIL: {error}", file=sys.stderr)
        return 2
    report = state.report
    unexplained = report.unexplained
    undecodable = undecodable_records(state.records)
    for error in undecodable:
        print(f"UNDECODABLE: {error}")
    for cut in report.cuts:
        kind = "explained by a crash" if cut.explained else "UNEXPLAINED"
        print(f"{kind}: {cut.path} bytes {cut.offset}..{cut.end}: {cut.reason}")
    if unexplained or undecodable:
        print(
            f"FAIL: {len(unexplained)} damaged range(s) no crash explains, {len(undecodable)} record(s) that "
            f"cannot be decoded; {report.record_count} records recoverable", file=sys.stderr)
        return 1
    print(f"OK: {report.record_count} records, max transaction id {report.max_txid}")
    return 0
