"""ReplicatingContentRepository: N content repositories kept identical (what NiFi's
never-built proposal to replicate a node's repositories asked for).

It wraps repositories, local first; it is not one. Every write, claimant change,
sync and archive step goes to all of them:

* A write is led by replica 0 (the local repository), which picks the resource and
  offset; every other replica writes the same bytes at the same resource and offset
  (`write_at`), so a claim means the same bytes everywhere and a survivor can read it
  from HDFS by the very (resource, offset, length) the FlowFile record holds.
* A claim is complete when every *required* replica has it durably (fdatasync
  locally, hsync on HDFS). By default all replicas are required. An optional replica
  that fails is marked degraded and skipped; `fsck` repairs it later.
* If a required replica fails (HDFS unavailable, a DataNode pipeline lost), the whole
  write fails cleanly: every replica's copy is abandoned (never referenced, its
  resource retired) and the caller's session rolls back. The next write starts fresh
  resources everywhere, so it succeeds as soon as the replica is back.
* Replicas retire a resource together (lockstep): the leader decides, and whatever
  retires a resource on one replica retires it on every other before a writer can
  choose it again, so the leader never hands out a resource a follower cannot append
  to (`ReplicaDiverged`). A write, sync, close or flush that fails on one replica
  retires the resource on every other first (`_failing`, told by the failing replica
  before it lets go of it), under the lock the leader's choice and its followers'
  writers are taken under (`_choosing`); a resource the leader retires while a writer
  holds it is retired on the followers when that writer lets go of it
  (`ReplicatedWriter.close`); a retiring sync and `seal_all` retire what the leader
  retires. A follower writer is never taken before its leader's, and is let go
  before it, so a resource nobody writes on the leader is written on no follower.
* Reads prefer replica 0 and fall back in order, then to the `fallbacks` (the
  repositories of nodes that died, whose claims a survivor now reads). Every replica
  checks the claim's blocks against their checksums, so a damaged copy is never read
  as good: a read that meets a damaged block (at open or in the middle of the claim)
  goes on from the next replica at the very byte where it stopped, and says so in one
  log line (`FailoverClaimReader`). When every replica's copy is damaged the read
  raises `ContentCorrupted` naming the claim and what each replica said.

Lock plan: the wrapper keeps no shared mutable state but `_degraded` (guarded by
`_lock`); its sync pool and each replica have their own locks. `_choosing` makes the
choice of an open resource (the leader's) and its followers' writers of it one step
against a failure on any replica (`_failing`); under it only the replicas' table
locks are taken, never an `io_lock`, and no storage is touched: a failing replica
may hold an `io_lock` when it takes `_choosing`.
"""

from __future__ import annotations

import functools
import io
import logging
import threading
import time
from collections.abc import Iterable, Mapping, Sequence

from repositories.claims import ContentClaim, ResourceClaim
from repositories.content.collection import CollectReport
from repositories.content.errors import (
    ContentCorrupted,
    ContentNotFound,
    ContentRepositoryError,
    ContentTruncated,
    ContentUnavailable,
    ReplicaDiverged,
)
from repositories.content.hooks import ContentHooks
from repositories.content.pools import LazyPool
from repositories.content.recovery import RecoveryReport
from repositories.content.repository import ContentRepository
from repositories.content.store import ClaimWriter, ContentStore
from repositories.content.writing import ContentWriter

log = logging.getLogger(__name__)

# `seal` waits this long for a resource to become readable, waking every SEAL_POLL_S
# to retire it again (a writer that held it in the middle of a claim has let it go).
SEAL_TIMEOUT_S = 60.0
SEAL_POLL_S = 0.05
# Commits whose follower syncs may run at once (the committing threads of a node's
# sessions): more would only wait for the same hsync.
SYNCS_IN_FLIGHT = 8


