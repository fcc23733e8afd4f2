"""Total-queue checkers for drills: what went in must come out exactly once.

Two layers, usable by any drill (the standalone restart drill here, the failover
drills of the cluster later):

* `check_delivery(expected, delivered)` - pure: counts lost, duplicated and
  unexpected ids. `ids_in_directory` reads what a PutFile directory holds.
* `check_node_repositories(...)` - offline, on a stopped node's repositories: the
  FlowFile WAL (live and swapped FlowFiles), the content repository (every live claim
  present, no unreferenced resource left outside the archive) and provenance (each
  delivered id sent exactly once, by a FlowFile that was created once).
* `claimant_mismatches(content, claims)` - on a live node: the content repository's
  claimant counts against the claims the WAL and the swap files hold.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from repositories.content import ContentStore


@dataclass
class DeliveryReport:
    expected: int
    delivered: int
    lost: list = field(default_factory=list)
    duplicated: dict = field(default_factory=dict)  # id -> times delivered
    unexpected: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.lost or self.duplicated or self.unexpected)

    def summary(self) -> str:
        return (
            f"expected {self.expected}, delivered {self.delivered}: lost {len(self.lost)}, "
            f"duplicated {len(self.duplicated)}, unexpected {len(self.unexpected)}"
            + (
                f" (e.g. lost {self.lost[:5]}, duplicated {list(self.duplicated)[:5]}, "
                f"unexpected {self.unexpected[:5]})"
                if not self.ok
                else ""
            )
        )

    def to_dict(self) -> dict:
        return {**asdict(self), "ok": self.ok}


def check_delivery(expected: Iterable[str], delivered: Iterable[str]) -> DeliveryReport:
    expected_set = set(expected)
    counts = Counter(delivered)
    return DeliveryReport(
        expected=len(expected_set),
        delivered=sum(counts.values()),
        lost=sorted(expected_set - set(counts)),
        duplicated={key: n for key, n in sorted(counts.items()) if n > 1},
        unexpected=sorted(set(counts) - expected_set),
    )


def ids_in_directory(directory: str, extract: Callable[[bytes], str] | None = None) -> list[str]:
    """The id each delivered file carries (by default its first whitespace-separated
    word), one entry per file; temporary files of an unfinished write are skipped."""
    extract = extract or (lambda data: data.split(None, 1)[0].decode() if data.strip() else "")
    found = []
    if not os.path.isdir(directory):
        return found
    for name in sorted(os.listdir(directory)):
        if name.startswith("."):
            continue
        with open(os.path.join(directory, name), "rb") as handle:
            found.append(extract(handle.read()))
    return found


@dataclass
class RepositoryReport:
    live_flowfiles: int = 0
    swapped_flowfiles: int = 0
    swap_files: int = 0
    swap_files_unrecorded: list = field(default_factory=list)
    missing_content: list = field(default_factory=list)  # claims whose bytes are not there
    orphaned_resources: list = field(default_factory=list)  # unreferenced, not archived
    provenance_events: int = 0
    provenance_sent: dict = field(default_factory=dict)  # id -> SEND events
    provenance_lost: list = field(default_factory=list)  # delivered, no SEND event
    provenance_duplicated: dict = field(default_factory=dict)  # id -> SEND events (> 1)
    provenance_unexpected: list = field(default_factory=list)  # SENDs of FlowFiles not delivered
    provenance_created_twice: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (
            self.swap_files_unrecorded
            or self.missing_content
            or self.orphaned_resources
            or self.provenance_lost
            or self.provenance_duplicated
            or self.provenance_unexpected
            or self.provenance_created_twice
        )

    def summary(self) -> str:
        return (
            f"WAL: {self.live_flowfiles} live, {self.swapped_flowfiles} swapped in {self.swap_files} files "
            f"({len(self.swap_files_unrecorded)} unrecorded); content: {len(self.missing_content)} missing, "
            f"{len(self.orphaned_resources)} orphaned; provenance: {self.provenance_events} events, "
            f"{len(self.provenance_lost)} sends lost, {len(self.provenance_duplicated)} duplicated, "
            f"{len(self.provenance_unexpected)} unexpected, {len(self.provenance_created_twice)} created twice"
        )


def claimant_mismatches(content: ContentStore, claims: Iterable) -> dict:
    """{resource: (expected, actual)} where the repository's claimant count differs from
    the number of `claims` (ContentClaims) in that resource."""
    expected = Counter(claim.resource for claim in claims if claim is not None)
    return {
        resource: (count, content.claimant_count(resource))
        for resource, count in expected.items()
        if content.claimant_count(resource) != count
    }


def check_node_repositories(
    data_dir: str, *, delivered_uuids: Iterable[str] = (), id_attribute: str | None = None, shard: str = "local"
) -> RepositoryReport:
    """Check a stopped standalone node's repositories against each other and against
    what was delivered (`delivered_uuids`: the FlowFile uuids a PutFile directory holds)."""
    from repositories.content import open_filesystem_content_repository
    from repositories.flowfile import WriteAheadLog
    from repositories.provenance import EventType, ProvenanceRepository
    from repositories.storage import LocalStorage
    from repositories.swap import SwapStore

    report = RepositoryReport()
    storage = LocalStorage()
    shard_dir = os.path.join(data_dir, "shards", shard)
    wal = WriteAheadLog(storage, os.path.join(shard_dir, "wal"), checkpoint_interval=None)
    records = wal.recover()
    swap_files = dict(wal.swap_files)
    wal.close()
    claims = []
    for record in records.values():
        if record.queue.startswith("__"):
            continue
        report.live_flowfiles += 1
        if record.content_claim is not None:
            claims.append(record.content_claim)
    store = SwapStore(storage, os.path.join(shard_dir, "swap"))
    for location in store.locations():
        if location not in swap_files:
            report.swap_files_unrecorded.append(location)
    ends = {}
    for location in swap_files:
        summary = store.read_summary(location)
        report.swap_files += 1
        report.swapped_flowfiles += summary.count
        for resource, (_count, end) in summary.resources.items():
            ends[resource] = max(ends.get(resource, 0), end)
    for claim in claims:
        ends[claim.resource] = max(ends.get(claim.resource, 0), claim.offset + claim.length)
    content = open_filesystem_content_repository({"local": os.path.join(data_dir, "content")})
    try:
        resources = content.list_resources()
    finally:
        content.close()
    for resource, end in ends.items():
        info = resources.get(resource)
        if info is None or info.archived or info.length < end:
            report.missing_content.append(resource.relative_path)
    for resource, info in resources.items():
        if not info.archived and resource not in ends:
            report.orphaned_resources.append(resource.relative_path)
    delivered = set(delivered_uuids)
    provenance_dir = os.path.join(data_dir, "provenance")
    if os.path.isdir(provenance_dir):
        repository = ProvenanceRepository.open(provenance_dir, read_only=True)
        try:
            sends: Counter = Counter()
            creates: Counter = Counter()
            start = 0
            while True:
                batch = repository.events(start, 50_000)
                if not batch:
                    break
                for event in batch:
                    report.provenance_events += 1
                    if event.event_type is EventType.SEND:
                        key = event.attributes_after.get(id_attribute) if id_attribute else event.flowfile_uuid
                        sends[(key, event.flowfile_uuid)] += 1
                    elif event.event_type is EventType.CREATE:
                        creates[event.flowfile_uuid] += 1
                start = batch[-1].event_id + 1
        finally:
            repository.close()
        by_uuid = Counter()
        for (key, uuid), n in sends.items():
            by_uuid[uuid] += n
            report.provenance_sent[key] = report.provenance_sent.get(key, 0) + n
        report.provenance_lost = sorted(delivered - set(by_uuid))
        report.provenance_duplicated = {k: n for k, n in report.provenance_sent.items() if n > 1}
        report.provenance_unexpected = sorted(set(by_uuid) - delivered) if delivered else []
        report.provenance_created_twice = sorted(u for u, n in creates.items() if n > 1)
    return report


def event_identity(event) -> tuple:
    """What makes two stored provenance events the same event: an adopter re-registers
    the outbox events of a dead owner (which may have stored them already) with the
    same time, type, FlowFile, component and details; a second delivery has its own time."""
    return (
        event.event_type.value,
        event.flowfile_uuid,
        event.component_id,
        event.relationship,
        event.transit_uri,
        event.event_time_ms,
    )


def cluster_provenance(directories: Iterable[str]) -> list:
    """Every provenance event of a cluster's stopped nodes (their local repositories,
    recovered first: a killed node's last journals are merged), with the copies of
    one event collapsed by `event_identity`."""
    from repositories.provenance import ProvenanceRepository

    seen: dict[tuple, object] = {}
    for directory in directories:
        if not os.path.isdir(directory):
            continue
        repository = ProvenanceRepository.open(directory, read_only=False)
        try:
            start = 0
            while batch := repository.events(start, 50_000, skip_damaged=True):
                for event in batch:
                    seen.setdefault(event_identity(event), event)
                start = batch[-1].event_id + 1
        finally:
            repository.close()
    return list(seen.values())


@dataclass
class ClusterReport:
    """Exactly once across a cluster: sinks, provenance and the shards' WALs."""

    delivery: DeliveryReport
    created: int = 0
    created_twice: list = field(default_factory=list)
    sends_missing: list = field(default_factory=list)  # delivered, no SEND anywhere
    sends_duplicated: dict = field(default_factory=dict)  # uuid -> SEND events (> 1)
    wrong_content: list = field(default_factory=list)  # sink file whose content names another id
    live_flowfiles: dict = field(default_factory=dict)  # shard -> FlowFiles its WAL still holds

    @property
    def ok(self) -> bool:
        return self.delivery.ok and not (
            self.created_twice
            or self.sends_missing
            or self.sends_duplicated
            or self.wrong_content
            or any(self.live_flowfiles.values())
        )

    def summary(self) -> str:
        return (
            f"{self.delivery.summary()}; provenance: {self.created} created "
            f"({len(self.created_twice)} twice), {len(self.sends_missing)} sends missing, "
            f"{len(self.sends_duplicated)} duplicated; {len(self.wrong_content)} files with the wrong content; "
            f"FlowFiles left in WALs: {sum(self.live_flowfiles.values())}"
        )


