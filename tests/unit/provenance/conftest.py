from __future__ import annotations

import itertools
import uuid as uuidlib

import pytest

from repositories.claims import ContentClaim, ResourceClaim
from repositories.provenance import EventType, ProvenanceConfig, ProvenanceEvent, ProvenanceRepository
from repositories.provenance.policies import RolloverPolicy


class FakeClock:
    """Seconds since the epoch, moved only by the test."""

    def __init__(self, start: float = 1_700_000_000.0):
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


_counter = itertools.count()


def claim(n: int = 0) -> ContentClaim:
    return ContentClaim(ResourceClaim("default", n % 1024, f"claim-{n}"), n * 10, 10)


def event(kind: EventType | str = EventType.CREATE, uuid: str | None = None, **fields) -> ProvenanceEvent:
    kind = EventType(kind)
    uuid = uuid or str(uuidlib.uuid4())
    n = next(_counter)
    defaults = {
        "component_id": f"comp-{n % 3}",
        "component_type": "Generate",
        "attributes_after": {"filename": f"file-{n}.txt", "path": "/in"},
    }
    if kind in (EventType.SEND, EventType.RECEIVE):
        defaults["transit_uri"] = "https://peer.example/x"
    if kind is EventType.ROUTE:
        defaults["relationship"] = "success"
    if kind in (EventType.FORK, EventType.CLONE):
        defaults["child_uuids"] = (str(uuidlib.uuid4()),)
    if kind is EventType.JOIN:
        defaults["parent_uuids"] = (str(uuidlib.uuid4()),)
    defaults.update(fields)
    return ProvenanceEvent(kind, uuid, **defaults)


def make_config(tmp_path, **overrides) -> ProvenanceConfig:
    base = dict(
        containers=(str(tmp_path / "c0"), str(tmp_path / "c1")),
        journals_per_container=2,
        rollover=RolloverPolicy(max_age_s=30.0, max_bytes=None),
        rollover_check_interval_s=None,
        age_off_interval_s=None,
        max_age_s=None,
        max_bytes=None,
        index_heap_bytes=15_000_000,
        index_threads=1,
        compression_threads=1,
    )
    base.update(overrides)
    return ProvenanceConfig(**base)


@pytest.fixture
def open_repo(tmp_path, clock):
    opened: list[ProvenanceRepository] = []

    def _open(**overrides) -> ProvenanceRepository:
        hooks = overrides.pop("hooks", None)
        repository = ProvenanceRepository(make_config(tmp_path, **overrides), clock=clock, hooks=hooks)
        opened.append(repository)
        return repository

    yield _open
    for repository in opened:
        try:
            repository.close(timeout=30)
        except Exception:
            pass
