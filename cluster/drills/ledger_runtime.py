"""`LedgerRuntime`: a flow-less `ShardRuntime` for the cluster's protocol tests.

The workload of the cluster's protocol tests (the flow itself runs in `custody node`,
see `cluster.node.flow_runtime`): a home shard admits uniquely-numbered FlowFile records (a durable WAL
`Put` each), and every shard delivers its records to an idempotent sink (a file
named by the record id, written under a temporary name and renamed) and then
finishes them (a durable WAL `Delete`). Three append-only logs in the sink
directory let a checker count lost, duplicated and unexpected ids:

    admitting.log   id before its Put is committed
    admitted.log    id after its Put returned (durable)
    finishing.log   id after its sink file is in place, before its Delete is committed
    finished.log    "id shard epoch incarnation unix-time" after its Delete returned

Exactly once means: every admitted id is finished exactly once; nothing is finished
that was never admitting; every finished id has its sink file. A process killed
between a committed Delete and its finished.log line leaves an id that is
"finishing" with its sink file and never finished by anyone after: had the Delete
not committed, the record would still be in the shard's WAL and its adopter would
have finished it. The checker counts such ids as finished at the crash.

Every WAL write first asks the node's session guard (`handle.gate.check()`). A write
HDFS rejects or the WAL refuses is logged as one line, "rejected write", and then
ZooKeeper decides what it was (`handle.verify_ownership()`): fenced (a zombie's
`LeaseLost`), and the runtime stops for good; or a storage outage, and commits roll
back and are retried once the WAL can roll again (the rule of `repositories.flowfile`:
nothing is acknowledged after a failed write until a roll succeeds), with one line
when it starts and one when it ends.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections import OrderedDict

from repositories.flowfile import Delete, FlowFileRecord, Put

from ..core.heartbeat import QueueLoad
from ..errors import ClusterError, FencedError, SessionExpiredError
from ..node.events import NodeEvent

log = logging.getLogger(__name__)
QUEUE = "ledger"


def append_line(path: str, line: str) -> None:
    # One write() of a short line with O_APPEND: lines of concurrent writers never interleave.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


class LedgerRuntime:
    """Lock plan: `_lock` guards `_pending` and the flags; WAL and sink I/O run outside it,
    on the runtime's own threads (one admitting, one delivering)."""

    def __init__(
        self,
        handle,
        sink: str,
        *,
        incarnation: str,
        admit_limit: int = 0,
        admit_batch: int = 5,
        admit_interval: float = 0.05,
        deliver_interval: float = 0.01,
        events=None,
    ):
        self.handle, self.sink, self.incarnation = handle, sink, incarnation
        self.admit_limit, self.admit_batch = admit_limit, admit_batch
        self.admit_interval, self.deliver_interval = admit_interval, deliver_interval
        self.events = events or (lambda kind, **fields: None)
        self.wal = None
        self._pending: OrderedDict[str, FlowFileRecord] = OrderedDict()
        self._lock = threading.Lock()
        self._paused = threading.Event()
        self._stopped = threading.Event()
        self._abort = threading.Event()
        self._threads: list[threading.Thread] = []
        self._admitted = 0
        self.delivered = 0
        self.rejected: str | None = None

    # -- ShardRuntime -----------------------------------------------------------------
    def recover(self) -> None:
        self.wal = self.handle.open_wal()
        records = self.wal.recover()
        with self._lock:
            for record_id, record in sorted(records.items(), key=lambda item: item[1].entry_date):
                if record.queue == QUEUE:
                    self._pending[record_id] = record
        self.events(NodeEvent.RECOVERED, shard=self.handle.shard, epoch=self.handle.epoch, records=len(self._pending))

    def start(self) -> None:
        os.makedirs(self.sink, exist_ok=True)
        if self.handle.home:
            self._spawn(self._admit_loop, "admit")
        self._spawn(self._deliver_loop, "deliver")

    def pause(self) -> None:
        self._paused.set()
        self.events(NodeEvent.PAUSED, shard=self.handle.shard, incarnation=self.incarnation)

    def resume(self) -> None:
        self._abort.clear()
        self._paused.clear()
        self.events(NodeEvent.RESUMED, shard=self.handle.shard, incarnation=self.incarnation)

    def abort_open_sessions(self) -> None:
        self._abort.set()

    def abandon(self, reason: str = "its incarnation is dead") -> None:
        """The incarnation died: admit and finish nothing more, and abandon the WAL (no
        sync, no close: `WriteAheadLog.abandon`); a commit in flight is never
        acknowledged. At once, whatever the storage does; `stop()` does the rest."""
        self._stopped.set()
        wal = self.wal
        if wal is not None:
            wal.abandon(f"{reason}; shard {self.handle.shard} at epoch {self.handle.epoch}")

    def stop(self) -> None:
        self._stopped.set()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout=10)
        wal, self.wal = self.wal, None
        if wal is not None:
            try:
                wal.close()
            except Exception as error:  # noqa: BLE001 - a fenced WAL refuses its last sync
                log.info("closing the WAL of %s: %s", self.handle.shard, error)

    def allow(self, count: int) -> None:
        """Admit `count` more records (a drill tops a node up before a fault)."""
        with self._lock:
            if self.admit_limit >= 0:
                self.admit_limit += count

    def drained(self) -> bool:
        with self._lock:
            return not self._pending and not self.handle.home

    def holds_hand_over_state(self) -> bool:
        return False  # the ledger's records live in its WAL and its sink, on no machine of their own

    def load(self) -> dict:
        with self._lock:
            return {QUEUE: QueueLoad(len(self._pending), 0)}

    def active_threads(self) -> int:
        return sum(1 for thread in self._threads if thread.is_alive())

    # -- work ------------------------------------------------------------------------
    def _may_work(self) -> bool:
        return not self._paused.is_set() and not self._stopped.is_set()

    def _admit_loop(self) -> None:
        sequence = 0
        while not self._stopped.wait(self.admit_interval):
            with self._lock:
                limit = self.admit_limit
            if limit >= 0 and self._admitted >= limit:
                continue  # wait for `allow` to raise the limit
            if not self._may_work():
                continue
            batch = []
            for _ in range(self.admit_batch):
                sequence += 1
                record_id = f"{self.incarnation}.{sequence}"
                batch.append(
                    FlowFileRecord(record_id, {"source": self.incarnation}, None, QUEUE, 0, sequence, sequence)
                )
            for record in batch:
                append_line(os.path.join(self.sink, "admitting.log"), record.id)
            outcome = self._commit([Put(record) for record in batch], "admit")
            if outcome == "stop":
                return
            if outcome == "abort":
                continue  # rolled back: these ids stay "admitting" only, never queued
            with self._lock:
                for record in batch:
                    self._pending[record.id] = record
            for record in batch:
                append_line(os.path.join(self.sink, "admitted.log"), record.id)
            self._admitted += len(batch)

    def _deliver_loop(self) -> None:
        while not self._stopped.is_set():
            with self._lock:
                record = next(iter(self._pending.values()), None)
            if record is None or not self._may_work():
                self._stopped.wait(self.deliver_interval * 5)
                continue
            self._abort.clear()
            # Idempotent sink: temporary name, then rename to the id's own name, so a
            # zombie's half-finished delivery and the adopter's retry collapse into one.
            temporary = os.path.join(self.sink, f".tmp-{uuid.uuid4().hex}")
            with open(temporary, "w") as out:
                out.write(record.id)
            os.replace(temporary, os.path.join(self.sink, f"out-{record.id}"))
            if self._abort.is_set():
                continue  # the session was aborted: roll back (the record stays queued)
            append_line(os.path.join(self.sink, "finishing.log"), record.id)
            outcome = self._commit([Delete(record.id)], "finish")
            if outcome == "stop":
                return
            if outcome == "abort":
                continue  # rolled back: the record stays queued and is delivered again
            with self._lock:
                self._pending.pop(record.id, None)
            append_line(
                os.path.join(self.sink, "finished.log"),
                f"{record.id} {self.handle.shard} {self.handle.epoch} {self.incarnation} {time.time():.3f}",
            )
            self.delivered += 1
            if self.deliver_interval:
                self._stopped.wait(self.deliver_interval)

    def _commit(self, updates, what: str) -> str:
        """One durable WAL transaction: "ok", "abort" (the session was rolled back by
        the session guard) or "stop" (this runtime must never write again)."""
        while not self._stopped.is_set():
            if self._abort.is_set():
                return "abort"
            try:
                self.handle.gate.check()
            except SessionExpiredError as error:
                self.events(
                    NodeEvent.REFUSED, shard=self.handle.shard, epoch=self.handle.epoch, what=what, error=str(error)
                )
                return "stop"
            except ClusterError:
                self._stopped.wait(0.05)  # the gate is closed: wait for it to open
                continue
            wal = self.wal
            if wal is None:
                return "stop"
            try:
                wal.update(updates)
                return "ok"
            except Exception as error:  # noqa: BLE001 - fenced (LeaseLost), stale epoch, or storage down
                self.rejected = f"{type(error).__name__}: {error}".splitlines()[0][:300]
                log.error(
                    "rejected write to shard %s at epoch %d by %s (%s): %s",
                    self.handle.shard,
                    self.handle.epoch,
                    self.incarnation,
                    what,
                    self.rejected,
                )
                self.events(
                    NodeEvent.REJECTED_WRITE,
                    shard=self.handle.shard,
                    epoch=self.handle.epoch,
                    what=what,
                    error=self.rejected,
                )
                # The error alone cannot tell a fence from an outage (a pipeline with no
                # DataNode left also reads as a lost lease): ZooKeeper's ownership decides.
                try:
                    self.handle.verify_ownership()
                except FencedError as fenced:
                    log.error("%s", fenced)
                    self.events(
                        NodeEvent.FENCED, shard=self.handle.shard, epoch=self.handle.epoch, error=str(fenced)[:300]
                    )
                    self._stopped.set()
                    return "stop"
                except Exception:  # noqa: BLE001 - ZooKeeper unreachable: the session guard decides
                    pass
                if not self._wait_for_storage(wal):
                    return "stop"
                # The failed transaction may or may not have reached the disk; Put and
                # Delete are idempotent by id, so it is simply written again.
        return "stop"

    def _wait_for_storage(self, wal) -> bool:
        """Storage outage: every commit fails and rolls back; one line when it starts,
        one when it ends. A checkpoint is a roll of the WAL (which every update after a
        failed write tries first anyway); it succeeds once HDFS is back."""
        self.events(NodeEvent.STORAGE_DOWN, shard=self.handle.shard, epoch=self.handle.epoch)
        log.error(
            "shard %s: storage unavailable; commits roll back and are retried until it returns", self.handle.shard
        )
        started = time.monotonic()
        while not self._stopped.wait(1.0):
            try:
                wal.checkpoint()
            except Exception:  # noqa: BLE001 - still down: no stack trace per attempt
                continue
            log.warning(
                "shard %s: storage is back after %.1fs; resuming", self.handle.shard, time.monotonic() - started
            )
            self.events(NodeEvent.STORAGE_UP, shard=self.handle.shard, epoch=self.handle.epoch)
            return True
        return False

    def _spawn(self, target, name: str) -> None:
        thread = threading.Thread(target=target, name=f"ledger {name} {self.handle.shard}", daemon=True)
        thread.start()
        self._threads.append(thread)