@dataclass(frozen=True)
class StoredEvent:
    """A provenance event as `provenance_dump` prints it: `event_identity`'s fields."""

    event_type: object  # repositories.provenance.EventType
    flowfile_uuid: str
    component_id: str
    relationship: str | None
    transit_uri: str | None
    event_time_ms: int

    @classmethod
    def parse(cls, line: str) -> StoredEvent:
        from repositories.provenance import EventType

        kind, *rest = json.loads(line)
        return cls(EventType(kind), *rest)


def check_cluster(
    out_directories: Iterable[str],
    provenance_directories: Iterable[str],
    *,
    source_component: str,
    wal_counts: dict | None = None,
    events: list | None = None,
) -> ClusterReport:
    """Every FlowFile `source_component` created (CREATE events, cluster-wide) reached
    the sinks exactly once: exactly one sink file's content starts with its uuid (the
    source wrote it there), and that file is named by the same uuid (PutFile names
    files by FlowFile identity, so a retry lands on the same file and a FlowFile that
    got a second identity shows up twice); it was sent exactly once (SEND events); and
    no shard's WAL still holds a FlowFile (`wal_counts`: shard -> live FlowFiles,
    measured by the caller). Nodes may share one sink directory, as they would share
    a real destination, or have one each. `events`, if given, are the cluster's events
    read elsewhere (`StoredEvent`s, copies of one event collapsed), instead of those
    in `provenance_directories`."""
    from repositories.provenance import EventType

    if events is None:
        events = cluster_provenance(provenance_directories)
    creates = Counter(
        e.flowfile_uuid for e in events if e.event_type is EventType.CREATE and e.component_id == source_component
    )
    sends = Counter(e.flowfile_uuid for e in events if e.event_type is EventType.SEND)
    delivered, wrong = [], []
    for directory in out_directories:
        if not os.path.isdir(directory):
            continue
        for name in sorted(os.listdir(directory)):
            if name.startswith("."):
                continue
            with open(os.path.join(directory, name), "rb") as handle:
                first = handle.read(64).split(None, 1)
            carried = first[0].decode(errors="replace") if first else ""
            delivered.append(carried)
            if carried != name:
                wrong.append(name)
    return ClusterReport(
        delivery=check_delivery(creates, delivered),
        created=len(creates),
        created_twice=sorted(u for u, n in creates.items() if n > 1),
        sends_missing=sorted(set(delivered) - set(sends) - set(wrong)),
        sends_duplicated={u: n for u, n in sorted(sends.items()) if n > 1},
        wrong_content=wrong,
        live_flowfiles=dict(wal_counts or {}),
    )
