"""Exceptions of the flow engine: one root, each naming the component concerned."""

from __future__ import annotations


class FlowError(Exception):
    """Root of every failure of `flow`."""


class FlowDefinitionError(FlowError):
    """A flow definition is malformed or invalid. Names the file, processor and property."""

    def __init__(
        self, message: str, *, source: str | None = None, processor: str | None = None, property: str | None = None
    ):
        self.source, self.processor, self.property = source, processor, property
        where = []
        if source:
            where.append(source)
        if processor:
            where.append(f"processor {processor!r}")
        if property:
            where.append(f"property {property!r}")
        prefix = ": ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class ExpressionError(FlowError):
    """An attribute expression could not be parsed or evaluated."""


class SessionError(FlowError):
    """A process session was used wrongly (unknown FlowFile, not transferred, ...)."""


class FlowFileNotTransferred(SessionError):
    def __init__(self, component: str, uuids):
        uuids = list(uuids)
        self.uuids = uuids
        super().__init__(
            f"{component}: {len(uuids)} FlowFile(s) were neither transferred nor removed before "
            f"commit (e.g. {uuids[0]}); the session was rolled back"
        )


class UnknownRelationship(SessionError):
    def __init__(self, component: str, relationship: str, known):
        super().__init__(f"{component}: no relationship {relationship!r} (it has {sorted(known)})")


class NotAdmitted(SessionError):
    """The node may no longer commit for the session's shard (`ProcessSession.check_admitted`):
    its commit gate refused. The session must roll back; the cause is chained."""


class UnreadableContent(SessionError):
    """The content of one FlowFile cannot be read, and no retry will change that: its
    claim's bytes are damaged, torn or gone, or its checksums are (`ProcessSession.read`
    raises it, the content repository's error chained as `cause`). The FlowFile's fault,
    not the batch's: a processor routes it to `failure` (`flow.processors.content_failures`)
    and goes on with the rest. Storage that cannot be reached is not this: it raises the
    content repository's own error (`ContentUnavailable`) and the session rolls back."""

    def __init__(self, flowfile, cause: BaseException):
        self.flowfile = flowfile
        self.cause = cause
        first_line = (str(cause).splitlines() or [""])[0]
        self.reason = f"{type(cause).__name__}: {first_line}"[:1000]
        super().__init__(
            f"the content of FlowFile {flowfile.id} cannot be read ({self.reason}); retrying will "
            "not mend it. The FlowFile keeps its claim: restore the damaged resource file or checksum "
            "file (`custody content fsck` names them) and route it back, or drop it"
        )


class CommitError(FlowError):
    """A session could not be committed; it was rolled back in memory.

    `wal_written`: the WAL transaction's outcome is unknown (`OutcomeUnknownError`: its
    write failed and so did the roll after it), so a recovery may replay it until the
    WAL settles it; what it points at (content, swap files, an outbox slot) must stay
    until `wal.when_settled` calls back (`repositories.flowfile` states the rule)."""

    def __init__(self, message: str, *, wal_written: bool = False):
        super().__init__(message)
        self.wal_written = wal_written


class ProvenanceFailing(FlowError):
    """Provenance failed to register the events of too many commits, which wait to be
    registered again (`flow.provenance_retry`): commits with events are refused until
    it does, and their sessions roll back and are retried."""


class ProcessorStateError(FlowError):
    """A processor cannot be stopped or started now (still stopping, never runs on this
    shard, `on_scheduled` raised); the message says why."""


class ReplayRefused(FlowError):
    """A provenance event cannot be replayed (its content is gone, its component has no
    incoming queue or several); the message says why and what could be done."""


class QueueRecoveryError(FlowError):
    """The WAL holds FlowFiles for a queue the flow does not define."""


class ProcessorRegistryError(FlowError):
    """A processor type cannot be registered: a broken or duplicate entry point, a class
    that is not a `Processor`, a type name taken by another class. Names every one."""


class ServiceError(FlowError):
    """A node-level shared service failed to start, or the registry of services is closed."""


class UnknownService(ServiceError):
    """A processor asked for a shared service the node does not configure."""

    def __init__(self, name: str, known, processor: str | None = None):
        self.name, self.known = name, sorted(known)
        who = f"{processor}: " if processor else ""
        super().__init__(
            f"{who}no shared service {name!r} is configured on this node "
            f"(configured: {', '.join(self.known) or 'none'})"
        )
