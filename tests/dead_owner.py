"""A shard owner that dies where a test says: between creating (or appending to) one
file of its shard on HDFS and syncing it. It runs as a process of its own, so that the
test can SIGKILL it there (its HDFS lease dies with it) or SIGSTOP it (its lease is
still held, by a client that will never write again), and then adopt the shard.

    python -m tests.dead_owner wal --url hdfs://... --root /r --shard n3-17 --epoch 17 \\
        --records 20 --scenario journal-reset [--prefix 0.5] [--legacy-flow]
    python -m tests.dead_owner member --url ... --root ... --zk HOSTS [--credentials F] \\
        --node n3 --records 20 --scenario clean

`wal`: it opens its home shard as a node does (`open_home_shard`: flow.json, then the
WAL), commits `--records` FlowFiles, printing "A <i>" as each is acknowledged, then
does the scenario's step. `member`: the same, as the home shard of a real
`ClusterMember` (a new incarnation, its membership znode, its shard znode; it never
leads), so that its death is seen and its shard moved by the cluster; it prints
"SHARD <id>" (its incarnation, which is its home shard) first.

Scenarios (the file that stalls, and when):

    flow           flow.json's temporary, before the WAL: no record is committed
    first-partial  the first checkpoint's snapshot.partial, as the new WAL recovers
    first-journal  the first journal the new WAL creates (its header)
    frame          the journal frame of one more commit (record `--records`)
    partial        snapshot.partial of a checkpoint after the commits
    journal-reset  journal-0 as that checkpoint begins it again (its header)
    swap           a swap file of the last records, before the WAL records it
    clean          nothing stalls: it prints "READY" and waits to be killed

A stalled file prints "STALLED <path> <bytes synced> <bytes written>" and the process
waits there for its signal.
`--prefix F` makes the fraction F of the stalled write durable first (hsynced), so
that the file is cut short rather than empty whatever HDFS keeps of the rest.
`--legacy-flow` writes flow.json in place, as the release before did (created under
its own name, then written and synced), instead of under a temporary name.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading

from cluster.core import ownership as own
from cluster.core.flows import FlowSnapshot
from cluster.core.layout import ClusterLayout
from cluster.failover.adoption import WalOptions, open_home_shard
from repositories.flowfile import FlowFileRecord, Put, SwapFile, SwapOut
from repositories.swap import SwapStore

QUEUE = "q"
FLOW = {"name": "dead-owner", "processors": [{"id": "p", "type": "LogAttribute"}], "connections": []}
SCENARIOS = ("flow", "first-partial", "first-journal", "frame", "partial", "journal-reset", "swap", "clean")
OPTIONS = WalOptions(partitions=2, checkpoint_interval=None)


def record(index: int) -> FlowFileRecord:
    return FlowFileRecord(f"ff-{index}", {"i": str(index)}, None, QUEUE, 10, index, index)


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


class _StallingFile:
    def __init__(self, storage: StallingStorage, path: str, inner):
        self.storage, self.path, self._inner = storage, path, inner
        self._doomed = False
        self._synced = 0  # bytes of the file durable when it stalls

    def write(self, data):
        if not self._doomed and self.storage.matches(self.path):
            self._doomed = True
            self._synced = self._inner.tell()
            cut = int(len(data) * self.storage.prefix)
            if cut:
                self._inner.write(bytes(data[:cut]))
                self._inner.sync()  # this much is durable: the file ends cut short, not empty
                self._synced += cut
                data = data[cut:]
        return self._inner.write(data)

    def sync(self) -> None:
        if self._doomed or self.storage.matches(self.path):
            # The path, the bytes synced, the bytes written: what HDFS may keep lies between.
            say(f"STALLED {self.path} {self._synced} {self._inner.tell()}")
            threading.Event().wait()  # until the test's signal
        self._inner.sync()

    def sync_data(self) -> None:
        self.sync()

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self._inner.close()


class StallingStorage:
    """Any storage, whose files stall at the first sync after `arm(part)` on a path
    containing `part` (after making `prefix` of that write durable)."""

    def __init__(self, inner, *, legacy_flow: bool = False):
        self._inner, self.legacy_flow = inner, legacy_flow
        self.armed: str | None = None
        self.prefix = 0.0

    def arm(self, part: str, prefix: float = 0.0) -> None:
        self.armed, self.prefix = part, prefix

    def matches(self, path: str) -> bool:
        return self.armed is not None and self.armed in path

    def create(self, path: str, *, overwrite: bool = False):
        if self.legacy_flow and path.endswith("/flow.json.partial"):
            path = path[: -len(".partial")]  # created under its own name, as the release before did
        return _StallingFile(self, path, self._inner.create(path, overwrite=overwrite))

    def append(self, path: str):
        return _StallingFile(self, path, self._inner.append(path))

    def __getattr__(self, name):
        return getattr(self._inner, name)


def work(storage: StallingStorage, handle, scenario: str, records: int, prefix: float) -> None:
    """What the owner does with its home shard once flow.json is written: its WAL,
    its commits, and the scenario's step (which stalls, except `clean`)."""
    if scenario == "first-partial":
        storage.arm("snapshot.partial", prefix)
    elif scenario == "first-journal":
        storage.arm("journal-0", prefix)
    wal = handle.open_wal()
    wal.recover()
    for index in range(records):
        wal.update([Put(record(index))])
        say(f"A {index}")
    if scenario == "frame":
        storage.arm("journal-", prefix)
        wal.update([Put(record(records))])
    elif scenario in ("partial", "journal-reset"):
        storage.arm("snapshot.partial" if scenario == "partial" else "journal-0", prefix)
        wal.checkpoint()
    elif scenario == "swap":
        swapped = [record(index) for index in range(max(0, records - 5), records)]
        store = SwapStore(storage, handle.swap_directory)
        storage.arm("/swap/", prefix)
        summary = store.write(QUEUE, swapped)
        wal.update(
            [SwapOut(SwapFile(summary.location, QUEUE, summary.count, summary.size), tuple(r.id for r in swapped))]
        )
    say("READY")
    threading.Event().wait()


