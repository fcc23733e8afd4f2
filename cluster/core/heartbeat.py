"""The heartbeat payload a member keeps in its ephemeral znode `nodes/<incarnation>`.

It says how busy the node is, so the leader can give a dead node's shards to the
most capable survivor (`planner.score`). JSON, one object:

    {"version": 1, "node": "n1", "incarnation": "n1-17", "epoch": 17, "sequence": 42,
     "sent_at": 1700000000.5, "admin": "127.0.0.1:8081", "liveness": "127.0.0.1:40123",
     "queues": {"n1-17/q1": {"count": 10, "bytes": 2048}}, "active_threads": 3,
     "max_threads": 8, "cpu": 0.35, "free_disk": 123456789, "capacity_weight": 1.0,
     "owned_shards": ["n1-17"]}

`queues` is keyed `<shard>/<queue>`, one entry per queue of every shard the node runs.
`cpu` is the busy fraction of the machine, 0..1. `capacity_weight` is the operator's
relative size of the node (a node twice as big says 2.0). `liveness` is the host:port
of the member's liveness port (`cluster.core.liveness`), empty when it has none; a
beat without it (an earlier release's) reads as empty.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

FORMAT_VERSION = 1
DEFAULT_CAPACITY_WEIGHT = 1.0  # a node's relative size; twice the weight, twice the share


@dataclass(frozen=True)
class QueueLoad:
    count: int = 0
    bytes: int = 0


@dataclass(frozen=True)
class Heartbeat:
    node: str
    incarnation: str
    epoch: int
    sequence: int = 0
    sent_at: float = 0.0
    admin: str = ""
    liveness: str = ""
    queues: dict[str, QueueLoad] = field(default_factory=dict)
    active_threads: int = 0
    max_threads: int = 1
    cpu: float = 0.0
    free_disk: int = 0
    capacity_weight: float = DEFAULT_CAPACITY_WEIGHT
    owned_shards: tuple[str, ...] = ()

    @property
    def queued_count(self) -> int:
        return sum(load.count for load in self.queues.values())

    @property
    def queued_bytes(self) -> int:
        return sum(load.bytes for load in self.queues.values())

    def to_json(self) -> bytes:
        body = asdict(self)
        body["owned_shards"] = list(self.owned_shards)
        body["version"] = FORMAT_VERSION
        return json.dumps(body, sort_keys=True).encode()

    @classmethod
    def from_json(cls, data: bytes) -> Heartbeat:
        body = json.loads(data.decode())
        version = body.pop("version", FORMAT_VERSION)
        if version > FORMAT_VERSION:
            raise ValueError(f"heartbeat format version {version} is newer than this release's {FORMAT_VERSION}")
        body["queues"] = {name: QueueLoad(**load) for name, load in body.get("queues", {}).items()}
        body["owned_shards"] = tuple(body.get("owned_shards", ()))
        known = cls.__dataclass_fields__
        return cls(**{key: value for key, value in body.items() if key in known})

    def next(self, *, sent_at: float, **changes: Any) -> Heartbeat:
        """The following beat: same identity, sequence + 1, new figures."""
        from dataclasses import replace

        return replace(self, sequence=self.sequence + 1, sent_at=sent_at, **changes)