def read_finished(sink: str) -> list[tuple[str, str, int, str, float]]:
    """(id, shard, epoch, incarnation, time) of every finish, in log order."""
    try:
        with open(os.path.join(sink, "finished.log")) as file:
            rows = [line.split() for line in file if line.strip()]
    except FileNotFoundError:
        return []
    return [(r[0], r[1], int(r[2]), r[3], float(r[4])) for r in rows]


def check_ledger(sink: str) -> dict:
    """Count lost, duplicated and unexpected ids in a ledger sink directory."""

    def lines(name):
        try:
            with open(os.path.join(sink, name)) as file:
                return [line.split()[0] for line in file if line.strip()]
        except FileNotFoundError:
            return []

    admitting, admitted, finished = set(lines("admitting.log")), set(lines("admitted.log")), lines("finished.log")
    finishing = set(lines("finishing.log"))
    counts: dict[str, int] = {}
    for record_id in finished:
        counts[record_id] = counts.get(record_id, 0) + 1
    delivered = {name[4:] for name in os.listdir(sink) if name.startswith("out-")} if os.path.isdir(sink) else set()
    finished_at_crash = (admitted - set(counts)) & finishing & delivered
    return {
        "admitted": len(admitted),
        "finished": len(counts) + len(finished_at_crash),
        "finished_at_crash": sorted(finished_at_crash),
        "lost": sorted(admitted - set(counts) - finished_at_crash),
        "duplicated": sorted(record_id for record_id, count in counts.items() if count > 1),
        "unexpected": sorted(set(counts) - admitting),
        "missing_output": sorted(set(counts) - delivered),
    }
