"""`ProcessSession`: the unit of work of a processor, as in NiFi's ProcessSession.

A processor gets FlowFiles from its incoming queues, creates, clones, reads, writes and
routes them, and commits. Until the commit nothing is visible: FlowFiles polled stay
counted in their queue (unacknowledged), new content sits in claims nobody else
references, provenance events wait.

Commit order (the committer carries it out; see `commit`):
  1. content durable (one group sync of the content repository),
  2. one WAL transaction with every FlowFile change, processor state and the
     provenance outbox,
  3. the in-memory queues (acknowledge sources, enqueue destinations, swap),
  4. claimant counts (increments before decrements),
  5. provenance events,
  6. `on_success`.
A crash before 2 leaves nothing behind but unreferenced content, which the content
repository's recovery destroys; after 2 the WAL is the truth and memory is rebuilt.

Provenance events carry the attributes as they are at commit; SEND keeps the
attributes as they were when sent.

Copy-on-write: a FlowFile is immutable. Every call that changes one (attributes,
content, penalty) returns its new version, and the session accepts only the latest
version of each FlowFile it holds; content is never written in place, a write puts
the new bytes in a new claim and the old claim keeps its bytes for whoever else
references it.

Not thread-safe: a session belongs to one task.
"""

from __future__ import annotations

import enum
import io
import os
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, BinaryIO, Protocol, TypedDict

from repositories.claims import InvalidClaimError
from repositories.content.errors import (
    ContentCorrupted,
    ContentNotFound,
    ContentRepositoryError,
    ContentTruncated,
    UnsafeContentPath,
)
from repositories.content.exporting import write_all
from repositories.provenance import EventType, InvalidEventError, ProvenanceEvent
from repositories.provenance.event_batch import EventRow, row_of

from .commit_gate import CommitGate
from .errors import (
    CommitError,
    FlowFileNotTransferred,
    NotAdmitted,
    SessionError,
    UnknownRelationship,
    UnreadableContent,
)
from .flowfile import FlowFile
from .identifiers import new_uuid
from .processor_stats import FAILURE, SessionCounts, error_attribute

if TYPE_CHECKING:
    from types import TracebackType

    from _typeshed import SupportsRead, WriteableBuffer

    from repositories.claims import ContentClaim, ResourceClaim
    from repositories.content import ContentStore
    from repositories.swap import SwapSummary

    from .queue import FlowFileQueue
    from .shard import QueueShard

SUCCESS = "success"
# `prefetch` reads contents of at most this size, and at most this much in all.
PREFETCH_MAX_CONTENT = 64 << 10
PREFETCH_BUDGET = 16 << 20


class _Route(enum.Enum):
    SOURCE = "source"  # transfer back to the queue it came from


_SOURCE = _Route.SOURCE
# Event types as rows hold them (see `Transaction.events`).
_CREATE, _JOIN, _FORK, _CLONE = (
    EventType.CREATE.value,
    EventType.JOIN.value,
    EventType.FORK.value,
    EventType.CLONE.value,
)
_DROP, _EXPIRE = EventType.DROP.value, EventType.EXPIRE.value
_CONTENT_MODIFIED, _ATTRIBUTES_MODIFIED = EventType.CONTENT_MODIFIED.value, EventType.ATTRIBUTES_MODIFIED.value
_SOURCE_EVENTS = (EventType.RECEIVE, EventType.REPLAY)  # an explicit one stands in for CREATE
_NO_ATTRIBUTES: dict[str, str] = {}
# The explicit events whose rows the session builds itself (one per FlowFile a source
# receives, a sink sends or a router routes): their one rule, a transit URI or a
# relationship, is checked when reported.
_ROW_EVENTS = (EventType.SEND, EventType.RECEIVE, EventType.ROUTE)
# What a child does not take from its parents (NiFi's session leaves them too)
_NOT_INHERITED = ("alternate.identifier", "discard.reason")
# The session builds its `EventRow`s positionally (in the order of the fields, which is
# the columns'): a keyword call costs some 0.7 us more per event, several per FlowFile.
# What the content repository raises for one claim that no retry will mend: its bytes
# fail their checksums (or the checksums are missing or damaged), end short, are gone,
# or its claim is malformed. `read` turns them into `UnreadableContent` naming the
# FlowFile. The rest (`ContentUnavailable`: storage down; a closed repository) say
# nothing about the FlowFile, and pass through: the session rolls back and is retried.
UNREADABLE_ERRORS = (ContentCorrupted, ContentTruncated, ContentNotFound, UnsafeContentPath, InvalidClaimError)
# What `read` returns: the content store's stream, or the bytes `prefetch` holds.
ContentReader = io.RawIOBase | io.BytesIO


class Committer(Protocol):
    """What carries out a session's commit (`flow.commit`: `DurableCommitter` through the
    WAL, `HeldCommitter` for the stateless engine). `commit` raises `CommitError` when
    the transaction was not applied; `hold_claims` takes the content claims of a failed
    commit whose WAL outcome is unknown (`CommitError.wal_written`)."""

    def commit(self, tx: Transaction) -> None: ...

    def hold_claims(self, claims: Iterable[ContentClaim]) -> None: ...


class _EventArguments(TypedDict, total=False):
    """The fields of an explicit event (`send`, `receive`, `replay`, `route`) that its
    `ProvenanceEvent` gets beyond those every event of the FlowFile has."""

    transit_uri: str
    details: str | None
    parent_uuids: tuple[str, ...]
    child_uuids: tuple[str, ...]
    relationship: str


class _Entry:
    __slots__ = (
        "original",
        "current",
        "source",
        "relationship",
        "removed",
        "expired",
        "parents",
        "clone_of",
        "events",
        "wrote",
    )

    def __init__(self, original: FlowFile | None, current: FlowFile, source: FlowFileQueue | None):
        self.original = original  # the version polled from `source`, or None if created here
        self.current = current
        self.source = source
        self.relationship: str | _Route | None = None
        self.removed = False
        self.expired = False
        self.parents: tuple[str, ...] = ()
        self.clone_of: str | None = None
        # (event type, its arguments, the attributes when it was reported or None for those at commit)
        self.events: list[tuple[EventType, _EventArguments, dict[str, str] | None]] = []
        self.wrote = False