class ReplicatedWriter(ClaimWriter):
    """Writes one claim to every replica. Context manager; an exception aborts all."""

    def __init__(self, owner: ReplicatingContentRepository, writers: list[ContentWriter | None]):
        self._owner = owner
        self._writers = writers
        self._leader = writers[0]
        self.claim: ContentClaim | None = None
        self._open = True

    @property
    def resource(self) -> ResourceClaim:
        return self._leader.resource

    @property
    def offset(self) -> int:
        return self._leader.offset

    def write(self, data: bytes | bytearray | memoryview) -> int:
        if not self._open:
            raise ContentRepositoryError("write to a closed replicated writer")
        for index, writer in enumerate(self._writers):
            if writer is None:
                continue
            try:
                writer.write(data)
            except ContentRepositoryError as error:
                self._replica_failed(index, error)
        return len(data)

    def _replica_failed(self, index: int, error: ContentRepositoryError) -> None:
        self._writers[index] = None
        if index in self._owner.required:
            self.abort()
            raise error
        self._owner._degrade(index, self.resource, error)

    def close(self, *, sync: bool | None = None) -> ContentClaim:
        """`sync`: as `ContentWriter.close`; None means the repository's `sync_on_close`.
        Without a sync the claim is durable at the next `sync()` (a session commit)."""
        if self.claim is not None:
            return self.claim
        if not self._open:
            raise ContentRepositoryError("close of an aborted replicated writer")
        sync = self._owner.sync_on_close if sync is None else sync
        retire = (self._owner.retire_on_sync and sync) or self._owner.too_old(self._leader)
        done: list[tuple[int, ContentClaim]] = []
        # Followers first, the leader last: the leader hands the resource to the next
        # writer when it releases it, and by then every follower must have released
        # it too, or the next write_at would find the follower still busy.
        order = [*range(1, len(self._writers)), 0]
        resource = self.resource
        for position, index in enumerate(order):
            writer = self._writers[index]
            if index == 0:
                self._owner._hooks.followers_released_resource(resource)
            if writer is None:
                continue
            try:
                done.append((index, writer.close(sync=sync, retire=retire)))
            except ContentRepositoryError as error:
                self._writers[index] = None
                if index in self._owner.required:
                    self._open = False
                    self._undo(done)
                    for other in order[position + 1 :]:
                        if self._writers[other] is not None:
                            self._writers[other].abort()
                    raise
                self._owner._degrade(index, resource, error)
        self._open = False
        claims = {claim for _index, claim in done}
        if len(claims) != 1:
            self._undo(done)
            raise ContentRepositoryError(f"replicas disagree on the claim just written: {claims}")
        if self._leader.retired_resource:
            # The leader retired the resource as it let go of it, perhaps for a reason
            # the followers did not know when they let go first (it was retired while
            # this writer held it: a seal, a failure on a replica): so do they.
            for replica in self._owner.replicas[1:]:
                replica.retire(resource)
        self.claim = done[-1][1]
        return self.claim

    def _undo(self, done: list[tuple[int, ContentClaim]]) -> None:
        # The claim is not complete: drop the replicas' first-claimant count and stop
        # appending to the resource everywhere, so replicas stay in lockstep.
        for index, claim in done:
            replica = self._owner.replicas[index]
            replica.decrement(claim)
            replica.retire(claim.resource)

    def abort(self) -> None:
        if self._open:
            self._open = False
            for writer in self._writers:
                if writer is not None:
                    writer.abort()


def _what_is_wrong(replica, error: ContentRepositoryError) -> str:
    name = getattr(replica, "name", str(replica))
    if isinstance(error, ContentCorrupted) and error.ranges:
        return (
            name
            + " ("
            + ", ".join(
                f"{f'bytes {start}..{end}' if end is not None else f'from byte {start}'}: {why}"
                for _where, start, end, why in error.ranges
            )
            + ")"
        )
    return f"{name} ({error})"


