"""`ProcessSession`: the unit of work of a processor (seed 001, seed 004).

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

Not thread-safe: a session belongs to one task.
"""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from repositories.provenance import EventType, ProvenanceEvent

from .errors import CommitError, FlowFileNotTransferred, SessionError, UnknownRelationship
from .flowfile import FlowFile
from .identifiers import new_uuid

SUCCESS = "success"
_SOURCE = object()  # transfer back to the queue it came from


class _Entry:
    __slots__ = ("original", "current", "source", "relationship", "removed", "expired", "parents",
                 "clone_of", "events", "wrote")

    def __init__(self, original, current, source):
        self.original = original  # the version polled from `source`, or None if created here
        self.current = current
        self.source = source
        self.relationship = None
        self.removed = False
        self.expired = False
        self.parents: tuple[str, ...] = ()
        self.clone_of: str | None = None
        self.events: list = []  # (EventType, kwargs, attributes snapshot or None)
        self.wrote = False


@dataclass
class Transaction:
    """Everything a commit must apply, built by the session for its committer."""

    component_id: str
    component_type: str
    acknowledged: dict = field(default_factory=dict)  # queue -> [FlowFile] leaving it
    transfers: dict = field(default_factory=dict)  # queue -> [FlowFile] entering it
    puts: list = field(default_factory=list)  # FlowFile versions for the WAL
    deletes: list = field(default_factory=list)  # FlowFile ids gone from the WAL
    claim_deltas: dict = field(default_factory=dict)  # ResourceClaim -> +n / -n
    wrote_content: bool = False
    events: list = field(default_factory=list)
    state: dict | None = None
    on_success: Callable[[], None] | None = None
    on_failure: Callable[[BaseException], None] | None = None


class _ContentOutput(io.RawIOBase):
    """The stream `session.write(flowfile)` returns; `flowfile` is the new version."""

    def __init__(self, session: "ProcessSession", flowfile: FlowFile):
        super().__init__()
        self._session = session
        self._source = flowfile
        self._writer = session._content.write()
        self._size = 0
        self.flowfile: FlowFile | None = None

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        written = self._writer.write(data)
        self._size += len(data)
        return written if written is not None else len(data)

    def __exit__(self, kind, value, traceback):
        if kind is not None:
            self._writer.abort()
            super().close()
            return False
        claim = self._writer.close(sync=False)
        self.flowfile = self._session._replace_content(self._source, claim, self._size)
        super().close()
        return False


