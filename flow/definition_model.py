"""The flow definition, validated: `FlowDefinition` and the processors, connections,
ports and scheduling it holds, as frozen data classes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .queue import DEFAULT_BACK_PRESSURE_COUNT, DEFAULT_BACK_PRESSURE_SIZE
from .swap_policy import DEFAULT_SWAP_BATCH, DEFAULT_SWAP_THRESHOLD

PORT_KINDS = ("input", "output", "failure")


@dataclass(frozen=True)
class SchedulingDefinition:
    run_schedule_s: float = 0.0
    concurrent_tasks: int = 1
    yield_s: float = 1.0
    penalty_s: float = 30.0


@dataclass(frozen=True)
class ProcessorDefinition:
    id: str
    type: str
    processor_class: type
    properties: dict
    dynamic: dict
    scheduling: SchedulingDefinition
    auto_terminate: tuple[str, ...]
    relationships: tuple[str, ...]

    def create(self):
        return self.processor_class(self.id)


@dataclass(frozen=True)
class ConnectionDefinition:
    id: str
    source: str
    relationships: tuple[str, ...]
    destination: str
    prioritizers: tuple[str, ...] = ()
    back_pressure_count: int = DEFAULT_BACK_PRESSURE_COUNT
    back_pressure_size: int = DEFAULT_BACK_PRESSURE_SIZE
    swap_threshold: int = DEFAULT_SWAP_THRESHOLD
    swap_batch: int = DEFAULT_SWAP_BATCH
    expiration_ms: int = 0


@dataclass(frozen=True)
class PortDefinition:
    id: str
    kind: str


@dataclass(frozen=True)
class FlowDefinition:
    name: str
    processors: dict
    connections: tuple
    ports: dict
    parameters: dict = field(default_factory=dict)
    source: str = "<flow>"
    # The processor types it was parsed against: the stateless flows it embeds are parsed against them too.
    registry: Mapping[str, type] | None = field(default=None, compare=False, repr=False)

    def incoming(self, component_id: str) -> list[ConnectionDefinition]:
        return [c for c in self.connections if c.destination == component_id]

    def outgoing(self, component_id: str) -> list[ConnectionDefinition]:
        return [c for c in self.connections if c.source == component_id]

    def ports_of(self, kind: str) -> list[str]:
        return [p.id for p in self.ports.values() if p.kind == kind]