@dataclass
class Transaction:
    """Everything a commit must apply, built by the session for its committer."""

    component_id: str
    component_type: str
    acknowledged: dict[FlowFileQueue, list[FlowFile]] = field(default_factory=dict)  # leaving each queue
    transfers: dict[FlowFileQueue, list[FlowFile]] = field(default_factory=dict)  # entering each queue
    puts: list[FlowFile] = field(default_factory=list)  # FlowFile versions for the WAL
    deletes: list[str] = field(default_factory=list)  # FlowFile ids gone from the WAL
    # whole swap files whose FlowFiles leave their queue (a drop)
    swap_drops: list[tuple[FlowFileQueue, SwapSummary]] = field(default_factory=list)
    claim_deltas: dict[ResourceClaim, int] = field(default_factory=dict)  # +n / -n claimants
    wrote_content: bool = False
    # Provenance events as rows (`repositories.provenance.event_batch.EventRow`), far
    # cheaper to build than events, which the committer turns into one batch.
    events: list[EventRow] = field(default_factory=list)
    state: dict[str, str] | None = None
    on_success: Callable[[], None] | None = None
    on_failure: Callable[[BaseException], None] | None = None


class _ContentOutput(io.RawIOBase):
    """The stream `session.write(flowfile)` returns, a context manager. Leaving the
    `with` block normally closes the new claim (not synced: the commit syncs) and sets
    `flowfile` to the new version; leaving it with an exception aborts the claim and
    leaves the FlowFile as it was."""

    def __init__(self, session: ProcessSession, flowfile: FlowFile):
        super().__init__()
        self._session = session
        self._source = flowfile
        self._writer = session._content.write()
        self._size = 0
        self.flowfile: FlowFile | None = None

    def writable(self) -> bool:
        return True

    # Narrower than io.RawIOBase's (any buffer): `ClaimWriter.write` takes bytes-like objects only.
    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        """Append `data` to the new content; returns how many bytes were taken."""
        written = self._writer.write(data)
        self._size += len(data)
        return written if written is not None else len(data)

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if kind is not None:
            self._writer.abort()
            super().close()
            return
        claim = self._writer.close(sync=False)
        self.flowfile = self._session._replace_content(self._source, claim, self._size)
        super().close()


class _ContentInput(io.RawIOBase):
    """The stream `session.read(flowfile)` returns: the content store's stream, whose
    errors for the claim itself (`UNREADABLE_ERRORS`, met at any byte: a damaged block
    is found when it is read) come out as `UnreadableContent` naming the FlowFile."""

    def __init__(self, stream: BinaryIO, flowfile: FlowFile):
        super().__init__()
        self._stream = stream
        self._flowfile = flowfile

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        try:
            return self._stream.read(size)
        except UNREADABLE_ERRORS as error:
            raise UnreadableContent(self._flowfile, error) from error

    def read1(self, size: int = -1) -> bytes:
        try:
            return self._stream.read1(size) if hasattr(self._stream, "read1") else self._stream.read(size)
        except UNREADABLE_ERRORS as error:
            raise UnreadableContent(self._flowfile, error) from error

    def readinto(self, buffer: WriteableBuffer) -> int:
        try:
            # `ContentStore.open_read` says BinaryIO, which has no `readinto`; every store's
            # stream is an `io.RawIOBase` or an `io.BufferedIOBase`, which have it.
            taken: int = self._stream.readinto(buffer)  # type: ignore[attr-defined]
            return taken
        except UNREADABLE_ERRORS as error:
            raise UnreadableContent(self._flowfile, error) from error

    def readline(self, size: int | None = -1) -> bytes:
        try:
            return self._stream.readline(-1 if size is None else size)
        except UNREADABLE_ERRORS as error:
            raise UnreadableContent(self._flowfile, error) from error

    def close(self) -> None:
        if not self.closed:
            try:
                self._stream.close()
            finally:
                super().close()