class ProcessSession:
    def __init__(
        self,
        *,
        component_id: str,
        component_type: str,
        committer,
        content,
        shard,
        incoming: Iterable = (),
        outgoing: dict | None = None,
        auto_terminated: Iterable[str] = (),
        clock_ms: Callable[[], int],
        penalty_ms: int = 30_000,
    ):
        self.component_id = component_id
        self.component_type = component_type
        self._committer = committer
        self._content = content
        self._shard = shard
        self._incoming = list(incoming)
        self._outgoing = dict(outgoing or {})
        self._auto_terminated = set(auto_terminated)
        self._clock_ms = clock_ms
        self._penalty_ms = penalty_ms
        self._entries: dict[str, _Entry] = {}
        self._written: list = []  # content claims written by this session (+1 each)
        self._state: dict | None = None
        self._next_queue = 0
        self._done = False

    # -- getting FlowFiles --------------------------------------------------------

    def get(self) -> FlowFile | None:
        batch = self.get_batch(1)
        return batch[0] if batch else None

    def get_batch(self, max_count: int) -> list[FlowFile]:
        """Up to `max_count` FlowFiles from the incoming queues (round-robin between them)."""
        self._check_open()
        result: list[FlowFile] = []
        queues = self._incoming
        now = self._clock_ms()
        for step in range(len(queues)):
            if len(result) >= max_count:
                break
            queue = queues[(self._next_queue + step) % len(queues)]
            polled, expired = self._shard.poll(queue, max_count - len(result), now)
            for flowfile in polled:
                self._entries[flowfile.id] = _Entry(flowfile, flowfile, queue)
            for flowfile in expired:
                entry = self._entries[flowfile.id] = _Entry(flowfile, flowfile, queue)
                entry.removed = entry.expired = True
            result += polled
        if queues:
            self._next_queue = (self._next_queue + 1) % len(queues)
        return result

    def queued(self) -> int:
        return sum(queue.count for queue in self._incoming)

    # -- creating -----------------------------------------------------------------

    def create(self, parents: FlowFile | Iterable[FlowFile] | None = None,
               attributes: dict[str, str] | None = None) -> FlowFile:
        """A new FlowFile; with parents it inherits their common attributes (FORK/JOIN)."""
        self._check_open()
        now = self._clock_ms()
        if parents is None:
            flowfile = FlowFile.new(now, attributes)
            self._entries[flowfile.id] = _Entry(None, flowfile, None)
            return flowfile
        parents = [parents] if isinstance(parents, FlowFile) else list(parents)
        for parent in parents:
            self._entry_of(parent)
        inherited = dict(parents[0].attributes)
        for parent in parents[1:]:
            inherited = {k: v for k, v in inherited.items() if parent.attributes.get(k) == v}
        inherited.pop("filename", None)
        if attributes:
            inherited.update(attributes)
        lineage = min(p.lineage_start_date for p in parents)
        flowfile = FlowFile.new(now, inherited, lineage_start=lineage)
        entry = self._entries[flowfile.id] = _Entry(None, flowfile, None)
        entry.parents = tuple(p.id for p in parents)
        return flowfile

    def clone(self, flowfile: FlowFile, offset: int = 0, size: int | None = None) -> FlowFile:
        """A new FlowFile with the same attributes and (a slice of) the same content."""
        self._entry_of(flowfile)
        claim = flowfile.content_claim
        if claim is not None and (offset or (size is not None and size != claim.length)):
            length = claim.length - offset if size is None else size
            claim = type(claim)(claim.resource, claim.offset + offset, length)
        copy = FlowFile(new_uuid(), flowfile.attributes, claim, "",
                        claim.length if claim is not None else 0, self._clock_ms(),
                        flowfile.lineage_start_date, 0)
        entry = self._entries[copy.id] = _Entry(None, copy, None)
        entry.clone_of = flowfile.id
        return copy

    # -- attributes ---------------------------------------------------------------

    def put_attribute(self, flowfile: FlowFile, key: str, value: str) -> FlowFile:
        if key == "uuid":
            return flowfile
        attributes = dict(flowfile.attributes)
        attributes[key] = str(value)
        return self._replace(flowfile, flowfile._replace(attributes=attributes))

    def put_all_attributes(self, flowfile: FlowFile, values: dict[str, str]) -> FlowFile:
        attributes = dict(flowfile.attributes)
        attributes.update((k, str(v)) for k, v in values.items() if k != "uuid")
        return self._replace(flowfile, flowfile._replace(attributes=attributes))

    def remove_attribute(self, flowfile: FlowFile, key: str) -> FlowFile:
        if key not in flowfile.attributes:
            return self._replace(flowfile, flowfile)
        attributes = dict(flowfile.attributes)
        del attributes[key]
        return self._replace(flowfile, flowfile._replace(attributes=attributes))

    # -- content ------------------------------------------------------------------

    def read(self, flowfile: FlowFile):
        """A binary stream of the FlowFile's content (close it, or use `with`)."""
        self._entry_of(flowfile)
        if flowfile.content_claim is None:
            return io.BytesIO(b"")
        return self._content.open_read(flowfile.content_claim)

    def read_bytes(self, flowfile: FlowFile) -> bytes:
        with self.read(flowfile) as stream:
            return stream.read()

    def write(self, flowfile: FlowFile) -> _ContentOutput:
        """`with session.write(ff) as out: out.write(...)`, then `out.flowfile`."""
        self._entry_of(flowfile)
        return _ContentOutput(self, flowfile)

    def write_bytes(self, flowfile: FlowFile, data: bytes) -> FlowFile:
        self._entry_of(flowfile)
        writer = self._content.write()
        try:
            writer.write(data)
        except BaseException:
            writer.abort()
            raise
        return self._replace_content(flowfile, writer.close(sync=False), len(data))

    def import_from(self, flowfile: FlowFile, stream, chunk_size: int = 1 << 20) -> FlowFile:
        with self.write(flowfile) as out:
            while chunk := stream.read(chunk_size):
                out.write(chunk)
        return out.flowfile

    def transform(self, flowfile: FlowFile, function: Callable) -> FlowFile:
        """Stream the content through `function(input, output)` into a new claim."""
        with self.read(flowfile) as source, self.write(flowfile) as out:
            function(source, out)
        return out.flowfile

    def _replace_content(self, flowfile: FlowFile, claim, size: int) -> FlowFile:
        self._written.append(claim)
        entry = self._entry_of(flowfile)
        entry.wrote = True
        return self._replace(flowfile, flowfile._replace(content_claim=claim, size=size))

    # -- routing ------------------------------------------------------------------

    def transfer(self, flowfile: FlowFile, relationship: str | None = None) -> None:
        entry = self._entry_of(flowfile)
        if relationship is None:
            if entry.source is None:
                raise SessionError(f"{self.component_id}: a FlowFile created in this session has no "
                                   "queue to go back to; name a relationship")
            entry.relationship = _SOURCE
            return
        if relationship not in self._outgoing and relationship not in self._auto_terminated:
            raise UnknownRelationship(self.component_id, relationship,
                                      set(self._outgoing) | self._auto_terminated)
        entry.relationship = relationship

    def remove(self, flowfile: FlowFile) -> None:
        entry = self._entry_of(flowfile)
        entry.removed = True
        entry.relationship = None

    def penalize(self, flowfile: FlowFile) -> FlowFile:
        until = self._clock_ms() + self._penalty_ms
        return self._replace(flowfile, flowfile._replace(penalty_expiration=until))

    # -- provenance reporting -----------------------------------------------------

    def send(self, flowfile: FlowFile, transit_uri: str, details: str | None = None) -> None:
        entry = self._entry_of(flowfile)
        # SEND keeps the attributes as they were when sent: they may have been sent too.
        entry.events.append((EventType.SEND, {"transit_uri": transit_uri, "details": details},
                             dict(flowfile.attributes)))

    def receive(self, flowfile: FlowFile, transit_uri: str, details: str | None = None) -> None:
        entry = self._entry_of(flowfile)
        entry.events.append((EventType.RECEIVE, {"transit_uri": transit_uri, "details": details}, None))

    def route(self, flowfile: FlowFile, relationship: str, details: str | None = None) -> None:
        entry = self._entry_of(flowfile)
        entry.events.append((EventType.ROUTE, {"relationship": relationship, "details": details}, None))

    # -- processor state ----------------------------------------------------------

    def get_state(self) -> dict[str, str]:
        if self._state is not None:
            return dict(self._state)
        return self._shard.get_state(self.component_id)

    def set_state(self, state: dict[str, str]) -> None:
        """Replace the processor's state; durable in the same transaction as the session."""
        self._state = {str(k): str(v) for k, v in state.items()}

    # -- commit and rollback ------------------------------------------------------

    def commit(self) -> None:
        self.commit_async(None)

    def commit_async(self, on_success: Callable[[], None] | None = None,
                     on_failure: Callable[[BaseException], None] | None = None) -> None:
        """Commit; `on_success` runs when the commit is complete - at once in the
        traditional engine, when the whole flow succeeded in the stateless engine.
        On failure the session is rolled back and `on_failure(error)` is called; the
        error is raised too when there is no `on_failure`."""
        self._check_open()
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
        self._done = True

    def rollback(self, penalize: bool = False) -> None:
        if self._done:
            return
        self._done = True
        self._release_unused(penalize)

    def _rollback_after_failed_commit(self, error: CommitError) -> None:
        self._done = True
        if error.wal_written and self._written:
            # The failed write may be replayed (see CommitError): its content stays
            # until the WAL's next checkpoint, and the committer releases it then.
            self._committer.hold_claims(self._written)
            self._written = []
        self._release_unused(False)

    def _release_unused(self, penalize: bool) -> None:
        by_queue: dict = {}
        until = self._clock_ms() + self._penalty_ms if penalize else 0
        for entry in self._entries.values():
            if entry.original is not None:
                original = entry.original
                if penalize:
                    original = original._replace(penalty_expiration=until)
                by_queue.setdefault(entry.source, []).append(original)
        for queue, flowfiles in by_queue.items():
            queue.requeue(flowfiles)
        for claim in self._written:
            self._content.decrement(claim)
        self._written = []
        self._entries = {}

    @property
    def is_closed(self) -> bool:
        return self._done

    @property
    def touched(self) -> bool:
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
            raise SessionError(f"{self.component_id}: FlowFile {flowfile.id} is not its latest version "
                               "in this session (use the FlowFile the last call returned)")
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
        before: Counter = Counter()
        after: Counter = Counter()
        for claim in self._written:
            before[claim.resource] += 1  # the writer already counted itself
        not_routed = [e.current.id for e in self._entries.values() if not e.removed and e.relationship is None]
        if not_routed:
            raise FlowFileNotTransferred(self.component_id, not_routed)
        fork_children: dict[str, list[str]] = {}
        clone_children: dict[str, list[str]] = {}
        for entry in self._entries.values():
            if entry.parents and len(entry.parents) == 1:
                fork_children.setdefault(entry.parents[0], []).append(entry.current.id)
            if entry.clone_of is not None:
                clone_children.setdefault(entry.clone_of, []).append(entry.current.id)
        events = tx.events
        puts, deletes, acknowledged, transfers = tx.puts, tx.deletes, tx.acknowledged, tx.transfers
        extra_entries = []
        for entry in self._entries.values():
            original, current = entry.original, entry.current
            if original is not None:
                acknowledged.setdefault(entry.source, []).append(original)
                if original.content_claim is not None:
                    before[original.content_claim.resource] += 1
            destination_queues = ()
            dropped_by = None
            if entry.removed:
                dropped_by = "expired" if entry.expired else None
            elif entry.relationship is _SOURCE:
                destination_queues = (entry.source,)
            else:
                destination_queues = self._outgoing.get(entry.relationship, ())
                if not destination_queues:
                    dropped_by = f"Auto-Terminated by {entry.relationship} Relationship"
            self._events_for(entry, current, clone_children, fork_children, events, now)
            if not destination_queues:
                if original is not None:
                    deletes.append(current.id)
                    kind = EventType.EXPIRE if entry.expired else EventType.DROP
                    events.append(ProvenanceEvent(kind, current.id, self.component_id, self.component_type,
                                                  attributes_before=original.attributes,
                                                  attributes_after=current.attributes,
                                                  content_before=original.content_claim,
                                                  content_after=current.content_claim,
                                                  details=dropped_by, size=current.size))
                continue
            first = True
            for queue in destination_queues:
                if first:
                    version = current.in_queue(queue.id)
                    first = False
                else:
                    # One relationship, several connections: each gets its own FlowFile.
                    version = FlowFile(new_uuid(), current.attributes, current.content_claim, queue.id,
                                       current.size, now, current.lineage_start_date, current.penalty_expiration)
                    extra_entries.append(version)
                    events.append(ProvenanceEvent(EventType.CLONE, current.id, self.component_id,
                                                  self.component_type, child_uuids=(version.id,),
                                                  attributes_after=current.attributes,
                                                  content_after=current.content_claim, size=current.size))
                puts.append(version)
                transfers.setdefault(queue, []).append(version)
                if version.content_claim is not None:
                    after[version.content_claim.resource] += 1
        deltas = {}
        for resource in set(before) | set(after):
            delta = after[resource] - before[resource]
            if delta:
                deltas[resource] = delta
        tx.claim_deltas = deltas
        return tx

    def _events_for(self, entry: _Entry, current: FlowFile, clones, forks, events: list, now: int) -> None:
        component, kind_name = self.component_id, self.component_type
        original = entry.original
        attributes = current.attributes
        explicit = {kind for kind, _, _ in entry.events}
        if original is None and entry.clone_of is None and not entry.parents and EventType.RECEIVE not in explicit:
            events.append(ProvenanceEvent(EventType.CREATE, current.id, component, kind_name,
                                          attributes_after=attributes, content_after=current.content_claim,
                                          size=current.size))
        if len(entry.parents) > 1:
            events.append(ProvenanceEvent(EventType.JOIN, current.id, component, kind_name,
                                          parent_uuids=entry.parents, attributes_after=attributes,
                                          content_after=current.content_claim, size=current.size))
        if current.id in forks:
            events.append(ProvenanceEvent(EventType.FORK, current.id, component, kind_name,
                                          child_uuids=tuple(forks[current.id]),
                                          attributes_before=original.attributes if original else {},
                                          attributes_after=attributes, content_after=current.content_claim,
                                          size=current.size))
        if current.id in clones:
            events.append(ProvenanceEvent(EventType.CLONE, current.id, component, kind_name,
                                          child_uuids=tuple(clones[current.id]), attributes_after=attributes,
                                          content_after=current.content_claim, size=current.size))
        for kind, arguments, snapshot in entry.events:
            events.append(ProvenanceEvent(kind, current.id, component, kind_name,
                                          attributes_before=original.attributes if original else {},
                                          attributes_after=snapshot if snapshot is not None else attributes,
                                          content_before=original.content_claim if original else None,
                                          content_after=current.content_claim, size=current.size, **arguments))
        if original is not None and not entry.removed:
            if entry.wrote:
                events.append(ProvenanceEvent(EventType.CONTENT_MODIFIED, current.id, component, kind_name,
                                              attributes_before=original.attributes, attributes_after=attributes,
                                              content_before=original.content_claim,
                                              content_after=current.content_claim, size=current.size))
            elif attributes is not original.attributes and attributes != original.attributes:
                events.append(ProvenanceEvent(EventType.ATTRIBUTES_MODIFIED, current.id, component, kind_name,
                                              attributes_before=original.attributes, attributes_after=attributes,
                                              content_before=original.content_claim,
                                              content_after=current.content_claim, size=current.size))