def run_wal(args, storage: StallingStorage) -> None:
    layout = ClusterLayout(args.cluster, args.root)
    if not storage.exists(layout.hdfs_shards):
        storage.mkdir(layout.hdfs_shards, parents=True, exist_ok=True)
    if args.scenario == "flow":
        storage.arm("flow.json", args.prefix)
    handle = open_home_shard(
        storage,
        layout,
        own.new_shard(args.shard, args.shard, args.epoch, at=0.0, flow=FlowSnapshot(FLOW).version),
        OPTIONS,
        FlowSnapshot(FLOW),
    )
    work(storage, handle, args.scenario, args.records, args.prefix)


class _OwnerRuntime:
    """The member's home shard runtime: the owner's commits and its scenario, in `recover`."""

    def __init__(self, storage, handle, args):
        self.storage, self.handle, self.args = storage, handle, args

    def recover(self) -> None:
        thread = threading.Thread(
            target=work,
            args=(self.storage, self.handle, self.args.scenario, self.args.records, self.args.prefix),
            daemon=True,
        )
        thread.start()
        thread.join()

    def start(self) -> None: ...

    def pause(self) -> None: ...

    def resume(self) -> None: ...

    def abort_open_sessions(self) -> None: ...

    def stop(self) -> None: ...

    def drained(self) -> bool:
        return False

    def holds_hand_over_state(self) -> bool:
        return False

    def load(self) -> dict:
        return {}

    def active_threads(self) -> int:
        return 0