class ProcessSession:
    """One processor task's unit of work (see the module docstring).

    The engine builds it: `committer` carries out the commit (durable or held),
    `content` is the content repository, `shard` the queues' owner (polling, state),
    `incoming` the queues the processor reads, `outgoing` its relationships' queues,
    `auto_terminated` the relationships that drop what is sent to them, `gate` the
    node's commit gate (`flow.commit_gate.CommitGate`; None: always admitted) that
    `check_admitted` asks, the one the committer consults at every commit, `penalty_ms`
    how long `penalize` holds a FlowFile back, `max_polled` how many FlowFiles it polls
    at most in all (None: as many as asked; the engine retries a failing processor
    one FlowFile at a time with 1). Every method raises `SessionError` once the session
    is committed or rolled back, and for a FlowFile that is not the latest version this
    session holds."""

    def __init__(
        self,
        *,
        component_id: str,
        component_type: str,
        committer: Committer,
        content: ContentStore,
        shard: QueueShard,
        incoming: Iterable[FlowFileQueue] = (),
        outgoing: Mapping[str, Sequence[FlowFileQueue]] | None = None,
        auto_terminated: Iterable[str] = (),
        clock_ms: Callable[[], int],
        gate: CommitGate | None = None,
        penalty_ms: int = 30_000,
        max_polled: int | None = None,
    ):
        self.component_id = component_id
        self.component_type = component_type
        self._committer = committer
        self._gate = gate
        self._content = content
        self._shard = shard
        self._incoming = list(incoming)
        self._outgoing = dict(outgoing or {})
        self._auto_terminated = set(auto_terminated)
        self._clock_ms = clock_ms
        self._penalty_ms = penalty_ms
        self._max_polled = max_polled
        self._polled: list[str] = []  # ids of the FlowFiles polled, kept after commit or rollback
        self._entries: dict[str, _Entry] = {}
        self._written: list[ContentClaim] = []  # content claims written by this session (+1 each)
        self._prefetched: dict[ContentClaim, bytes] = {}  # content claim -> its bytes (`prefetch`)
        self._state: dict[str, str] | None = None
        self._next_queue = 0
        self._done = False
        self._committed = False
        self._read_bytes = 0  # sizes of the contents opened for reading (`counts`)
        self._pending_counts: SessionCounts | None = None  # built with the transaction
        self.counts: SessionCounts | None = None  # what the session did, once committed

    # -- getting FlowFiles --------------------------------------------------------

    def get(self) -> FlowFile | None:
        """The next FlowFile of the incoming queues, or None when none is available (all
        empty, penalized, or polled by other sessions). See `get_batch`."""
        batch = self.get_batch(1)
        return batch[0] if batch else None

    def get_batch(self, max_count: int) -> list[FlowFile]:
        """Up to `max_count` FlowFiles from the incoming queues, in each queue's priority
        order, starting with the next queue at each call (round-robin between them).

        What it returns belongs to this session until commit or rollback: the FlowFiles
        stay counted in their queue (unacknowledged, so back-pressure sees them) and
        leave it only when the commit is durable; a rollback puts them back in their
        place. Expired FlowFiles found on the way are not returned: they are dropped
        with an EXPIRE event at commit. May return fewer, or none."""
        self._check_open()
        result: list[FlowFile] = []
        queues = self._incoming
        if self._max_polled is not None:
            max_count = min(max_count, self._max_polled - len(self._polled))
        now = self._clock_ms()
        for step in range(len(queues)):
            if len(result) >= max_count:
                break
            queue = queues[(self._next_queue + step) % len(queues)]
            polled, expired = self._shard.poll(queue, max_count - len(result), now)
            for flowfile in polled:
                self._entries[flowfile.id] = _Entry(flowfile, flowfile, queue)
                self._polled.append(flowfile.id)
            for flowfile in expired:
                entry = self._entries[flowfile.id] = _Entry(flowfile, flowfile, queue)
                entry.removed = entry.expired = True
            result += polled
        if queues:
            self._next_queue = (self._next_queue + 1) % len(queues)
        return result

    @property
    def polled_ids(self) -> tuple[str, ...]:
        """The ids of the FlowFiles this session polled (expired ones not counted), in
        order; still known after the commit or the rollback."""
        return tuple(self._polled)

    def queued(self) -> int:
        """How many FlowFiles the incoming queues are responsible for: penalized, swapped
        out and polled by uncommitted sessions (this one included) counted."""
        return sum(queue.count for queue in self._incoming)

    # -- creating -----------------------------------------------------------------

    def create(
        self,
        parents: FlowFile | Iterable[FlowFile] | None = None,
        attributes: dict[str, str] | None = None,
        *,
        identity: str | None = None,
    ) -> FlowFile:
        """A new FlowFile, with no content, owned by this session until it is transferred
        or removed (a commit refuses one that is neither).

        Without parents it gets `attributes` and a CREATE event at commit (none if a
        RECEIVE or a REPLAY is reported for it). With parents (one FlowFile or several, all held by
        this session) it inherits, as in NiFi, the attributes they have in common but
        `alternate.identifier` and `discard.reason` (and, of several, `filename`: a
        join is named by its id), then `attributes`, and the earliest lineage start;
        the commit records a FORK event for a single parent, a JOIN for several.

        `identity` is the new FlowFile's id when the processor derives it (a step that
        gives the same output id when it reruns the same input); a random one otherwise.
        A FlowFile this session holds already under that id is refused (`SessionError`)."""
        self._check_open()
        now = self._clock_ms()
        if identity is not None and identity in self._entries:
            raise SessionError(f"{self.component_id}: this session holds a FlowFile with the id {identity} already")
        if attributes and not all(type(value) is str for value in attributes.values()):
            attributes = {key: str(value) for key, value in attributes.items()}  # as put_attribute stores them
        if parents is None:
            flowfile = FlowFile.new(now, attributes, identity=identity)
            self._entries[flowfile.id] = _Entry(None, flowfile, None)
            return flowfile
        parents = [parents] if isinstance(parents, FlowFile) else list(parents)
        for parent in parents:
            self._entry_of(parent)
        inherited = dict(parents[0].attributes)
        for parent in parents[1:]:
            inherited = {k: v for k, v in inherited.items() if parent.attributes.get(k) == v}
        for name in _NOT_INHERITED:
            inherited.pop(name, None)
        if len(parents) > 1:
            inherited.pop("filename", None)  # a join's name is its own id, as NiFi names it
        if attributes:
            inherited.update(attributes)
        lineage = min(p.lineage_start_date for p in parents)
        flowfile = FlowFile.new(now, inherited, lineage_start=lineage, identity=identity)
        entry = self._entries[flowfile.id] = _Entry(None, flowfile, None)
        entry.parents = tuple(p.id for p in parents)
        return flowfile

    def clone(self, flowfile: FlowFile, offset: int = 0, size: int | None = None) -> FlowFile:
        """A new FlowFile with the same attributes and the same content claim, or the
        slice of it from `offset`, `size` bytes long: no byte is copied, and the claim
        gets one more claimant when the commit puts the clone in a queue. The commit
        records a CLONE event on `flowfile`."""
        self._entry_of(flowfile)
        claim = flowfile.content_claim
        if claim is not None and (offset or (size is not None and size != claim.length)):
            length = claim.length - offset if size is None else size
            claim = type(claim)(claim.resource, claim.offset + offset, length)
        copy = FlowFile(
            new_uuid(),
            flowfile.attributes,
            claim,
            "",
            claim.length if claim is not None else 0,
            self._clock_ms(),
            flowfile.lineage_start_date,
            0,
        )
        entry = self._entries[copy.id] = _Entry(None, copy, None)
        entry.clone_of = flowfile.id
        return copy

    # -- attributes ---------------------------------------------------------------

    def put_attribute(self, flowfile: FlowFile, key: str, value: str) -> FlowFile:
        """The new version of `flowfile` with `key` set to `str(value)` (copy-on-write:
        `flowfile` itself is unchanged; use the returned version from now on). `uuid`
        cannot be set: `flowfile` comes back as it is."""
        if key == "uuid":
            return flowfile
        attributes = dict(flowfile.attributes)
        attributes[key] = str(value)
        return self._replace(flowfile, flowfile.with_attributes(attributes))

    def put_all_attributes(self, flowfile: FlowFile, values: dict[str, str]) -> FlowFile:
        """The new version of `flowfile` with every one of `values` set (as text; `uuid`
        skipped). Copy-on-write, as `put_attribute`."""
        attributes = dict(flowfile.attributes)
        attributes.update((k, str(v)) for k, v in values.items() if k != "uuid")
        return self._replace(flowfile, flowfile.with_attributes(attributes))

    def remove_attribute(self, flowfile: FlowFile, key: str) -> FlowFile:
        """The new version of `flowfile` without `key` (the same version if it has no
        such attribute). Copy-on-write, as `put_attribute`."""
        if key not in flowfile.attributes:
            return self._replace(flowfile, flowfile)
        attributes = dict(flowfile.attributes)
        del attributes[key]
        return self._replace(flowfile, flowfile.with_attributes(attributes))

    # -- content ------------------------------------------------------------------

    def read(self, flowfile: FlowFile) -> ContentReader:
        """A binary stream of the FlowFile's content, empty when it has none (close it, or
        use `with`). Reading changes nothing. Raises `UnreadableContent` (at open or at
        any read) when the claim itself cannot be read: its bytes or their checksums
        are damaged, cut short or gone, which no retry mends; and what the content
        repository raises when it cannot be reached (`ContentUnavailable`)."""
        self._entry_of(flowfile)
        claim = flowfile.content_claim
        if claim is None:
            return io.BytesIO(b"")
        self._read_bytes += claim.length
        data = self._prefetched.get(claim)
        if data is not None:
            return io.BytesIO(data)
        try:
            stream = self._content.open_read(claim)
        except UNREADABLE_ERRORS as error:
            raise UnreadableContent(flowfile, error) from error
        return _ContentInput(stream, flowfile)

    def prefetch(self, flowfiles: Iterable[FlowFile]) -> None:
        """Read the small contents of `flowfiles` now, together (`read_bytes_many`'s one
        open and one checked read per run of claims side by side), so that `read` and
        `read_bytes` of them later in this session cost no storage round trip: one claim
        at a time, a content repository on HDFS pays several round trips per claim (an
        adopter reading a dead node's queue). Contents over `PREFETCH_MAX_CONTENT` are
        left to be streamed, and no more than `PREFETCH_BUDGET` bytes are held. Best
        effort: when the batch read fails, each content is read on its own later, and a
        content that cannot be read raises there, naming its claim, as without this."""
        claims: list[ContentClaim] = []
        budget = PREFETCH_BUDGET
        for flowfile in flowfiles:
            claim = flowfile.content_claim
            if claim is None or claim.length > PREFETCH_MAX_CONTENT or claim in self._prefetched:
                continue
            if claim.length > budget:
                break
            budget -= claim.length
            claims.append(claim)
        if len(claims) < 2:
            return  # one claim gains nothing from a batch read
        try:
            contents = self._content.read_many(claims)
        except (ContentRepositoryError, InvalidClaimError):
            return
        self._prefetched.update(zip(claims, contents, strict=False))

    def export_to(self, flowfile: FlowFile, destination: int | str | os.PathLike[str], append: bool = False) -> int:
        """Write the content of `flowfile` into a local file, as NiFi's
        `ProcessSession.exportTo(FlowFile, Path, append)`; returns the bytes written.
        `destination` is a path (created if missing, else truncated; with `append`,
        written after its end) or the descriptor of a file open for writing (written
        from its position and left open; `append` is then the descriptor's business).
        A claim in a local resource file is copied by the kernel once its checksums
        vouched for it (`ContentStore.export_to`), never through Python; any other
        claim is streamed. Raises `UnreadableContent` as `read` does (bytes before the
        damage may have been written: the caller removes what it wrote), what the
        content repository raises when it cannot be reached, and the destination's
        `OSError`. Reading changes nothing."""
        self._entry_of(flowfile)
        claim = flowfile.content_claim
        if isinstance(destination, int):
            fd, opened = destination, False
        else:
            # Never O_APPEND: the kernel copies into no file opened for appending.
            flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | (0 if append else os.O_TRUNC)
            fd, opened = os.open(destination, flags, 0o644), True
        try:
            if opened and append:
                os.lseek(fd, 0, os.SEEK_END)
            if claim is None:
                return 0
            self._read_bytes += claim.length
            data = self._prefetched.get(claim)
            if data is not None:
                return write_all(fd, data)
            try:
                return self._content.export_to(claim, fd)
            except UNREADABLE_ERRORS as error:
                raise UnreadableContent(flowfile, error) from error
        finally:
            if opened:
                os.close(fd)

    def read_bytes(self, flowfile: FlowFile) -> bytes:
        """The whole content of `flowfile` in memory (see `read`)."""
        with self.read(flowfile) as stream:
            return stream.read()

    def read_bytes_many(self, flowfiles: Iterable[FlowFile]) -> list[bytes]:
        """The whole content of each of `flowfiles`, in order, in memory: contents that
        lie side by side in the content repository are read together (one open and one
        checked read for many small claims). Raises as `read` does, for the first
        FlowFile whose content cannot be read."""
        flowfiles = list(flowfiles)
        for flowfile in flowfiles:
            self._entry_of(flowfile)
        claims = [f.content_claim for f in flowfiles if f.content_claim is not None]
        try:
            found = iter(self._content.read_many(claims) if claims else ())
        except UNREADABLE_ERRORS:
            # Which FlowFile: the first whose own read fails (clones share a claim).
            return [self.read_bytes(flowfile) for flowfile in flowfiles]
        self._read_bytes += sum(claim.length for claim in claims)
        return [next(found) if f.content_claim is not None else b"" for f in flowfiles]

    def write(self, flowfile: FlowFile) -> _ContentOutput:
        """A stream for new content of `flowfile`:
        `with session.write(ff) as out: out.write(...)`, then `out.flowfile` is the new
        version. Copy-on-write: the bytes go to a new claim; the old content is not
        touched, and its claim loses this FlowFile as a claimant only at commit. The new
        claim is synced by the commit (one group sync per commit, before the WAL)."""
        self._entry_of(flowfile)
        return _ContentOutput(self, flowfile)

    def write_bytes(self, flowfile: FlowFile, data: bytes) -> FlowFile:
        """The new version of `flowfile` whose content is `data` (copy-on-write, as
        `write`). If the write fails, the new claim is aborted and the error raised."""
        self._entry_of(flowfile)
        writer = self._content.write()
        try:
            writer.write(data)
        except BaseException:
            writer.abort()
            raise
        return self._replace_content(flowfile, writer.close(sync=False), len(data))

    def write_bytes_many(self, flowfiles: list[FlowFile], contents: list[bytes]) -> list[FlowFile]:
        """The new version of each of `flowfiles` whose content is the matching item of
        `contents` (copy-on-write, as `write`): for many small contents at once, which
        the content repository writes side by side. If a write fails, no FlowFile
        changes and the error is raised."""
        if len(flowfiles) != len(contents):
            raise SessionError(f"{self.component_id}: {len(flowfiles)} FlowFiles but {len(contents)} contents")
        entries = [self._entry_of(flowfile) for flowfile in flowfiles]
        if len({entry.current.id for entry in entries}) != len(entries):
            raise SessionError(f"{self.component_id}: a FlowFile is named twice in one write_bytes_many")
        claims = self._content.write_many(contents)
        self._written += claims
        written = []
        for entry, flowfile, claim, data in zip(entries, flowfiles, claims, contents, strict=False):
            entry.wrote = True
            new = entry.current = flowfile.with_content(claim, len(data))
            written.append(new)
        return written

    def attach_content(self, flowfile: FlowFile, claim: ContentClaim) -> FlowFile:
        """The new version of `flowfile` whose content is `claim`, a claim the content
        store made for this session (`take_file`: a file written outside it, Spark's
        output): like a claim this session wrote, its one claimant is this session's,
        released if the session rolls back (copy-on-write, as `write`)."""
        self._entry_of(flowfile)
        return self._replace_content(flowfile, claim, claim.length)

    @property
    def content_store(self) -> ContentStore:
        """The content store this session reads and writes: for a processor that hands
        claims to another system by reference (the Spark processors); content itself
        is read and written through the session."""
        return self._content

    def import_from(self, flowfile: FlowFile, stream: SupportsRead[bytes], chunk_size: int = 1 << 20) -> FlowFile:
        """The new version of `flowfile` whose content is what `stream` yields until its
        end, copied `chunk_size` bytes at a time (copy-on-write, as `write`)."""
        with self.write(flowfile) as out:
            while chunk := stream.read(chunk_size):
                out.write(chunk)
        assert out.flowfile is not None  # set as the block was left without an exception
        return out.flowfile

    def transform(self, flowfile: FlowFile, function: Callable[[ContentReader, _ContentOutput], object]) -> FlowFile:
        """The new version of `flowfile` whose content is what `function(input, output)`
        writes to `output` while reading the old content from `input`, streamed, never
        whole in memory (copy-on-write, as `write`)."""
        with self.read(flowfile) as source, self.write(flowfile) as out:
            function(source, out)
        assert out.flowfile is not None  # set as the block was left without an exception
        return out.flowfile

    def _replace_content(self, flowfile: FlowFile, claim: ContentClaim, size: int) -> FlowFile:
        self._written.append(claim)
        entry = self._entry_of(flowfile)
        entry.wrote = True
        new = entry.current = flowfile.with_content(claim, size)
        return new

    # -- routing ------------------------------------------------------------------

    def transfer(self, flowfile: FlowFile, relationship: str | None = None) -> None:
        """Route `flowfile` to `relationship` at commit: into every queue connected to it
        (each beyond the first gets a copy of its own, with a CLONE event), or dropped
        with a DROP event when the relationship is auto-terminated. Without a
        relationship, it goes back to the queue it was polled from. The last call for a
        FlowFile wins. Raises `UnknownRelationship` for a relationship neither connected
        nor auto-terminated, `SessionError` for a FlowFile created here and sent back."""
        entry = self._entry_of(flowfile)
        if relationship is None:
            if entry.source is None:
                raise SessionError(
                    f"{self.component_id}: a FlowFile created in this session has no "
                    "queue to go back to; name a relationship"
                )
            entry.relationship = _SOURCE
            return
        if relationship not in self._outgoing and relationship not in self._auto_terminated:
            raise UnknownRelationship(self.component_id, relationship, set(self._outgoing) | self._auto_terminated)
        entry.relationship = relationship

    def drops(self, relationship: str) -> bool:
        """True when what is sent to `relationship` is dropped (auto-terminated, connected
        nowhere): a processor need not make what no one receives (NiFi's
        `isAutoTerminated`)."""
        return relationship in self._auto_terminated and relationship not in self._outgoing

    def remove(self, flowfile: FlowFile) -> None:
        """Drop `flowfile` at commit: one polled from a queue leaves it with a DROP event,
        its content losing a claimant; one created in this session leaves no trace (no
        event, and content written for it is released). No later call may use it."""
        entry = self._entry_of(flowfile)
        entry.removed = True
        entry.relationship = None

    def penalize(self, flowfile: FlowFile) -> FlowFile:
        """The new version of `flowfile`, held back for the processor's penalty duration:
        the queue it is transferred to does not hand it out before then."""
        until = self._clock_ms() + self._penalty_ms
        return self._replace(flowfile, flowfile.penalized(until))

    # -- provenance reporting -----------------------------------------------------

    def send(self, flowfile: FlowFile, transit_uri: str, details: str | None = None) -> None:
        """Report that `flowfile` was sent to `transit_uri`: a SEND event at commit, with
        the attributes it has now (what was sent), not those it has at commit."""
        entry = self._entry_of(flowfile)
        # SEND keeps the attributes as they were when sent: the map itself, which no
        # later version changes (attribute maps are copied on write, never edited).
        entry.events.append(
            (EventType.SEND, _transfer_arguments(EventType.SEND, transit_uri, details), flowfile.attributes)
        )

    def receive(self, flowfile: FlowFile, transit_uri: str, details: str | None = None) -> None:
        """Report that `flowfile`'s data came from `transit_uri`: a RECEIVE event at commit
        (instead of the CREATE of a FlowFile created in this session)."""
        entry = self._entry_of(flowfile)
        entry.events.append((EventType.RECEIVE, _transfer_arguments(EventType.RECEIVE, transit_uri, details), None))

    def replay(self, flowfile: FlowFile, parent_uuid: str, details: str | None = None) -> None:
        """Report that `flowfile`, created in this session, replays the FlowFile
        `parent_uuid` of a provenance event: a REPLAY event at commit (instead of
        CREATE), with that FlowFile as its parent and `flowfile` as its child."""
        entry = self._entry_of(flowfile)
        entry.events.append(
            (
                EventType.REPLAY,
                {"parent_uuids": (parent_uuid,), "child_uuids": (flowfile.id,), "details": details},
                None,
            )
        )

    def route(self, flowfile: FlowFile, relationship: str, details: str | None = None) -> None:
        """Report a routing decision: a ROUTE event at commit naming `relationship`. It
        does not route the FlowFile (`transfer` does). An empty relationship is refused
        here, as ROUTE's rule would refuse it at commit."""
        entry = self._entry_of(flowfile)
        if not relationship:
            raise InvalidEventError("ROUTE event needs a relationship (where the FlowFile was routed)")
        entry.events.append((EventType.ROUTE, {"relationship": relationship, "details": details}, None))

    # -- processor state ----------------------------------------------------------

    def get_state(self) -> dict[str, str]:
        """A copy of the processor's state as this session sees it: what `set_state` set
        in it, or else the last committed state."""
        if self._state is not None:
            return dict(self._state)
        return self._shard.get_state(self.component_id)

    def set_state(self, state: dict[str, str]) -> None:
        """Replace the processor's whole state (keys and values as text). It is written in
        the session's WAL transaction, so it is durable exactly when the FlowFiles are,
        and other sessions see it only after the commit."""
        self._state = {str(k): str(v) for k, v in state.items()}

    # -- the shard and its owner --------------------------------------------------

    @property
    def shard_id(self) -> str:
        """The id of the shard whose queues this session works on ("local" on a standalone node)."""
        return self._shard.id

    @property
    def epoch(self) -> int:
        """The shard's epoch: it grows each time the shard gets a new owner (0 in memory)."""
        wal = self._shard.wal
        return wal.epoch if wal is not None else 0

    def check_admitted(self) -> None:
        """Raise `NotAdmitted` if this node may no longer commit for the shard (a clustered
        node that lost its ZooKeeper session, or a fenced shard).
        For a processor with a side effect outside the repositories (a rename into a
        dataset), asked just before it: a paused node whose shard was taken over must
        not make the effect after a takeover."""
        gate = self._gate
        if gate is not None:
            try:
                gate.admit(self.component_id)
            except Exception as error:  # noqa: BLE001 - whatever the gate raises, it refused
                raise NotAdmitted(
                    f"{self.component_id}: this node may not commit for shard {self.shard_id} now: {error}"
                ) from error

    # -- commit and rollback ------------------------------------------------------

    def commit(self) -> None:
        """Commit, in the order of the module docstring; the session is closed after.
        Raises `FlowFileNotTransferred` (a FlowFile neither transferred nor removed) or
        `CommitError` (the committer failed: storage, a refusing commit gate), with the
        session rolled back either way."""
        self.commit_async(None)

    def commit_async(
        self, on_success: Callable[[], None] | None = None, on_failure: Callable[[BaseException], None] | None = None
    ) -> None:
        """Commit; `on_success` runs when the commit is complete - at once in the
        traditional engine, as its last step after the WAL and provenance; when the
        whole flow succeeded in the stateless engine. An acknowledging source
        acknowledges there, never before (and records what it took in `set_state`,
        so that a crash before `on_success` does not make it take the same input again).
        On failure the session is rolled back and `on_failure(error)` is called; the
        error is raised too when there is no `on_failure`. In the stateless engine
        `on_failure` is held, and called when the whole flow fails. An exception that
        is not a `CommitError` from the committer (a test's simulated crash past the
        WAL) leaves the session closed without a rollback: the WAL may hold the commit."""
        self._check_open()
        self._prefetched = {}
        try:
            transaction = self._build_transaction()
        except BaseException as error:
            self.rollback()
            if on_failure is not None:
                on_failure(error)
                return
            raise
        transaction.on_success, transaction.on_failure = on_success, on_failure
        try:
            self._committer.commit(transaction)
        except CommitError as error:  # nothing was committed
            self._rollback_after_failed_commit(error)
            if on_failure is not None:
                on_failure(error)
                return
            raise
        except BaseException:
            # Past the commit point (e.g. a simulated crash in a test): no rollback.
            self._done = True
            raise
        self._done = self._committed = True
        self.counts = self._pending_counts

    def rollback(self, penalize: bool | Collection[str] = False) -> None:
        """Undo the session: polled FlowFiles go back to their place in their queues
        (penalized, if asked: True for all of them, or the ids of those to penalize),
        content written here is released, nothing reaches the WAL or provenance, and no
        callback runs. A no-op on a closed session."""
        if self._done:
            return
        self._done = True
        self._prefetched = {}
        self._release_unused(penalize)

    def _rollback_after_failed_commit(self, error: CommitError) -> None:
        self._done = True
        if error.wal_written and self._written:
            # The failed write may be replayed (see CommitError): its content stays
            # until the WAL settles it, and the committer releases it then.
            self._committer.hold_claims(self._written)
            self._written = []
        self._release_unused(False)

    def _release_unused(self, penalize: bool | Collection[str]) -> None:
        by_queue: dict[FlowFileQueue, list[FlowFile]] = {}
        until = self._clock_ms() + self._penalty_ms if penalize else 0
        for entry in self._entries.values():
            original, source = entry.original, entry.source
            if original is not None:
                assert source is not None  # what has an original was polled from `source`
                if penalize is True or (penalize and original.id in penalize):
                    original = original.penalized(until)
                by_queue.setdefault(source, []).append(original)
        for queue, flowfiles in by_queue.items():
            queue.requeue(flowfiles)
        for claim in self._written:
            self._content.decrement(claim)
        self._written = []
        self._entries = {}

    @property
    def is_closed(self) -> bool:
        """Committed or rolled back: no method but `rollback` (a no-op) may be called."""
        return self._done

    @property
    def is_committed(self) -> bool:
        """The commit went through (what it holds is durable, or held by the stateless
        engine's committer)."""
        return self._committed

    @property
    def touched(self) -> bool:
        """The session holds a FlowFile or a state change, so its commit would do
        something (the engine rolls back an untouched one and backs the processor off)."""
        return bool(self._entries) or self._state is not None

    # -- internals ----------------------------------------------------------------

    def _check_open(self) -> None:
        if self._done:
            raise SessionError(f"{self.component_id}: the session was already committed or rolled back")

    def _entry_of(self, flowfile: FlowFile) -> _Entry:
        self._check_open()
        entry = self._entries.get(flowfile.id)
        if entry is None:
            raise SessionError(f"{self.component_id}: FlowFile {flowfile.id} does not belong to this session")
        if entry.current is not flowfile and entry.current != flowfile:
            raise SessionError(
                f"{self.component_id}: FlowFile {flowfile.id} is not its latest version "
                "in this session (use the FlowFile the last call returned)"
            )
        if entry.removed:
            raise SessionError(f"{self.component_id}: FlowFile {flowfile.id} was already removed")
        return entry

    def _replace(self, flowfile: FlowFile, new: FlowFile) -> FlowFile:
        entry = self._entry_of(flowfile)
        entry.current = new
        return new

    def _build_transaction(self) -> Transaction:
        now = self._clock_ms()
        tx = Transaction(self.component_id, self.component_type)
        tx.wrote_content = bool(self._written)
        tx.state = self._state
        # Claimants by resource, before and after the commit (resources hash once).
        before: dict[ResourceClaim, int] = {}
        after: dict[ResourceClaim, int] = {}
        for claim in self._written:
            before[claim.resource] = before.get(claim.resource, 0) + 1  # the writer already counted itself
        entries = self._entries.values()
        not_routed = []
        fork_children: dict[str, list[str]] = {}
        clone_children: dict[str, list[str]] = {}
        for entry in entries:
            if entry.relationship is None and not entry.removed:
                not_routed.append(entry.current.id)
            if entry.removed and entry.original is None:
                continue  # created and removed here: no lineage to record (see below)
            if entry.parents and len(entry.parents) == 1:
                fork_children.setdefault(entry.parents[0], []).append(entry.current.id)
            if entry.clone_of is not None:
                clone_children.setdefault(entry.clone_of, []).append(entry.current.id)
        if not_routed:
            raise FlowFileNotTransferred(self.component_id, not_routed)
        events = tx.events
        puts, deletes, acknowledged, transfers = tx.puts, tx.deletes, tx.acknowledged, tx.transfers
        outgoing = self._outgoing
        # What the processor's statistics count (`flow.processor_stats`), in the branches
        # this loop takes anyway: in counts every polled FlowFile, less those sent back
        # to their queue (and expired ones, never polled); out every FlowFile put in a
        # queue, less those sent back.
        in_bytes = out_bytes = failures = sent_back = 0
        failed: FlowFile | None = None
        for entry in entries:
            original, current, source, relationship = entry.original, entry.current, entry.source, entry.relationship
            if entry.removed and original is None:
                # Created and removed in this session (a merge or split given up): it
                # leaves no event, as NiFi's session drops the events of such a FlowFile;
                # a claim written for it loses its one claimant below (`before`).
                continue
            if original is not None:
                assert source is not None  # what has an original was polled from `source`
                acknowledged.setdefault(source, []).append(original)
                in_bytes += original.size
                if original.content_claim is not None:
                    resource = original.content_claim.resource
                    before[resource] = before.get(resource, 0) + 1
            destination_queues: Sequence[FlowFileQueue] = ()
            dropped_by = None
            if entry.removed:
                if entry.expired:
                    dropped_by = "expired"
                    in_bytes -= current.size
            elif relationship is _SOURCE:
                assert source is not None  # `transfer` sends back to its queue only what was polled
                destination_queues = (source,)
                assert original is not None  # as `source`
                in_bytes -= original.size
                out_bytes -= current.size
                sent_back += 1
            else:
                assert relationship is not None  # `not_routed` above refused what is routed nowhere
                destination_queues = outgoing.get(relationship, ())
                if not destination_queues:
                    dropped_by = f"Auto-Terminated by {relationship} Relationship"
                if relationship == FAILURE:
                    failures += 1
                    failed = current
            self._events_for(entry, current, clone_children, fork_children, events, now)
            if not destination_queues:
                if original is not None:
                    deletes.append(current.id)
                    events.append(
                        EventRow(
                            None,
                            _EXPIRE if entry.expired else _DROP,
                            current.id,
                            (),
                            (),
                            self.component_id,
                            self.component_type,
                            original.attributes,
                            current.attributes,
                            original.content_claim,
                            current.content_claim,
                            None,
                            dropped_by,
                            None,
                            current.size,
                        )
                    )
                continue
            first = True
            for queue in destination_queues:
                if first:
                    version = current.in_queue(queue.id)
                    first = False
                else:
                    # One relationship, several connections: each gets its own FlowFile.
                    version = FlowFile(
                        new_uuid(),
                        current.attributes,
                        current.content_claim,
                        queue.id,
                        current.size,
                        now,
                        current.lineage_start_date,
                        current.penalty_expiration,
                    )
                    events.append(
                        EventRow(
                            None,
                            _CLONE,
                            current.id,
                            (),
                            (version.id,),
                            self.component_id,
                            self.component_type,
                            _NO_ATTRIBUTES,
                            current.attributes,
                            None,
                            current.content_claim,
                            None,
                            None,
                            None,
                            current.size,
                        )
                    )
                puts.append(version)
                out_bytes += current.size
                queued = transfers.get(queue)
                if queued is None:
                    queued = transfers[queue] = []
                queued.append(version)
                if version.content_claim is not None:
                    resource = version.content_claim.resource
                    after[resource] = after.get(resource, 0) + 1
        deltas = {}
        for resource, count in after.items():
            delta = count - before.get(resource, 0)
            if delta:
                deltas[resource] = delta
        for resource, count in before.items():
            if resource not in after:
                deltas[resource] = -count
        tx.claim_deltas = deltas
        self._pending_counts = SessionCounts(
            len(self._polled) - sent_back,
            in_bytes,
            self._read_bytes,
            sum(claim.length for claim in self._written),
            sum(len(queued) for queued in transfers.values()) - sent_back,
            out_bytes,
            failures,
            (failed.id, error_attribute(failed.attributes)) if failed is not None else None,
        )
        return tx

    def _events_for(
        self,
        entry: _Entry,
        current: FlowFile,
        clones: dict[str, list[str]],
        forks: dict[str, list[str]],
        events: list[EventRow],
        now: int,
    ) -> None:
        """Appends the entry's events to `events`, as rows (`event_batch.EventRow`)."""
        original = entry.original
        attributes = current.attributes
        uuid = current.id
        if (
            original is not None
            and not entry.events
            and not entry.parents
            and not entry.wrote
            and (attributes is original.attributes or entry.removed)
            and uuid not in forks
            and uuid not in clones
        ):
            return  # passed through as it came (the common case of a routing step): no event
        component, kind_name = self.component_id, self.component_type
        claim, size = current.content_claim, current.size
        before = original.attributes if original is not None else _NO_ATTRIBUTES
        if (
            original is None
            and entry.clone_of is None
            and not entry.parents
            and not (entry.events and any(kind in _SOURCE_EVENTS for kind, _, _ in entry.events))
        ):
            events.append(
                EventRow(
                    None,
                    _CREATE,
                    uuid,
                    (),
                    (),
                    component,
                    kind_name,
                    _NO_ATTRIBUTES,
                    attributes,
                    None,
                    claim,
                    None,
                    None,
                    None,
                    size,
                )
            )
        if len(entry.parents) > 1:
            events.append(
                EventRow(
                    None,
                    _JOIN,
                    uuid,
                    entry.parents,
                    (),
                    component,
                    kind_name,
                    _NO_ATTRIBUTES,
                    attributes,
                    None,
                    claim,
                    None,
                    None,
                    None,
                    size,
                )
            )
        if uuid in forks:
            events.append(
                EventRow(
                    None,
                    _FORK,
                    uuid,
                    (),
                    tuple(forks[uuid]),
                    component,
                    kind_name,
                    before,
                    attributes,
                    None,
                    claim,
                    None,
                    None,
                    None,
                    size,
                )
            )
        if uuid in clones:
            events.append(
                EventRow(
                    None,
                    _CLONE,
                    uuid,
                    (),
                    tuple(clones[uuid]),
                    component,
                    kind_name,
                    _NO_ATTRIBUTES,
                    attributes,
                    None,
                    claim,
                    None,
                    None,
                    None,
                    size,
                )
            )
        for kind, arguments, snapshot in entry.events:
            if kind in _ROW_EVENTS:
                events.append(
                    EventRow(
                        None,
                        kind.value,
                        uuid,
                        (),
                        (),
                        component,
                        kind_name,
                        before,
                        snapshot if snapshot is not None else attributes,
                        original.content_claim if original is not None else None,
                        claim,
                        arguments.get("transit_uri"),
                        arguments.get("details"),
                        arguments.get("relationship"),
                        size,
                    )
                )
                continue
            # The other explicit events are rare: built as events, so that their own rules check them.
            events.append(
                row_of(
                    ProvenanceEvent(
                        kind,
                        uuid,
                        component,
                        kind_name,
                        attributes_before=before,
                        attributes_after=snapshot if snapshot is not None else attributes,
                        content_before=original.content_claim if original is not None else None,
                        content_after=claim,
                        size=size,
                        **arguments,
                    )
                )
            )
        if original is not None and not entry.removed:
            if entry.wrote:
                modified = _CONTENT_MODIFIED
            elif attributes is not before and attributes != before:
                modified = _ATTRIBUTES_MODIFIED
            else:
                return
            events.append(
                EventRow(
                    None,
                    modified,
                    uuid,
                    (),
                    (),
                    component,
                    kind_name,
                    before,
                    attributes,
                    original.content_claim,
                    claim,
                    None,
                    None,
                    None,
                    size,
                )
            )


def _transfer_arguments(kind: EventType, transit_uri: str, details: str | None) -> _EventArguments:
    """A SEND's or RECEIVE's arguments; the rule `ProvenanceEvent` would check at
    commit, checked now (the session builds these rows itself)."""
    if not transit_uri:
        raise InvalidEventError(f"{kind.value} event needs a transit URI (where the data went or came from)")
    return {"transit_uri": transit_uri, "details": details}
