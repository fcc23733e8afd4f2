"""In-process crashes of a provenance repository at its fault seams, and the check after.

`SimulatedCrash` raises `Crash` at a chosen call of one seam, and at every seam called
after it: a crashed process takes no further step, so neither may the repository's
other threads. The exception stops the thread it is raised in (a failed rollover,
merge or indexing stops the repository), and `close` then stops the rest without
finishing anything, which leaves the files as the crash left them; the page cache is
not lost, as in a process crash.

`Ledger` keeps the events a test registered and got ids for. After a recovery,
`check_every_event_once` asks the repository for each of them: stored once, in id
order, nothing else stored, and found exactly once by its uuid and by its time.
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from collections.abc import Iterator, Mapping

from repositories.provenance import EventType, ProvenanceEvent, ProvenanceHooks, ProvenanceQuery, ProvenanceRepository
from repositories.provenance import hooks as seams

HELD_FOR_S = 30.0  # the longest a held seam waits for the test to let it go
RECOVERY_S = 30.0  # the longest a recovery may take to merge and index what it found


class Crash(Exception):
    """The simulated death of the process at a fault seam."""


def crashed(error: BaseException) -> bool:
    """Whether `error` is the simulated crash, as raised at a seam or as the repository
    reports the failure of its background work."""
    return isinstance(error, Crash) or isinstance(error.__cause__, Crash)


@contextlib.contextmanager
def life_of(repo, *, hold: threading.Event | None = None) -> Iterator[None]:
    """The block runs on `repo` until it ends or the simulated crash stops it; then the
    held seams are let go and the repository is closed (a crashed one finishes nothing)."""
    try:
        yield
    except Exception as error:
        if not crashed(error):
            raise
    finally:
        if hold is not None:
            hold.set()
        repo.close()


@contextlib.contextmanager
def recovered(config, clock) -> Iterator[ProvenanceRepository]:
    """The repository opened again with no seam, once its recovery merged and indexed
    everything; closed after the block."""
    repo = ProvenanceRepository(config, clock=clock)
    try:
        repo.wait_idle(RECOVERY_S)
        yield repo
    finally:
        repo.close()


class SimulatedCrash:
    """Seam handlers: crash at call number `occurrence` of `seam` (counting only the calls
    whose keyword arguments include `where`, if given), and at every seam after that.
    With no `seam`, they only count the calls.

    Calls count once the object is armed (at once, unless `armed=False`; then `arm`).
    `hold`, if given to `arm`, is an Event every seam called from another thread than
    the one that made this object waits for: the test registers what must be in the
    journals when the background work reaches its seams, then sets it.
    """

    def __init__(
        self,
        seam: str | None = None,
        occurrence: int = 1,
        *,
        where: Mapping[str, object] | None = None,
        armed: bool = True,
    ):
        if seam is not None and seam not in seams.SEAMS:
            raise ValueError(f"{seam!r} is not a provenance seam; the seams are {seams.SEAMS}")
        self.seam, self.occurrence, self.where = seam, occurrence, dict(where or {})
        self.armed = armed
        self.hold: threading.Event | None = None
        self.calls: Counter[str] = Counter()
        self.crashed: tuple[str, dict] | None = None
        self._owner = threading.current_thread()
        self._lock = threading.Lock()

    def arm(self, hold: threading.Event | None = None) -> None:
        self.hold, self.armed = hold, True

    def hooks(self) -> ProvenanceHooks:
        return ProvenanceHooks({name: self._handler(name) for name in seams.SEAMS})

    def _handler(self, name: str):
        def at_seam(**context) -> None:
            hold = self.hold
            if hold is not None and threading.current_thread() is not self._owner:
                if not hold.wait(HELD_FOR_S):
                    raise AssertionError(f"seam {name} held for {HELD_FOR_S} s: the test never let it go")
            with self._lock:
                if self.crashed is not None:
                    raise Crash(f"{name}: the process crashed already at {self.crashed[0]}")
                if not self.armed or any(context.get(key) != value for key, value in self.where.items()):
                    return
                self.calls[name] += 1
                if name == self.seam and self.calls[name] == self.occurrence:
                    self.crashed = (name, context)
                    raise Crash(f"crash at {name} {context}")

        return at_seam


class Ledger:
    """The events a test registered and got ids for, by uuid; each has its own time."""

    def __init__(self, start_ms: int):
        self._next_ms = start_ms
        self.acknowledged: dict[str, int] = {}  # uuid -> event id
        self.times: dict[str, int] = {}

    def register(self, repo, count: int, tag: str) -> range:
        batch = []
        for i in range(count):
            uuid = f"{tag}-{i}"
            self.times[uuid] = self._next_ms
            self._next_ms += 1000
            batch.append(ProvenanceEvent(EventType.CREATE, uuid, "checked", event_time_ms=self.times[uuid]))
        ids = repo.register_events(batch)  # raises if the repository crashed: nothing acknowledged
        for offset, event in enumerate(batch):
            self.acknowledged[event.flowfile_uuid] = ids[offset]
        return ids


def check_every_event_once(repo, ledger: Ledger) -> None:
    """Every acknowledged event is stored once with its id, `events` returns them in id
    order and nothing else, and one uuid query and one time-range query find each once."""
    stored = repo.events(0, 10**6)
    ids = [e.event_id for e in stored]
    assert ids == sorted(set(ids)), f"events out of order or twice: {ids}"
    assert {e.flowfile_uuid: e.event_id for e in stored} == ledger.acknowledged, (
        f"lost: {sorted(set(ledger.acknowledged) - {e.flowfile_uuid for e in stored})}, "
        f"unexpected: {sorted({e.flowfile_uuid for e in stored} - set(ledger.acknowledged))}"
    )
    assert len(stored) == len(ledger.acknowledged)
    for uuid, event_id in ledger.acknowledged.items():
        by_uuid = [e.event_id for e in repo.query(ProvenanceQuery(flowfile_uuid=uuid)).events]
        assert by_uuid == [event_id], f"uuid query for {uuid} (id {event_id}) found {by_uuid}"
        at = ledger.times[uuid]
        by_time = repo.query(ProvenanceQuery(start_ms=at, end_ms=at))
        assert [e.event_id for e in by_time.events] == [event_id], (
            f"time query at {at} for {uuid} (id {event_id}) found {[e.event_id for e in by_time.events]}"
        )
        assert by_time.skipped_missing == 0 and not by_time.errors
    every = repo.query(ProvenanceQuery(start_ms=0, limit=10**6))
    assert sorted(e.event_id for e in every.events) == sorted(ledger.acknowledged.values())
    assert every.skipped_missing == 0, "the index returned ids that no event file holds"