def run_member(args, storage: StallingStorage) -> None:
    from cluster.clients import ClientFactory, ZooKeeperSettings, read_credentials_file
    from cluster.errors import StorageUnavailable
    from cluster.failover.member import ClusterMember, MemberConfig
    from cluster.failover.preflight import probe_storage

    credentials = read_credentials_file(args.credentials) if args.credentials else None
    clients = ClientFactory(ZooKeeperSettings(args.zk, args.session_timeout, credentials=credentials))
    if args.scenario == "flow":
        storage.arm("flow.json", args.prefix)
    config = MemberConfig(
        zk_hosts=args.zk,
        cluster=args.cluster,
        node=args.node,
        session_timeout=args.session_timeout,
        hdfs_root=args.root,
        lead=False,
        wal=OPTIONS,
        flow=FlowSnapshot(FLOW),
    )
    member = ClusterMember(config, storage, lambda handle: _OwnerRuntime(storage, handle, args), clients=clients)
    # As a node waits before it takes an incarnation: until HDFS takes writes (a fresh
    # HDFS may have no DataNode registered yet).
    layout = ClusterLayout(args.cluster, args.root)
    for attempt in range(240):
        try:
            probe_storage(storage, layout, args.node)
            break
        except StorageUnavailable as error:
            if attempt == 0:
                say(f"WAITING {error}")
            threading.Event().wait(0.5)

    def start() -> None:
        try:
            member.start()
        except BaseException as error:  # noqa: BLE001 - the test must see it, not wait
            say(f"FAILED {type(error).__name__}: {error}")
            os._exit(1)

    # `start` stalls in the home shard: in open_home_shard (flow), or in its runtime's
    # recovery; the incarnation is known before either.
    threading.Thread(target=start, name="start", daemon=True).start()
    while member.incarnation is None:
        threading.Event().wait(0.05)
    say(f"SHARD {member.incarnation.id}")
    threading.Event().wait()


class OwnerProcess:
    """The test's side: this module run as a process, its stdout read line by line on a
    thread of its own (a `select` on a buffered pipe misses lines already buffered)."""

    def __init__(self, argv: list[str], cwd: str):
        import queue
        import subprocess

        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.dead_owner", *argv],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._lines: queue.Queue = queue.Queue()
        self.said: list[str] = []
        threading.Thread(target=self._read, name="dead-owner stdout", daemon=True).start()

    def _read(self) -> None:
        with self.process.stdout:
            for line in self.process.stdout:
                self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    def until(self, prefix: str, timeout: float = 60.0) -> list[str]:
        """The lines it printed from the last call on, up to the first starting with
        `prefix`; AssertionError (with what it said) if it does not come."""
        import queue

        lines = []
        while True:
            try:
                line = self._lines.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"the dead owner said {lines} and then nothing for {timeout:.0f}s") from None
            if line is None:
                self.process.wait()
                raise AssertionError(f"the dead owner said {lines} and exited: {self.process.stderr.read()[-2000:]}")
            lines.append(line)
            self.said.append(line)
            if line.startswith(prefix):
                return lines

    def signal(self, number: int) -> None:
        self.process.send_signal(number)

    def close(self) -> str:
        """Kill it (a stopped process dies of SIGKILL too); its stderr's tail."""
        self.process.kill()
        self.process.wait()
        tail = self.process.stderr.read()[-3000:]
        self.process.stderr.close()
        return tail


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.dead_owner")
    parser.add_argument("mode", choices=("wal", "member"))
    parser.add_argument("--url", required=True)
    parser.add_argument("--root", required=True)
    parser.add_argument("--cluster", default="c1")
    parser.add_argument("--shard", default="n3-17")
    parser.add_argument("--epoch", type=int, default=17)
    parser.add_argument("--records", type=int, default=20)
    parser.add_argument("--scenario", choices=SCENARIOS, required=True)
    parser.add_argument("--prefix", type=float, default=0.0)
    parser.add_argument("--legacy-flow", action="store_true")
    parser.add_argument("--hdfs-config", action="append", default=[], help="KEY=VALUE for the HDFS client")
    parser.add_argument("--zk")
    parser.add_argument("--credentials")
    parser.add_argument("--node", default="n3")
    parser.add_argument("--session-timeout", type=float, default=4.0)
    args = parser.parse_args(argv)
    from replication.hdfs_storage import HdfsStorage

    config = dict(item.split("=", 1) for item in args.hdfs_config)
    storage = StallingStorage(HdfsStorage(args.url, config), legacy_flow=args.legacy_flow)
    (run_wal if args.mode == "wal" else run_member)(args, storage)


if __name__ == "__main__":
    main()
