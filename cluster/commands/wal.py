"""`custody wal inspect PATH [--json]` and `custody wal fsck PATH [--accept-damage]`.

Without `--accept-damage` both read a FlowFile WAL directory without changing it (no
rename, no delete, no checkpoint, no side files).

inspect reports what recovery would restore: the crash case, record count, max
transaction id, swap files, every range recovery would cut, with why, and every
finding of damage no crash explains (`repositories.flowfile.damage`).
fsck exits 0 when the WAL restores and all damage is explained by a crash (a torn
or NUL tail), 1 when it finds damage no crash explains (a damaged transaction with
intact ones after it, a journal of the set missing or cut deep inside, a missing or
older snapshot, an undecodable transaction, or a record whose bytes match their CRC but
cannot be decoded: fsck decodes every record in full, where recovery decodes lazily),
and 2 when the WAL cannot be restored at all (corrupt snapshot, unknown SerDe, not a WAL).

`fsck --accept-damage` (on a stopped node's WAL) recovers the WAL with what survives,
as `custody run --accept-wal-damage` does at start: the cut bytes and a report go to
the WAL's `cut/` directory, the journals are rewritten, and it prints what was lost.
The node's next start then keeps the content no FlowFile references any more in its
content archive, for a manual recovery. Exit 0 when the WAL is whole again.
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
    fsck.add_argument(
        "--accept-damage",
        action="store_true",
        help="recover the WAL of a stopped node with what survives, losing what the damage lost "
        "(the cut bytes and a report are kept in its cut/ directory)",
    )
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
    print(
        f"snapshot         max txid {report.snapshot_max_txid}, {report.snapshot_records} records, "
        f"epoch {report.snapshot_epoch}"
    )
    print(
        f"replayed         {report.transactions_replayed} transactions "
        f"({report.transactions_in_snapshot} already in the snapshot)"
    )
    print(f"swap files       {len(report.swap_files)}")
    for swap_file in report.swap_files:
        print(f"  {swap_file.location}  queue={swap_file.queue} count={swap_file.count} size={swap_file.size}")
    print(f"cuts             {len(report.cuts)}")
    for cut in report.cuts:
        kind = "explained by a crash" if cut.explained else "NOT explained by a crash"
        print(f"  {cut.path} bytes {cut.offset}..{cut.end}: {cut.reason} ({kind})")
    print(f"damage           {len(report.damage)} finding(s), {report.transactions_lost} transaction(s) lost")
    for found in report.damage:
        print(f"  {found.path}: {found.what}")
    return 0


def run_fsck(args) -> int:
    from repositories.flowfile import WriteAheadLogError
    from repositories.storage import StorageError

    try:
        state = read_recovered_state(args.path)
        if args.accept_damage and state.report.damage:
            return accept_damage(args.path, state.report)
    except (WriteAheadLogError, StorageError) as error:
        print(f"FAIL: {error}", file=sys.stderr)
        return 2
    report = state.report
    undecodable = undecodable_records(state.records)
    for error in undecodable:
        print(f"UNDECODABLE: {error}")
    for cut in report.cuts:
        kind = "explained by a crash" if cut.explained else "UNEXPLAINED"
        print(f"{kind}: {cut.path} bytes {cut.offset}..{cut.end}: {cut.reason}")
    for found in report.damage:
        print(f"DAMAGE: {found.path}: {found.what}")
    if report.damage or undecodable:
        print(
            f"FAIL: {len(report.damage)} finding(s) of damage no crash explains ({report.transactions_lost} "
            f"transaction(s) lost), {len(undecodable)} record(s) that cannot be decoded; {report.record_count} "
            f"records recoverable. `custody wal fsck --accept-damage {args.path}` recovers them on a stopped node, "
            "losing the rest",
            file=sys.stderr,
        )
        return 1
    print(f"OK: {report.record_count} records, max transaction id {report.max_txid}")
    return 0


def accept_damage(path: str, found) -> int:
    """Recover the WAL with what survives, as its node would with --accept-wal-damage:
    at the WAL's own epoch and journal set, so that nothing else changes."""
    from repositories.flowfile import DEFAULT_PARTITIONS, WriteAheadLog

    storage, directory = open_storage(path)
    wal = WriteAheadLog(
        storage,
        directory,
        partitions=found.journal_set or DEFAULT_PARTITIONS,
        epoch=found.epoch,
        checkpoint_interval=None,
        accept_damage=True,
    )
    try:
        wal.recover()
    finally:
        wal.close()
    report = wal.last_recovery
    for damage in report.damage:
        print(f"DAMAGE accepted: {damage.path}: {damage.what}")
    print(
        f"accepted: {report.record_count} records recovered; {report.transactions_lost} transactions lost (ids "
        f"known), at least {report.updates_lost} updates; {len(report.cuts)} cut range(s), saved with the report in "
        f"{directory.rstrip('/')}/cut/. The node's next start keeps the content that no FlowFile references any "
        "more in its content archive."
    )
    return 0