class FailoverClaimReader(io.RawIOBase):
    """A stream of one claim read from the first replica that has it intact.

    Each replica's reader checks every block before returning it; when one raises
    (a damaged or torn block, at open or mid-claim), this reader goes on from the next
    replica at the byte where it stopped, so the caller sees one unbroken stream of
    checked bytes. A fallback after damage is logged once per read; when no replica is
    left, the error names the claim and what every replica said."""

    _FALL_BACK_ON = (ContentNotFound, ContentTruncated, ContentUnavailable, ContentCorrupted)

    def __init__(
        self, name: str, claim: ContentClaim, offset: int, length: int | None, candidates: Sequence, before_open=None
    ):
        super().__init__()
        self._before_open = before_open  # (repository, claim) -> None, before a candidate is opened
        self._name = name
        self._claim = claim
        self._offset = offset
        self._remaining = claim.length - offset if length is None else max(0, min(length, claim.length - offset))
        self._candidates = list(candidates)
        self._next_candidate = 0
        self._failures: list[tuple[object, ContentRepositoryError]] = []
        self._reader = None
        self._source = None
        self._unlogged = False  # a fallback after damage, to log once the new source delivers
        self._open_next()

    @property
    def source(self):
        """The replica the bytes are read from now."""
        return self._source

    def _open_next(self) -> None:
        while self._next_candidate < len(self._candidates):
            repository = self._candidates[self._next_candidate]
            self._next_candidate += 1
            try:
                if self._before_open is not None:
                    self._before_open(repository, self._claim)
                self._reader = repository.open_read(self._claim, self._offset, self._remaining)
            except self._FALL_BACK_ON as error:
                self._failures.append((repository, error))
                continue
            self._source = repository
            self._unlogged = any(isinstance(e, (ContentCorrupted, ContentTruncated)) for _r, e in self._failures)
            return
        raise self._exhausted()

    def _describe(self) -> str:
        claim = self._claim
        return f"{claim.resource.relative_path}@{claim.offset}+{claim.length}"

    def _log_fallback(self) -> None:
        self._unlogged = False
        damaged = [(r, e) for r, e in self._failures if isinstance(e, (ContentCorrupted, ContentTruncated))]
        log.warning(
            "%s: claim %s is damaged on %s; read it from %s instead. Mend the damaged copy with "
            "`custody content fsck --repair`",
            self._name,
            self._describe(),
            "; ".join(_what_is_wrong(r, e) for r, e in damaged),
            self._source.name,
        )

    def _exhausted(self) -> ContentRepositoryError:
        kinds = {type(error) for _r, error in self._failures}
        errors = "; ".join(f"{getattr(r, 'name', r)}: {e}" for r, e in self._failures)
        if ContentUnavailable in kinds:
            # A replica that did not answer may hold an intact copy: the read is worth
            # retrying, and the FlowFile must not be judged unreadable (failure) for it.
            return ContentUnavailable(
                f"claim {self._describe()} cannot be read now, and a replica that did not answer "
                f"may hold it intact: {errors}",
                claim=self._claim,
            )
        if ContentCorrupted in kinds:
            return ContentCorrupted(
                f"no replica holds an intact copy of claim {self._describe()}: "
                + "; ".join(_what_is_wrong(r, e) for r, e in self._failures)
                + ". Nothing unverified was returned. Restore the resource file from a backup (then run "
                "`custody content fsck --repair`), or drop the FlowFiles that reference the claim",
                claim=self._claim,
                ranges=tuple(r for _r, e in self._failures for r in getattr(e, "ranges", ())),
            )
        # Say the most telling thing: a torn claim beats plain absence.
        kind = ContentTruncated if ContentTruncated in kinds else ContentNotFound
        return kind(f"no replica holds {self._describe()}: {errors}", claim=self._claim)

    def readable(self) -> bool:
        return True

    def read1(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            size = self._remaining
        size = min(size, self._remaining)
        while size > 0:
            try:
                data = self._reader.read1(size)
            except (ContentCorrupted, ContentTruncated, ContentUnavailable) as error:
                self._failures.append((self._source, error))
                self._reader.close()
                self._open_next()
                continue
            self._offset += len(data)
            self._remaining -= len(data)
            if self._unlogged:
                self._log_fallback()
            return data
        return b""

    def readinto(self, buffer) -> int:
        data = self.read1(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            size = self._remaining
        chunks = []
        while size > 0 and (data := self.read1(size)):
            chunks.append(data)
            size -= len(data)
        return b"".join(chunks)

    def close(self) -> None:
        if not self.closed:
            try:
                if self._reader is not None:
                    self._reader.close()
            finally:
                super().close()


class ReplicatingContentRepository(ContentStore):
    """A `ContentStore` over replicas (see the module docstring)."""

    def __init__(
        self,
        replicas: Sequence[ContentRepository],
        *,
        required: Iterable[int] | None = None,
        sync_on_close: bool | None = None,
        fallbacks: Iterable[ContentRepository] = (),
        name: str = "replicated",
        max_resource_age_s: float | None = None,
        hooks: ContentHooks | None = None,
    ):
        if not replicas:
            raise ContentRepositoryError("a replicating repository needs at least one replica")
        self.replicas = list(replicas)
        self.required = set(range(len(self.replicas)) if required is None else required)
        if 0 not in self.required:
            raise ContentRepositoryError("replica 0 leads every write and must be required")
        block_sizes = {replica.name: replica.config.checksum_block_size for replica in self.replicas}
        if len(set(block_sizes.values())) > 1:
            raise ContentRepositoryError(
                f"replicas checksum claims in blocks of different sizes ({block_sizes}): their checksum "
                "files would differ and fsck could not compare them; give every replica the same "
                "checksum_block_size"
            )
        for setting, what in (
            ("max_appendable_claim_size", "fill resources to different sizes"),
            ("shared_resource_size", "let small claims share resources of different sizes"),
            ("packed_resource_size", "pack large claims into resources of different sizes"),
        ):
            values = {replica.name: getattr(replica.config, setting) for replica in self.replicas}
            if len(set(values.values())) > 1:
                raise ContentRepositoryError(
                    f"replicas {what} ({values}): one would retire a resource the leader still appends to; "
                    f"give every replica the same {setting}"
                )
        self.sync_on_close = self.replicas[0].config.sync_on_close if sync_on_close is None else sync_on_close
        # If any replica must close files to make them readable (HDFS), all retire
        # resources together, or the leader would append where a follower cannot.
        self.retire_on_sync = any(r.config.close_resources_on_sync for r in self.replicas)
        self.name = name
        # A resource older than this takes no more claims (every replica retires it
        # with the claim that finds it so): at a low rate a resource would otherwise
        # stay open for minutes, uncollectable, and on HDFS unreadable until closed.
        self.max_resource_age_s = max_resource_age_s
        self._fallbacks = list(fallbacks)
        self._keeps_open = any(r.config.close_in_background for r in self.replicas[1:])
        self._lock = threading.Lock()
        self._choosing = threading.Lock()
        self._hooks = ContentHooks.coerce(hooks)
        for index, replica in enumerate(self.replicas):
            replica.on_resource_failing(functools.partial(self._failing, index))
        # Followers synced beside the leader, for several commits at once: each waits for
        # the sync that covers its claims, and one sync of a resource covers every
        # commit that waited for it (group commit: `repositories.content.syncing`).
        self._pool = LazyPool(f"{name}-sync", max(1, len(self.replicas) - 1) * SYNCS_IN_FLIGHT)
        self._degraded: dict[int, list[str]] = {}

    def too_old(self, leader: ContentWriter) -> bool:
        return self.max_resource_age_s is not None and leader.resource_age >= self.max_resource_age_s

    @property
    def leader(self) -> ContentRepository:
        return self.replicas[0]

    # ---------------------------------------------------------------- writing

    def write(self) -> ReplicatedWriter:
        try:
            return self._write()
        except ReplicaDiverged as error:
            # A safety net: replicas retire resources in lockstep (see the module
            # docstring), so a follower never holds the leader's next resource retired
            # or elsewhere. Should one, nothing was written yet: the resource was retired
            # on every replica, so a second try starts a new one.
            log.warning(
                "%s: %s (the replicas retired it at different moments, which they should never do); "
                "writing to another resource",
                self.name,
                error,
            )
            return self._write()

    def _write(self) -> ReplicatedWriter:
        # The leader's choice of a resource open for appending and its followers' writers
        # of it are one step under `_choosing`, which a failure on any replica takes to
        # retire the resource everywhere (`_failing`): no replica lets go of it in
        # between. Neither step touches storage (the followers find it open).
        with self._choosing:
            # Writers take the resource let go of last: one they pass over would never
            # reach its age in `too_old`, so it is retired here.
            self._retire_aged_locked()
            leader = self.leader.write_appendable()
            if leader is not None:
                self._hooks.leader_chose_resource(leader.resource)
                writers, failures = self._follow(leader)
        if leader is None:
            # A new resource: no other writer, sync or failure knows of it yet.
            leader = self.leader.write_new()
            writers, failures = self._follow(leader)
        resource = leader.resource
        required = [error for index, error in failures if index in self.required]
        if required:
            for writer in writers:
                if writer is not None:
                    writer.abort()
            for replica in self.replicas[1:]:
                replica.retire(resource)  # the leader's abort retired it: so does every follower
            raise required[0]
        for index, error in failures:
            self._degrade(index, resource, error)
        return ReplicatedWriter(self, writers)

    def retire_aged(self) -> list[ResourceClaim]:
        """Retire, on every replica, the resources nobody writes that are older than
        `max_resource_age_s`, and close their files and those of resources retired
        before (a sync); the ones retired here. What a node's maintenance does every
        round: a resource no writer comes back to (the flow went idle), or one retired
        as its writer let go of it whose session then rolled back (no commit synced
        after it), would otherwise stay open, uncollectable, and on HDFS unreadable,
        for as long as the node runs."""
        with self._choosing:
            aged = self._retire_aged_locked()
        if aged or any(replica.retired_waiting() for replica in self.replicas):
            self.sync()
        return aged

    def _retire_aged_locked(self) -> list[ResourceClaim]:
        if self.max_resource_age_s is None:
            return []
        aged = self.leader.retire_aged(self.max_resource_age_s)
        for resource in aged:
            for replica in self.replicas[1:]:
                replica.retire(resource, close=False)  # closed by the next sync, as the leader's
        return aged

    def _follow(
        self, leader: ContentWriter
    ) -> tuple[list[ContentWriter | None], list[tuple[int, ContentRepositoryError]]]:
        """Each follower's writer of the leader's resource at its offset (None where it
        failed), and the failures. Stops at the first required follower that fails."""
        writers: list[ContentWriter | None] = [leader]
        failures: list[tuple[int, ContentRepositoryError]] = []
        for index, replica in enumerate(self.replicas[1:], start=1):
            try:
                writers.append(replica.write_at(leader.resource, leader.offset))
            except ContentRepositoryError as error:
                failures.append((index, error))
                writers.append(None)
                if index in self.required:
                    break
        return writers, failures

    def _failing(self, index: int, resource: ResourceClaim) -> None:
        """Replica `index` is about to fail `resource` (a write, sync, close or flush of
        it failed there) and to let go of it: every other replica retires it first, the
        leader under `_choosing`, so that no writer chooses it again and a writer that
        holds it retires it everywhere as it lets go of it. Their files are closed by
        their next sync: the failing replica may hold an `io_lock` here."""
        with self._choosing:
            for other, replica in enumerate(self.replicas):
                if other != index:
                    replica.retire(resource, close=False)

    def copy(self, claim: ContentClaim, offset: int = 0, length: int | None = None) -> ContentClaim:
        with self.open_read(claim, offset, length) as source, self.write() as writer:
            writer.write_from(source)
        return writer.claim

    def take_file(self, path: str, checksums: str, *, replica: int) -> ContentClaim:
        """The claim of a whole file written outside the repository (Spark's output) on
        the storage of replica `replica`, moved into that replica as a new resource
        (`ContentRepository.take_file`). Only that replica holds it: a read finds it
        missing on the others and falls over to it, as a read of a claim that one
        replica lost does, without a warning (nothing is damaged). Every other replica
        counts its claimant too, so that claimant counts stay the same everywhere and
        every replica's collector forgets the resource when its count reaches 0."""
        claim = self.replicas[replica].take_file(path, checksums)
        for index, other in enumerate(self.replicas):
            if index != replica:
                other.increment(claim)
        return claim

    def sync(self) -> None:
        """Sync every replica, side by side: the local fdatasync runs while the HDFS
        hsync waits for its pipeline, so a commit waits for the slower, not the sum.
        With `retire_on_sync`, the resources nobody writes are retired: those the
        leader finds so, on every replica (each replica deciding for itself would
        retire on a follower a resource a writer has just taken on the leader)."""
        if self.retire_on_sync:
            for resource in self.leader.retire_idle():
                for replica in self.replicas[1:]:
                    replica.retire(resource, close=False)  # closed by the sync below
        outcomes = self._pool.executor().map(self._sync_replica, self.replicas[1:]) if len(self.replicas) > 1 else ()
        errors = [self._sync_replica(self.leader), *outcomes]
        first: ContentRepositoryError | None = None
        for index, error in enumerate(errors):
            if error is None:
                continue
            if index in self.required:
                first = first or error
            else:
                self._degrade(index, None, error)
        if first is not None:
            raise first

    def _sync_replica(self, replica: ContentRepository) -> ContentRepositoryError | None:
        try:
            replica.sync(retire=False)  # a replica never retires on its own: see `sync`
        except ContentRepositoryError as error:
            return error
        return None

    def check_durable(self, claims) -> None:
        """Raise if any required replica lost bytes of `claims` (see
        `ContentRepository.check_durable`): a claim is complete only when every
        required replica holds it."""
        claims = list(claims)
        for index in sorted(self.required):
            self.replicas[index].check_durable(claims)

    def _degrade(self, index: int, resource: ResourceClaim | None, error: Exception) -> None:
        where = resource.relative_path if resource else "sync"
        log.warning(
            "%s: optional replica %s missed %s: %s (run `custody content fsck`)",
            self.name,
            self.replicas[index].name,
            where,
            error,
        )
        with self._lock:
            self._degraded.setdefault(index, []).append(f"{where}: {error}")
        if resource is not None:
            self.replicas[index].retire(resource)

    def degraded(self) -> dict[str, list[str]]:
        with self._lock:
            return {self.replicas[i].name: list(v) for i, v in self._degraded.items()}

    # ---------------------------------------------------------------- reading

    def open_read(self, claim: ContentClaim, offset: int = 0, length: int | None = None) -> FailoverClaimReader:
        return FailoverClaimReader(
            self.name,
            claim,
            offset,
            length,
            [*self.replicas, *self._fallbacks],
            self._before_open if self._keeps_open else None,
        )

    def _before_open(self, repository, claim: ContentClaim) -> None:
        # A follower that keeps resource files open (HDFS) cannot serve a claim of a
        # resource it still has open: make it readable first.
        if (
            repository is not self.leader
            and repository in self.replicas
            and repository.config.close_in_background
            and claim.resource in repository.open_resources()
        ):
            self.seal(claim.resource)

    def seal(self, resource: ResourceClaim, timeout: float = SEAL_TIMEOUT_S) -> bool:
        """Make `resource` readable on every replica (`seal_all`); False if it was still
        open somewhere after `timeout` seconds (the read that follows then fails over,
        or says what is wrong)."""
        return not self.seal_all({resource}, timeout)

    def seal_all(self, resources: Iterable[ResourceClaim], timeout: float = SEAL_TIMEOUT_S) -> set[ResourceClaim]:
        """Make every one of `resources` readable on every replica: stop appending to
        them everywhere (the leader first, so no new writer takes one; the followers
        once nobody writes it on the leader, so never one a writer took on the leader
        and is about to take on a follower), sync each replica once, and wait for their
        files to close, side by side. A writer in the middle of a claim in one is
        waited for. Returns those still open somewhere after `timeout` seconds (none:
        all sealed)."""
        deadline = time.monotonic() + timeout
        resources = set(resources)
        while True:
            holding = {
                replica: open_here for replica in self.replicas if (open_here := resources & replica.open_resources())
            }
            if not holding:
                return set()
            still_open = set().union(*holding.values())
            left = deadline - time.monotonic()
            if left <= 0:
                named = sorted(resource.relative_path for resource in still_open)
                log.warning(
                    "%s: %s %s still open on %s after %.0fs; %s cannot be read from there yet",
                    self.name,
                    ", ".join(named[:3]) + (f" and {len(named) - 3} more" if len(named) > 3 else ""),
                    "is" if len(named) == 1 else "are",
                    ", ".join(r.name for r in holding),
                    timeout,
                    "its claims" if len(named) == 1 else "their claims",
                )
                return still_open
            for resource in still_open:
                # A resource a writer holds on the leader is retired as it lets go of it,
                # on every replica (`ReplicatedWriter.close`); until then, on none other.
                if self.leader.retire(resource):
                    for replica in self.replicas[1:]:
                        replica.retire(resource)
            for replica in holding:
                try:
                    replica.sync(retire=False)  # closes what was retired; retires nothing of its own
                except ContentRepositoryError as error:
                    log.info("%s: a sync to seal %d resource(s) failed: %s", self.name, len(still_open), error)
            closed = [
                replica.wait_closed(resource, max(0.0, min(deadline - time.monotonic(), SEAL_POLL_S)))
                for replica, open_here in holding.items()
                for resource in open_here
            ]
            if all(closed) and any(resources & replica.open_resources() for replica in self.replicas):
                time.sleep(SEAL_POLL_S)  # a writer is in the middle of a claim in one: poll

    def exists(self, claim: ContentClaim | ResourceClaim) -> bool:
        return any(repository.exists(claim) for repository in [*self.replicas, *self._fallbacks])

    # ---------------------------------------------------------------- claimants

    def increment(self, claim: ContentClaim | ResourceClaim) -> int:
        counts = [replica.increment(claim) for replica in self.replicas]
        return counts[0]

    def decrement(self, claim: ContentClaim | ResourceClaim) -> int:
        counts = [replica.decrement(claim) for replica in self.replicas]
        return counts[0]

    def claimant_count(self, claim: ContentClaim | ResourceClaim) -> int:
        return self.leader.claimant_count(claim)

    def set_claimant_counts(self, counts: Mapping[ResourceClaim, int]) -> None:
        for replica in self.replicas:
            replica.set_claimant_counts(counts)

    def recover(self, live_claims: Iterable[ContentClaim]) -> RecoveryReport:
        live = list(live_claims)
        reports = [replica.recover(live) for replica in self.replicas]
        leader = reports[0]
        # A claim is only missing if no replica has it.
        have = set()
        for _replica, report in zip(self.replicas, reports, strict=False):
            have |= {r for r in {c.resource for c in live} if r not in report.missing}
        leader.missing = sorted({c.resource for c in live} - have, key=lambda r: r.relative_path)
        for report in reports[1:]:
            leader.destroyed.extend(r for r in report.destroyed if r not in leader.destroyed)
            leader.truncated_bytes += report.truncated_bytes
            leader.unsafe.extend(report.unsafe)
        return leader

    # ---------------------------------------------------------------- archive

    def collect(self) -> CollectReport:
        reports = [replica.collect() for replica in self.replicas]
        return reports[0]

    def age_off(self) -> list[ResourceClaim]:
        deleted = [replica.age_off() for replica in self.replicas]
        return deleted[0]

    def archived(self) -> dict[ResourceClaim, float]:
        return self.leader.archived()

    # ---------------------------------------------------------------- fsck

    def fsck(self, *, repair: bool = False):
        from .content_fsck import fsck_replicas

        skip = set()
        for replica in self.replicas:
            skip |= replica.open_resources()
        return fsck_replicas(self.replicas, repair=repair, skip=skip)

    def close(self) -> None:
        errors = []
        for replica in self.replicas:
            try:
                replica.close()
            except ContentRepositoryError as error:
                errors.append(error)
        self._pool.shutdown()
        if errors:
            raise errors[0]

    def abandon(self, reason: str = "its owner stopped at once") -> None:
        """Stop at once, whatever any replica's storage does: each replica is abandoned
        (`ContentRepository.abandon`: nothing synced; HDFS files let go unsynced, their
        leases recovered by whoever reads a dead incarnation's claims; local files
        closed on a thread of their own), and no sync in flight is waited for. Every
        later write fails; `close` does nothing. Idempotent."""
        for replica in self.replicas:
            replica.abandon(reason)
        self._pool.shutdown(wait=False)

    def __enter__(self) -> ReplicatingContentRepository:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
